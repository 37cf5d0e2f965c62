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
			x := av[b*m*n:][:m*n]
			for i := range m { // w is a transposed
				for j := range n {
					w[j*m+i] = float64(x[i*n+j])
				}
			}
			householderQR(w, hv, q, m, n)
			for i := range m {
				for j := range k {
					qv[b*m*k+i*k+j] = T(q[j*m+i])
				}
			}
			for i := range k {
				for j := range n {
					rv[b*k*n+i*n+j] = T(w[j*m+i])
				}
			}
		}
	})
}

// householderQR factors a (m×n), given transposed (w, n×m: its rows a's
// columns), in place: reflection j, I - 2·v·vᵀ with v (row j of h, k×m,
// zero before element j) the unit vector along x - α·e₁ for x = a[j:, j]
// and α = -sign(x₀)·‖x‖, turns column j into α·e₁; R is then a's upper
// rows, and q (k×m, Q transposed) the reflections applied to I's first k
// columns from the last. Rows of R whose diagonal is negative are
// negated, with Q's columns. Sums over a's rows ascending; ‖x‖ scaled by
// its largest magnitude.
func householderQR(w, h, q []float64, m, n int) {
	k := min(m, n)
	clear(h)
	for j := range k {
		col, v := w[j*m:][:m], h[j*m:][:m]
		scale := 0.0
		for _, x := range col[j:] {
			scale = max(scale, math.Abs(x))
		}
		if scale == 0 || scale != scale { // a zero column: no reflection
			continue
		}
		sum := 0.0
		for _, x := range col[j:] {
			x /= scale
			sum += x * x
		}
		norm := math.Sqrt(sum) * scale
		alpha := -norm
		if col[j] < 0 {
			alpha = norm
		}
		// v = x - α·e₁, then scaled to unit length.
		v[j] = col[j] - alpha
		copy(v[j+1:], col[j+1:])
		vs := 0.0
		for _, x := range v[j:] {
			x /= norm
			vs += x * x
		}
		vn := math.Sqrt(vs) * norm
		for i := j; i < m; i++ {
			v[i] /= vn
		}
		for c := j; c < n; c++ {
			reflect(v[j:], w[c*m+j:][:m-j])
		}
		clear(col[j+1:]) // exactly 0 below the diagonal
	}
	setIdentity(q, k, m)
	for j := k - 1; j >= 0; j-- {
		for c := j; c < k; c++ {
			reflect(h[j*m+j:][:m-j], q[c*m+j:][:m-j])
		}
	}
	for j := range k {
		if w[j*m+j] < 0 {
			for c := j; c < n; c++ {
				w[c*m+j] = -w[c*m+j]
			}
			for i, x := range q[j*m:][:m] {
				q[j*m+i] = -x
			}
		}
	}
}

// reflect applies a reflection's unit vector v to the column x (of v's
// length): x -= v·(2·vᵀ·x), the sum in ascending order.
func reflect(v, x []float64) {
	x = x[:len(v)]
	dot := 0.0
	for i, vi := range v {
		dot += vi * x[i]
	}
	subScaled(x, v, 2*dot)
}
