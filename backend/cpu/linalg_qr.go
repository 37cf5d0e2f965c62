package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// QR's kernel (ops/linalg_qr.go): Householder reflections in float64,
// the GPU's linalg kernel taking the same steps.

func init() {
	kernels{f32: qrKernel[float32], f64: qrKernel[float64]}.register("QR")
}

func qrKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Inputs[0]
	m, n := a.Dim(-2), a.Dim(-1)
	k := min(m, n)
	if outs[0].NumElements()+outs[1].NumElements() == 0 {
		return
	}
	av, qv, rv := data[T](a), data[T](outs[0]), data[T](outs[1])
	batch := a.Shape()[:a.Rank()-2].NumElements()
	deviceOf(c).Parallel(batch, float64(2*m*n*k)+1, func(lo, hi int) {
		w, hv, q := make([]float64, m*n), make([]float64, m*k), make([]float64, m*k)
		for b := lo; b < hi; b++ {
			for i, x := range av[b*m*n:][:m*n] {
				w[i] = float64(x)
			}
			householderQR(w, hv, q, m, n)
			for i := range m {
				for j := range k {
					qv[b*m*k+i*k+j] = T(q[i*k+j])
				}
			}
			for i := range k {
				for j := range n {
					rv[b*k*n+i*n+j] = T(w[i*n+j])
				}
			}
		}
	})
}

// householderQR factors w (m×n, row-major) in place: reflection j, I -
// 2·v·vᵀ with v (column j of h, m×k, zero above row j) the unit vector
// along x - α·e₁ for x = w[j:, j] and α = -sign(x₀)·‖x‖, turns column j
// into α·e₁; R is then w's upper rows, and q (m×k) the reflections
// applied to I's first k columns from the last. Rows of R whose diagonal
// is negative are negated, with q's columns. Sums over rows ascending;
// ‖x‖ scaled by its largest magnitude.
func householderQR(w, h, q []float64, m, n int) {
	k := min(m, n)
	clear(h)
	for j := range k {
		scale := 0.0
		for i := j; i < m; i++ {
			scale = max(scale, math.Abs(w[i*n+j]))
		}
		if scale == 0 || scale != scale { // a zero column: no reflection
			continue
		}
		sum := 0.0
		for i := j; i < m; i++ {
			x := w[i*n+j] / scale
			sum += x * x
		}
		norm := math.Sqrt(sum) * scale
		alpha := -norm
		if w[j*n+j] < 0 {
			alpha = norm
		}
		// v = x - α·e₁, then scaled to unit length.
		h[j*k+j] = w[j*n+j] - alpha
		for i := j + 1; i < m; i++ {
			h[i*k+j] = w[i*n+j]
		}
		vs := 0.0
		for i := j; i < m; i++ {
			x := h[i*k+j] / norm
			vs += x * x
		}
		vn := math.Sqrt(vs) * norm
		for i := j; i < m; i++ {
			h[i*k+j] /= vn
		}
		for c := j; c < n; c++ {
			reflect(h, w, m, k, n, j, c)
		}
		for i := j + 1; i < m; i++ { // exactly 0 below the diagonal
			w[i*n+j] = 0
		}
	}
	setIdentity(q, m, k)
	for j := k - 1; j >= 0; j-- {
		for c := j; c < k; c++ {
			reflect(h, q, m, k, k, j, c)
		}
	}
	for j := range k {
		if w[j*n+j] < 0 {
			for c := j; c < n; c++ {
				w[j*n+c] = -w[j*n+c]
			}
			for i := range m {
				q[i*k+j] = -q[i*k+j]
			}
		}
	}
}

// reflect applies reflection j (column j of h, m×k, rows from j) to
// column c of x (m×stride): x -= v·(2·vᵀ·x), the sum over rows
// ascending.
func reflect(h, x []float64, m, k, stride, j, c int) {
	dot := 0.0
	for i := j; i < m; i++ {
		dot += h[i*k+j] * x[i*stride+c]
	}
	dot *= 2
	for i := j; i < m; i++ {
		x[i*stride+c] -= h[i*k+j] * dot
	}
}
