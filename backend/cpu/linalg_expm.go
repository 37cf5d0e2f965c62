package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/tensor"
)

// MatrixExp's kernel (ops/linalg_expm.go): scaling and squaring with a
// Padé approximant (mathx.ExpmScaling) in float64, the GPU's linalg
// kernel taking the same steps: products summed over k ascending, each
// polynomial's terms added from the highest power down, the identity's
// term last.

func init() {
	kernels{f32: expmKernel[float32], f64: expmKernel[float64]}.register("MatrixExp")
}

func expmKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Inputs[0]
	n := a.Dim(-1)
	if outs[0].NumElements() == 0 {
		return
	}
	av, ov := data[T](a), data[T](outs[0])
	deviceOf(c).Parallel(len(av)/(n*n), float64(n*n*n)*14+1, func(lo, hi int) {
		w := newExpmWork(n)
		for b := lo; b < hi; b++ {
			for i, v := range av[b*n*n:][:n*n] {
				w.a[i] = float64(v)
			}
			for i, v := range w.exp() {
				ov[b*n*n+i] = T(v)
			}
		}
	})
}

// expmWork holds one matrix's buffers, n×n float64 each.
type expmWork struct {
	n                                    int
	a, a2, a4, a6, a8, odd, even, u, tmp []float64
	piv                                  []int32
}

func newExpmWork(n int) *expmWork {
	m := func() []float64 { return make([]float64, n*n) }
	return &expmWork{n: n, a: m(), a2: m(), a4: m(), a6: m(), a8: m(), odd: m(), even: m(), u: m(), tmp: m(), piv: make([]int32, n)}
}

// exp returns exp(w.a) (NaN throughout where a holds ±∞ or NaN), in one
// of w's buffers: ‖a‖₁ (each column's sum, rows ascending) chooses the
// degree m and the squarings s (mathx.ExpmScaling); a is scaled by 2⁻ˢ;
// u = a·(p_m's odd terms over a), v = its even terms; x solves (v - u)·x
// = v + u by LU; x is squared s times.
func (w *expmWork) exp() []float64 {
	n, a := w.n, w.a
	norm := 0.0
	for j := range n {
		sum := 0.0
		for i := range n {
			sum += math.Abs(a[i*n+j])
		}
		norm = max(norm, sum) // NaN sticks
	}
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		for i := range w.u {
			w.u[i] = math.NaN()
		}
		return w.u
	}
	m, s := mathx.ExpmScaling(norm)
	down := math.Ldexp(1, -s)
	for i := range a {
		a[i] *= down
	}
	c := mathx.ExpmPade(m)
	matMul(w.a2, a, a, n)
	powers := [][]float64{w.a2, w.a4, w.a6, w.a8} // a^(2j) for j = 1...
	if m >= 5 {
		matMul(w.a4, w.a2, w.a2, n)
	}
	if m >= 7 {
		matMul(w.a6, w.a4, w.a2, n)
	}
	if m == 9 {
		matMul(w.a8, w.a4, w.a4, n)
	}
	if m < 13 {
		top := (m - 1) / 2
		for _, dst := range []struct {
			x     []float64
			first int
		}{{w.odd, 1}, {w.even, 0}} {
			coef := make([]float64, top)
			for j := range coef { // from the highest power down
				coef[j] = c[2*(top-j)+dst.first]
			}
			combine(dst.x, true, coef, reversed(powers[:top]), c[dst.first], n)
		}
	} else {
		// u = a·(a⁶·(c₁₃a⁶ + c₁₁a⁴ + c₉a²) + c₇a⁶ + c₅a⁴ + c₃a² + c₁I),
		// v = a⁶·(c₁₂a⁶ + c₁₀a⁴ + c₈a²) + c₆a⁶ + c₄a⁴ + c₂a² + c₀I.
		high := [][]float64{w.a6, w.a4, w.a2}
		for _, dst := range []struct {
			x     []float64
			first int
		}{{w.odd, 1}, {w.even, 0}} {
			f := dst.first
			combine(w.tmp, true, []float64{c[f+12], c[f+10], c[f+8]}, high, 0, n)
			matMul(dst.x, w.a6, w.tmp, n)
			combine(dst.x, false, []float64{c[f+6], c[f+4], c[f+2]}, high, c[f], n)
		}
	}
	matMul(w.u, a, w.odd, n)
	// q = v - u into tmp, p = v + u into even: x = q⁻¹·p.
	for i, v := range w.even {
		w.tmp[i] = v - w.u[i]
		w.even[i] = v + w.u[i]
	}
	luFactor(w.tmp, w.tmp, w.piv, n)
	luSolve(w.tmp, w.piv, w.even, n, n)
	x, t := w.even, w.u
	for range s {
		matMul(t, x, x, n)
		x, t = t, x
	}
	return x
}

// reversed is xs in the opposite order (a new slice).
func reversed(xs [][]float64) [][]float64 {
	out := make([][]float64, len(xs))
	for i, x := range xs {
		out[len(xs)-1-i] = x
	}
	return out
}

// combine sets (set) or adds to dst Σ coef[i]·mats[i], each element's
// terms added in order, then id on the diagonal (where id is not 0).
func combine(dst []float64, set bool, coef []float64, mats [][]float64, id float64, n int) {
	for e := range dst {
		acc := coef[0] * mats[0][e] // set: the first term as it is (-0 kept)
		if !set {
			acc += dst[e]
		}
		for i, m := range mats[1:] {
			acc += coef[i+1] * m[e]
		}
		if id != 0 && e/n == e%n {
			acc += id
		}
		dst[e] = acc
	}
}

// matMul sets dst (n×n) to x·y, each element's sum over k ascending from
// the first product, every product rounded before it is added: blocks of
// 4×8 elements by AVX2 (dmulblock), the rest element by element.
func matMul(dst, x, y []float64, n int) {
	rows, cols := 0, 0
	if haveVecKernels && n >= 8 {
		rows, cols = n&^3, n&^7
		for i := 0; i < rows; i += 4 {
			for j := 0; j < cols; j += 8 {
				dmulblock(&dst[i*n+j], &x[i*n], &y[j], n, n, n, n)
			}
		}
	}
	for i := range n {
		from := 0
		if i < rows {
			from = cols
		}
		xi := x[i*n:][:n]
		for j := from; j < n; j++ {
			sum := 0.0
			for k, v := range xi {
				sum += v * y[k*n+j]
			}
			dst[i*n+j] = sum
		}
	}
}
