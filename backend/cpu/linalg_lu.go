package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of ops/linalg_lu.go: each matrix factored by LU with partial
// pivoting into float64 (luFactor), then solved, or its pivots
// multiplied; the GPU's linalg kernels take the same steps.

func init() {
	kernels{f32: solveKernel[float32], f64: solveKernel[float64]}.register("Solve")
	kernels{f32: detKernel[float32], f64: detKernel[float64]}.register("Det")
	kernels{f32: slogdetKernel[float32], f64: slogdetKernel[float64]}.register("Slogdet")
}

// luFactor factors the n×n matrix a (row-major) into w, row-major float64
// (L below the diagonal, its unit diagonal implied, and U on and above),
// piv[j] the row exchanged with j at step j: the largest |w[i][j]| of i
// ≥ j its pivot (the first of equals), and where that is 0 the column
// left as it is (LAPACK's getrf), so that a singular matrix's determinant
// is 0. It returns the exchanges' sign.
func luFactor[T float32 | float64](a []T, w []float64, piv []int32, n int) float64 {
	for i, v := range a {
		w[i] = float64(v)
	}
	sign := 1.0
	for j := range n {
		p, best := j, math.Abs(w[j*n+j])
		for i := j + 1; i < n; i++ {
			if v := math.Abs(w[i*n+j]); v > best {
				p, best = i, v
			}
		}
		piv[j] = int32(p)
		if p != j {
			for k := range n {
				w[j*n+k], w[p*n+k] = w[p*n+k], w[j*n+k]
			}
			sign = -sign
		}
		u := w[j*n+j]
		if u == 0 {
			continue
		}
		for i := j + 1; i < n; i++ {
			l := w[i*n+j] / u
			w[i*n+j] = l
			for k := j + 1; k < n; k++ {
				w[i*n+k] -= l * w[j*n+k]
			}
		}
	}
	return sign
}

// luSolve overwrites y (a right-hand column, float64) with the solution:
// the exchanges of piv in order, then L's forward and U's backward
// substitution, each sum over the columns solved before in ascending
// order.
func luSolve(w []float64, piv []int32, y []float64, n int) {
	for j, p := range piv {
		y[j], y[p] = y[p], y[j]
	}
	for i := range n {
		for k := range i {
			y[i] -= w[i*n+k] * y[k]
		}
	}
	for i := n - 1; i >= 0; i-- {
		for k := i + 1; k < n; k++ {
			y[i] -= w[i*n+k] * y[k]
		}
		y[i] /= w[i*n+i]
	}
}

// luEach factors each matrix of a [..., n, n] in parallel, calling fn with
// the batch index, the factor, its exchanges and their sign.
func luEach[T float32 | float64](c *eager.Call, a *tensor.Tensor, cost float64, fn func(b int, w []float64, piv []int32, sign float64)) {
	n := a.Dim(-1)
	av := data[T](a)
	batch := a.NumElements() / max(n*n, 1)
	if n == 0 {
		batch = a.Shape()[:a.Rank()-2].NumElements()
	}
	deviceOf(c).Parallel(batch, float64(n*n*n)*2/3+cost+1, func(lo, hi int) {
		w, piv := make([]float64, n*n), make([]int32, n)
		for b := lo; b < hi; b++ {
			fn(b, w, piv, luFactor(av[b*n*n:][:n*n], w, piv, n))
		}
	})
}

func solveKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a, b := c.Inputs[0], c.Inputs[1]
	n, m := b.Dim(-2), b.Dim(-1)
	if n == 0 || m == 0 {
		return
	}
	bv, xv := data[T](b), data[T](outs[0])
	luEach[T](c, a, float64(n*n*m), func(bi int, w []float64, piv []int32, _ float64) {
		y := make([]float64, n)
		for col := range m {
			for i := range n {
				y[i] = float64(bv[(bi*n+i)*m+col])
			}
			luSolve(w, piv, y, n)
			for i := range n {
				xv[(bi*n+i)*m+col] = T(y[i])
			}
		}
	})
}

func detKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a, ov := c.Inputs[0], data[T](outs[0])
	n := a.Dim(-1)
	luEach[T](c, a, 0, func(b int, w []float64, _ []int32, sign float64) {
		det := sign
		for j := range n {
			det *= w[j*n+j]
		}
		ov[b] = T(det)
	})
}

func slogdetKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a, sv, lv := c.Inputs[0], data[T](outs[0]), data[T](outs[1])
	n := a.Dim(-1)
	luEach[T](c, a, float64(n)*20, func(b int, w []float64, _ []int32, sign float64) {
		logAbs := 0.0
		for j := range n {
			u := w[j*n+j]
			switch {
			case u < 0:
				sign = -sign
			case u == 0:
				sign = 0
			case u != u:
				sign = math.NaN()
			}
			logAbs += mathx.Log(math.Abs(u))
		}
		sv[b], lv[b] = T(sign), T(logAbs)
	})
}
