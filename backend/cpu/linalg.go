package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of ops/linalg.go: Cholesky's factorization and the triangular
// solve, a matrix (or a right-hand column) at a time, batches in
// parallel. Sums accumulate in float64 in a fixed order (the GPU's
// kernels take the same one, so that the devices agree bit for bit), and
// float32 rounds each stored element once.

func init() {
	kernels{f32: choleskyKernel[float32], f64: choleskyKernel[float64]}.register("Cholesky")
	kernels{f32: triangularSolveKernel[float32], f64: triangularSolveKernel[float64]}.register("TriangularSolve")
}

func choleskyKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Inputs[0]
	n := a.Dim(-1)
	if n == 0 {
		return
	}
	av, ov := data[T](a), data[T](outs[0])
	deviceOf(c).Parallel(len(av)/(n*n), float64(n*n*n)/3+1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			choleskyOne(av[b*n*n:][:n*n], ov[b*n*n:][:n*n], n)
		}
	})
}

// choleskyOne factors the n×n matrix a (row-major, its lower triangle
// read) into o: column by column, L[j][j] = √(a[j][j] - Σₖ L[j][k]²) and
// below it L[i][j] = (a[i][j] - Σₖ L[i][k]·L[j][k])/L[j][j], k < j
// ascending. A pivot not above 0 (or NaN) fills o with NaN.
func choleskyOne[T float32 | float64](a, o []T, n int) {
	clear(o)
	for j := range n {
		rj := o[j*n:][:j]
		d := float64(a[j*n+j])
		for _, v := range rj {
			d -= float64(v) * float64(v)
		}
		if !(d > 0) {
			for i := range o {
				o[i] = T(math.NaN())
			}
			return
		}
		ljj := math.Sqrt(d)
		o[j*n+j] = T(ljj)
		for i := j + 1; i < n; i++ {
			ri := o[i*n:][:j]
			s := float64(a[i*n+j])
			for k, v := range ri {
				s -= float64(v) * float64(rj[k])
			}
			o[i*n+j] = T(s / ljj)
		}
	}
}

func triangularSolveKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a, b := c.Inputs[0], c.Inputs[1]
	at := c.Attrs.(opattr.TriangularSolveAttrs)
	n, m := b.Dim(-2), b.Dim(-1)
	if n == 0 || m == 0 {
		return
	}
	av, bv, xv := data[T](a), data[T](b), data[T](outs[0])
	deviceOf(c).Parallel(len(bv)/(n*m), float64(n*n*m)/2+1, func(lo, hi int) {
		acc := make([]float64, m)
		for batch := lo; batch < hi; batch++ {
			solveRows(av[batch*n*n:][:n*n], bv[batch*n*m:][:n*m], xv[batch*n*m:][:n*m], acc, n, m, at)
		}
	})
}

// solveRows solves x (n×m) from b's, all columns a row at a time: with M
// = a (aᵀ where transposed), lower-triangular where a's lower triangle is
// read and untransposed or its upper transposed (rows taken in order),
// else upper (rows from the last), x[i] = (b[i] - Σₖ M[i][k]·x[k])/M[i][i]
// over the rows k solved before, k ascending: each element's operations
// in the GPU's order (a thread per column there), acc holding row i in
// float64.
func solveRows[T float32 | float64](a, b, x []T, acc []float64, n, m int, at opattr.TriangularSolveAttrs) {
	forward := at.Upper == at.Transpose
	for step := range n {
		i, from, to := step, 0, step
		if !forward {
			i = n - 1 - step
			from, to = i+1, n
		}
		for col, v := range b[i*m:][:m] {
			acc[col] = float64(v)
		}
		for k := from; k < to; k++ {
			mik := float64(a[i*n+k])
			if at.Transpose {
				mik = float64(a[k*n+i])
			}
			subScaled(acc, x[k*m:], mik)
		}
		if !at.UnitDiagonal {
			d := float64(a[i*n+i])
			for col := range acc {
				acc[col] /= d
			}
		}
		for col, v := range acc {
			x[i*m+col] = T(v)
		}
	}
}
