package conformance

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// linalgSamples are the samples of the linear algebra ops (ops/linalg*.go):
// Cholesky of symmetric positive-definite batches (m·mᵀ + n·I),
// TriangularSolve in each form, LU, Solve, Det and Slogdet over
// well-conditioned matrices (the diagonal dominant), Eigh, and QR and
// SVD of tall, square and wide matrices; batches broadcast, empty matrices, and
// singular ones.
func linalgSamples(add func(name string, s ...sample)) {
	square := [][]int{{1, 1}, {3, 3}, {2, 4, 4}, {0, 2, 2}, {2, 0, 0}, {5, 5}}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range square {
			n := shape[len(shape)-1]
			add("Cholesky", one(fmt.Sprintf("%v%v", dt, shape), func() { ops.Cholesky(spdOf(dt, shape)) },
				dt == tensor.Float64 && n > 0 && shape[0] > 0, true))
		}
		for _, form := range []ops.TriangularSolveOpts{{}, {Upper: true}, {Transpose: true}, {Upper: true, Transpose: true, UnitDiagonal: true}, {UnitDiagonal: true}} {
			for _, s := range [][2][]int{{{3, 3}, {3, 2}}, {{2, 4, 4}, {2, 4, 1}}, {{4, 4}, {3, 4, 2}}, {{0, 0}, {0, 3}}, {{2, 2}, {2, 0}}} {
				add("TriangularSolve", one(fmt.Sprintf("%v%+v%v%v", dt, form, s[0], s[1]), func() {
					ops.TriangularSolve(triangularOf(dt, s[0]...), of(dt, -1, 1, s[1]...), form)
				}, dt == tensor.Float64 && s[0][0] > 0 && s[1][len(s[1])-1] > 0, true))
			}
		}
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		grad := dt == tensor.Float64
		for _, shape := range square {
			g := grad && shape[len(shape)-1] > 0 && shape[0] > 0
			add("LU", one(fmt.Sprintf("%v%v", dt, shape), func() { ops.LU(triangularOf(dt, shape...)) }, g, true))
			add("Det", one(fmt.Sprintf("%v%v", dt, shape), func() { ops.Det(triangularOf(dt, shape...)) }, g, true))
			add("Slogdet", one(fmt.Sprintf("%v%v", dt, shape), func() { ops.Slogdet(triangularOf(dt, shape...)) }, g, true))
		}
		for _, s := range [][2][]int{{{3, 3}, {3, 2}}, {{2, 4, 4}, {2, 4, 1}}, {{4, 4}, {3, 4, 2}}, {{0, 0}, {0, 3}}, {{2, 2}, {2, 0}}} {
			add("Solve", one(fmt.Sprintf("%v%v%v", dt, s[0], s[1]), func() { ops.Solve(triangularOf(dt, s[0]...), of(dt, -1, 1, s[1]...)) },
				grad && s[0][0] > 0 && s[1][len(s[1])-1] > 0, true))
		}
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range square {
			// Each degree's range of ‖a‖₁ (3: to 0.015, 9: to 2.1), and
			// past 5.37 squarings.
			for _, scale := range []float64{0.002, 0.3, 4} {
				add("MatrixExp", one(fmt.Sprintf("%v%v±%v", dt, shape, scale), func() { ops.MatrixExp(of(dt, -scale, scale, shape...)) },
					dt == tensor.Float64 && shape[len(shape)-1] > 0 && shape[0] > 0, scale < 4))
			}
		}
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range square {
			add("Eigh", one(fmt.Sprintf("%v%v", dt, shape), func() { ops.Eigh(of(dt, -1, 1, shape...)) },
				dt == tensor.Float64 && shape[len(shape)-1] > 0 && shape[0] > 0, true))
		}
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range [][]int{{1, 1}, {4, 3}, {3, 3}, {2, 5, 3}, {3, 5}, {2, 2, 4}, {0, 3}, {3, 0}, {0, 2, 2}} {
			full := shape[len(shape)-1] > 0 && shape[len(shape)-2] > 0 && shape[0] > 0
			add("QR", one(fmt.Sprintf("%v%v", dt, shape), func() { ops.QR(of(dt, -1, 1, shape...)) }, dt == tensor.Float64 && full, true))
			add("SVD", one(fmt.Sprintf("%v%v", dt, shape), func() { ops.SVD(of(dt, -1, 1, shape...)) }, dt == tensor.Float64 && full, true))
		}
	}
	add("MatrixExp", one("a matrix holding ∞", func() { ops.MatrixExp(tensor.FromSlice([]float64{1, math.Inf(1), 0, 1}, 2, 2)) }, false, false))
	add("Eigh", one("a matrix holding NaN", func() { ops.Eigh(tensor.FromSlice([]float64{1, 0, math.NaN(), 1}, 2, 2)) }, false, false))
	add("SVD", one("rank 1", func() { ops.SVD(tensor.FromSlice([]float64{1, 1, 2, 2, 3, 3}, 3, 2)) }, false, false),
		one("holding ∞", func() { ops.SVD(tensor.FromSlice([]float64{1, math.Inf(1), 2, 2}, 2, 2)) }, false, false))
	add("Solve", one("Inverse", func() { ops.Inverse(triangularOf(tensor.Float64, 2, 3, 3)) }, true, true))
	add("Det", one("a singular matrix", func() { ops.Det(tensor.FromSlice([]float64{1, 2, 2, 4}, 2, 2)) }, false, false))
	add("LU", one("rows exchanged", func() { ops.LU(tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6, 7, 8, 10}, 3, 3)) }, true, true),
		one("a singular matrix", func() { ops.LU(tensor.FromSlice([]float64{1, 2, 2, 4}, 2, 2)) }, false, false))
	add("Slogdet", one("a singular matrix", func() { ops.Slogdet(tensor.FromSlice([]float64{1, 2, 2, 4}, 2, 2)) }, false, false))
	add("TriangularSolve", one("CholeskySolve", func() { ops.CholeskySolve(ops.Cholesky(spdOf(tensor.Float64, []int{3, 3})), r(-1, 1, 3, 2)) }, true, true))
}

// spdOf is a batch of symmetric positive-definite matrices m·mᵀ + n·I of
// shape [..., n, n] in dt.
func spdOf(dt tensor.DType, shape []int) T {
	n := shape[len(shape)-1]
	m := r(-1, 1, shape...)
	return ops.Cast(ops.Add(ops.MatMulT(m, m, false, true), ops.Mul(tensor.Eye(tensor.Float64, n), tensor.Scalar(float64(n)))), dt)
}

// triangularOf is a batch of [..., n, n] matrices in dt whose diagonal is
// in [1.5, 3.5) and the rest in [-1, 1): its triangles and itself well
// conditioned.
func triangularOf(dt tensor.DType, shape ...int) T {
	n := shape[len(shape)-1]
	return ops.Cast(ops.Add(r(-1, 1, shape...), ops.Mul(tensor.Eye(tensor.Float64, n), tensor.Scalar(2.5))), dt)
}
