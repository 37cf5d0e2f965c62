package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Eigh's kernel (ops/linalg_eigh.go): cyclic Jacobi rotations in float64,
// the GPU's linalg kernel taking the same steps.

func init() {
	kernels{f32: eighKernel[float32], f64: eighKernel[float64]}.register("Eigh")
}

// JacobiSweeps bounds the sweeps: a symmetric matrix converges in about
// ten (quadratically, once the off-diagonal elements are small).
const jacobiSweeps = 60

func eighKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Inputs[0]
	n := a.Dim(-1)
	if outs[1].NumElements() == 0 {
		return
	}
	av, lv, vv := data[T](a), data[T](outs[0]), data[T](outs[1])
	deviceOf(c).Parallel(len(av)/(n*n), float64(n*n*n)*20+1, func(lo, hi int) {
		w, v := make([]float64, n*n), make([]float64, n*n)
		for b := lo; b < hi; b++ {
			finite := true
			for i := range n {
				for j := range i + 1 { // the lower triangle, mirrored
					w[i*n+j] = float64(av[b*n*n+i*n+j])
					w[j*n+i] = w[i*n+j]
					finite = finite && !math.IsInf(w[i*n+j], 0) && !math.IsNaN(w[i*n+j])
				}
			}
			if !finite {
				for i := range n {
					lv[b*n+i] = T(math.NaN())
				}
				for i := range n * n {
					vv[b*n*n+i] = T(math.NaN())
				}
				continue
			}
			jacobiEigen(w, v, n)
			order := insertionOrder(n, func(i, j int) bool { return w[i*n+i] < w[j*n+j] }) // ascending
			for k, col := range order {
				lv[b*n+k] = T(w[col*n+col])
				vec := v[col*n:][:n] // v holds the eigenvectors as rows
				sign := columnSign(vec, n, 1, 0)
				for i, e := range vec {
					vv[b*n*n+i*n+k] = T(sign * e)
				}
			}
		}
	})
}

// jacobiEigen diagonalizes the symmetric n×n w in place, v (n×n) taking
// the rotations from I, transposed (its rows the eigenvectors): sweeps
// over the pairs p < q in row order, each rotation zeroing w[p][q] (t the
// smaller root of t² + 2θt - 1 = 0, θ = (w[q][q] - w[p][p])/(2w[p][q]); c
// = 1/√(t² + 1), s = t·c), until a sweep rotates nothing: w[p][q] is
// then negligible against both its diagonal elements (adding it
// 2⁻⁵³·100 times changes neither), or already 0. w is finite. A rotation
// turns rows p and q (contiguous), then copies them into columns p and
// q, which w's symmetry makes the same operations as turning the columns.
func jacobiEigen(w, v []float64, n int) {
	setIdentity(v, n, n)
	for range jacobiSweeps {
		rotated := false
		for p := range n {
			for q := p + 1; q < n; q++ {
				apq := w[p*n+q]
				app, aqq := w[p*n+p], w[q*n+q]
				if g := 100 * math.Abs(apq); math.Abs(app)+g == math.Abs(app) && math.Abs(aqq)+g == math.Abs(aqq) {
					w[p*n+q], w[q*n+p] = 0, 0
					continue
				}
				rotated = true
				c, s, t := jacobiRotation((aqq - app) / (2 * apq))
				rp, rq := w[p*n:][:n], w[q*n:][:n]
				turnRows(rp, rq, c, s)
				rp[p], rq[q] = app-t*apq, aqq+t*apq
				rp[q], rq[p] = 0, 0
				for k := range n {
					w[k*n+p], w[k*n+q] = rp[k], rq[k]
				}
				turnRows(v[p*n:][:n], v[q*n:][:n], c, s)
			}
		}
		if !rotated {
			return
		}
	}
}

// jacobiRotation is the rotation (c, s) and its tangent t for θ (the
// smaller root of t² + 2θt - 1 = 0; 1/(2θ) where θ² overflows), c =
// 1/√(t² + 1), s = t·c.
func jacobiRotation(theta float64) (c, s, t float64) {
	t = 1 / (math.Abs(theta) + math.Sqrt(theta*theta+1))
	if math.Abs(theta) > 1e150 {
		t = 0.5 / math.Abs(theta)
	}
	if theta < 0 {
		t = -t
	}
	c = 1 / math.Sqrt(t*t+1)
	return c, t * c, t
}

// setIdentity sets x (rows×cols, row-major) to I's first rows and
// columns: ones on the diagonal, zeros elsewhere.
func setIdentity(x []float64, rows, cols int) {
	clear(x[:rows*cols])
	for i := range min(rows, cols) {
		x[i*cols+i] = 1
	}
}

// turnRows rotates the rows x and y (of one length) by (c, s): x[i], y[i]
// = c·xᵢ - s·yᵢ, s·xᵢ + c·yᵢ, each product rounded before its sum (as the
// GPU's kernels turn columns): AVX2's four lanes from four elements on.
func turnRows(x, y []float64, c, s float64) {
	y = y[:len(x)]
	if haveVecKernels && len(x) >= 4 {
		drot(&x[0], &y[0], c, s, len(x))
		return
	}
	for i, xi := range x {
		yi := y[i]
		x[i] = c*xi - s*yi
		y[i] = s*xi + c*yi
	}
}

// insertionOrder is 0..n-1 ordered by before (an insertion sort: equals
// keep their order).
func insertionOrder(n int, before func(i, j int) bool) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
		for j := i; j > 0 && before(order[j], order[j-1]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}

// columnSign is ±1: the sign that makes column col of x (rows×stride,
// row-major) have its component of largest magnitude (the first of
// equals) positive.
func columnSign(x []float64, rows, stride, col int) float64 {
	best, at := -1.0, 0
	for i := range rows {
		if m := math.Abs(x[i*stride+col]); m > best {
			best, at = m, i
		}
	}
	if x[at*stride+col] < 0 {
		return -1
	}
	return 1
}
