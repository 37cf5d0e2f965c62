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
	kernels{f32: luKernel[float32], f64: luKernel[float64]}.register("LU")
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
		rowJ := w[j*n:][:n]
		if p != j {
			rowP := w[p*n:][:n]
			for k := range rowJ {
				rowJ[k], rowP[k] = rowP[k], rowJ[k]
			}
			sign = -sign
		}
		u := rowJ[j]
		if u == 0 {
			continue
		}
		right := rowJ[j+1:]
		for i := j + 1; i < n; i++ {
			rowI := w[i*n:][:n]
			l := rowI[j] / u
			rowI[j] = l
			subScaled(rowI[j+1:], right, l)
		}
	}
	return sign
}

// luSolve overwrites y (n×m right-hand columns, row-major float64) with
// the solution: the exchanges of piv in order, then L's forward and U's
// backward substitution a row of all columns at a time, each element's
// sum over the rows solved before in ascending order of k.
func luSolve(w []float64, piv []int32, y []float64, n, m int) {
	for j, p := range piv {
		if p := int(p); p != j {
			rj, rp := y[j*m:][:m], y[p*m:][:m]
			for c := range rj {
				rj[c], rp[c] = rp[c], rj[c]
			}
		}
	}
	for i := range n {
		yi := y[i*m:][:m]
		for k, l := range w[i*n:][:i] {
			subScaled(yi, y[k*m:], l)
		}
	}
	for i := n - 1; i >= 0; i-- {
		yi, wi := y[i*m:][:m], w[i*n:][:n]
		for k := i + 1; k < n; k++ {
			subScaled(yi, y[k*m:], wi[k])
		}
		for c := range yi {
			yi[c] /= wi[i]
		}
	}
}

// subScaled is dst[i] -= a·x[i] for i < len(dst), x float64 or float32
// (widened exactly), each product rounded before its difference (as the
// GPU's kernels take them): AVX2's four lanes from eight elements on
// (below, the call costs what the lanes save).
func subScaled[T float32 | float64](dst []float64, x []T, a float64) {
	x = x[:len(dst)]
	if haveVecKernels && len(dst) >= 8 {
		switch x := any(x).(type) {
		case []float64:
			dsubmul(&dst[0], &x[0], a, len(dst))
		case []float32:
			dsubmulf32(&dst[0], &x[0], a, len(dst))
		}
		return
	}
	for i, v := range x {
		dst[i] -= a * float64(v)
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

// luKernel writes LU's outputs: the factors rounded once, the exchanges
// and their permutation (luOutputs).
func luKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	n := c.Inputs[0].Dim(-1)
	luEach[T](c, c.Inputs[0], 0, func(b int, w []float64, piv []int32, _ float64) {
		luOutputs[T](outs, b, n, w, piv)
	})
}

// luOutputs writes matrix b's factorization into outs, LU's outputs (or
// Solve's from its second on): lu in T, the exchanges piv, and perm,
// the identity's rows exchanged by piv in order.
func luOutputs[T float32 | float64](outs []*tensor.Tensor, b, n int, w []float64, piv []int32) {
	lu, pv, perm := data[T](outs[0])[b*n*n:][:n*n], data[int32](outs[1])[b*n:][:n], data[int32](outs[2])[b*n:][:n]
	for i, v := range w {
		lu[i] = T(v)
	}
	copy(pv, piv)
	for i := range perm {
		perm[i] = int32(i)
	}
	for j, p := range piv {
		perm[j], perm[p] = perm[p], perm[j]
	}
}

func solveKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a, b := c.Inputs[0], c.Inputs[1]
	n, m := b.Dim(-2), b.Dim(-1)
	if n == 0 {
		return
	}
	bv, xv := data[T](b), data[T](outs[0])
	luEach[T](c, a, float64(n*n*m), func(bi int, w []float64, piv []int32, _ float64) {
		luOutputs[T](outs[1:], bi, n, w, piv)
		if m == 0 {
			return
		}
		y := make([]float64, n*m)
		for i, v := range bv[bi*n*m:][:n*m] {
			y[i] = float64(v)
		}
		luSolve(w, piv, y, n, m)
		for i, v := range y {
			xv[bi*n*m+i] = T(v)
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
