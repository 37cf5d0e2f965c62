package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPU's Cholesky and triangular solves equal the CPU's bit for bit
// (the same sums in the same order): matrices wider than a block's
// threads (rows taken in turns), a batch holding an indefinite matrix
// (NaN), every solve form, float32 and float64.
func TestLinalgIsTheCPUsOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, n := range []int{1, 5, 130} {
			m := tensor.RandUniform(tensor.NewRNG(uint64(n)), tensor.Float64, -1, 1, 3, n, n)
			a := ops.Add(ops.MatMulT(m, m, false, true), ops.Mul(tensor.Eye(tensor.Float64, n), tensor.Scalar(float64(n))))
			if n > 1 { // the last matrix indefinite: a negative pivot at the end
				dip := make([]float64, 3*n*n)
				dip[3*n*n-1] = 1e6
				a = ops.Sub(a, tensor.FromSlice(dip, 3, n, n))
			}
			a = ops.Cast(a, dt)
			want := ops.Cholesky(a)
			got := onHost(t, ops.Cholesky(onGPU(t, d, a)))
			sameBits(t, "cholesky", dt, n, got, want)
			b := ops.Cast(tensor.RandUniform(tensor.NewRNG(7), tensor.Float64, -1, 1, 3, n, 4), dt)
			l := ops.Add(ops.Tril(want, 0), ops.Triu(a, 1)) // junk above, NaN in the last
			for _, form := range []ops.TriangularSolveOpts{{}, {Upper: true}, {Transpose: true}, {Upper: true, Transpose: true}, {UnitDiagonal: true}, {Upper: true, UnitDiagonal: true, Transpose: true}} {
				want := ops.TriangularSolve(ops.Add(l, ops.Transpose(l, 0, 2, 1)), b, form)
				got := onHost(t, ops.TriangularSolve(onGPU(t, d, ops.Add(l, ops.Transpose(l, 0, 2, 1))), onGPU(t, d, b), form))
				sameBits(t, "trisolve", dt, n, got, want)
			}
		}
	}
}

// sameBits fails t unless got and want hold the same float64 bits (any
// NaN matching any NaN).
func sameBits(t *testing.T, what string, dt tensor.DType, n int, got, want *tensor.Tensor) {
	t.Helper()
	g := tensor.ToSlice[float64](ops.Cast(got, tensor.Float64))
	w := tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
	for i := range w {
		if math.Float64bits(g[i]) != math.Float64bits(w[i]) && !(math.IsNaN(g[i]) && math.IsNaN(w[i])) {
			t.Fatalf("%s %v n=%d: element %d is %v, the CPU's %v", what, dt, n, i, g[i], w[i])
		}
	}
}

// LU, Solve and Det equal the CPU's bit for bit, Slogdet's sign too and its
// logarithm within 2 ulps: matrices wider than a block's threads, with
// exchanges, a singular one (Det 0, Slogdet 0 and -∞, Solve ±∞ and NaN)
// and empty ones.
func TestLUIsTheCPUsOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, n := range []int{0, 1, 6, 131} {
			a := tensor.RandUniform(tensor.NewRNG(uint64(n+1)), tensor.Float64, -1, 1, 3, n, n)
			if n > 1 { // the last matrix singular: two equal rows
				rows := tensor.ToSlice[float64](a)
				copy(rows[2*n*n+n:][:n], rows[2*n*n:][:n])
				a = tensor.FromSlice(rows, 3, n, n)
			}
			a = ops.Cast(a, dt)
			b := ops.Cast(tensor.RandUniform(tensor.NewRNG(3), tensor.Float64, -1, 1, 3, n, 2), dt)
			ga, gb := onGPU(t, d, a), onGPU(t, d, b)
			sameBits(t, "solve", dt, n, onHost(t, ops.Solve(ga, gb)), ops.Solve(a, b))
			lu, piv, perm := ops.LU(a)
			glu, gpiv, gperm := ops.LU(ga)
			sameBits(t, "lu", dt, n, onHost(t, glu), lu)
			sameBits(t, "lu's pivots", dt, n, onHost(t, gpiv), piv)
			sameBits(t, "lu's permutation", dt, n, onHost(t, gperm), perm)
			sameBits(t, "det", dt, n, onHost(t, ops.Det(ga)), ops.Det(a))
			sign, logAbs := ops.Slogdet(a)
			gs, gl := ops.Slogdet(ga)
			sameBits(t, "slogdet's sign", dt, n, onHost(t, gs), sign)
			got, want := tensor.ToSlice[float64](ops.Cast(onHost(t, gl), tensor.Float64)), tensor.ToSlice[float64](ops.Cast(logAbs, tensor.Float64))
			for i := range want {
				if got[i] != want[i] && math.Abs(got[i]-want[i]) > 2*ulpOf(want[i], dt) {
					t.Errorf("slogdet %v n=%d: log|det| %v, the CPU's %v", dt, n, got[i], want[i])
				}
			}
		}
	}
}

// ulpOf is the unit in the last place of v in dt (float32 or float64).
func ulpOf(v float64, dt tensor.DType) float64 {
	if dt == tensor.Float32 {
		f := float32(math.Abs(v))
		return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
	}
	return math.Nextafter(math.Abs(v), math.Inf(1)) - math.Abs(v)
}

// Eigh equals the CPU's bit for bit: matrices wider than a block's
// threads, a batch holding NaN, float32 and float64.
func TestEighIsTheCPUsOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, n := range []int{1, 2, 7, 33} {
			a := tensor.RandUniform(tensor.NewRNG(uint64(n+5)), tensor.Float64, -1, 1, 3, n, n)
			rows := tensor.ToSlice[float64](a)
			rows[2*n*n] = math.NaN() // the last matrix's first element
			a = ops.Cast(tensor.FromSlice(rows, 3, n, n), dt)
			vals, vecs := ops.Eigh(a)
			gv, gw := ops.Eigh(onGPU(t, d, a))
			sameBits(t, "eigenvalues", dt, n, onHost(t, gv), vals)
			sameBits(t, "eigenvectors", dt, n, onHost(t, gw), vecs)
		}
	}
}

// QR equals the CPU's bit for bit: tall, square and wide matrices, more
// columns than a block's threads, a zero column, float32 and float64.
func TestQRIsTheCPUsOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, shape := range [][2]int{{1, 1}, {7, 4}, {5, 5}, {3, 8}, {3, 140}, {140, 2}} {
			a := tensor.RandUniform(tensor.NewRNG(uint64(shape[0]*shape[1])), tensor.Float64, -1, 1, 2, shape[0], shape[1])
			rows := tensor.ToSlice[float64](a)
			for i := range shape[0] { // the second matrix's first column 0
				rows[shape[0]*shape[1]+i*shape[1]] = 0
			}
			a = ops.Cast(tensor.FromSlice(rows, 2, shape[0], shape[1]), dt)
			q, r := ops.QR(a)
			gq, gr := ops.QR(onGPU(t, d, a))
			sameBits(t, "q", dt, shape[0], onHost(t, gq), q)
			sameBits(t, "r", dt, shape[1], onHost(t, gr), r)
		}
	}
}

// SVD equals the CPU's bit for bit: tall, square and wide matrices, a
// rank-deficient one (u's basis completed), one holding ∞, float32 and
// float64.
func TestSVDIsTheCPUsOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, shape := range [][2]int{{1, 1}, {7, 4}, {5, 5}, {3, 8}, {6, 3}} {
			a := tensor.RandUniform(tensor.NewRNG(uint64(shape[0]*shape[1]+3)), tensor.Float64, -1, 1, 3, shape[0], shape[1])
			rows := tensor.ToSlice[float64](a)
			mn := shape[0] * shape[1]
			for i := range mn { // the second matrix of rank 1 (rows alike), the third holding ∞
				rows[mn+i] = rows[mn+i%shape[1]]
			}
			rows[2*mn] = math.Inf(1)
			a = ops.Cast(tensor.FromSlice(rows, 3, shape[0], shape[1]), dt)
			u, s, vt := ops.SVD(a)
			gu, gs, gvt := ops.SVD(onGPU(t, d, a))
			sameBits(t, "u", dt, shape[0], onHost(t, gu), u)
			sameBits(t, "s", dt, shape[0], onHost(t, gs), s)
			sameBits(t, "vt", dt, shape[1], onHost(t, gvt), vt)
		}
	}
}

// MatrixExp equals the CPU's bit for bit: each Padé degree's range of
// norms and squarings in one batch, matrices wider than a block's
// threads, one holding ∞ (NaN), float32 and float64.
func TestMatrixExpIsTheCPUsOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		for _, n := range []int{1, 4, 9, 131} {
			batch := 6
			if n > 100 {
				batch = 1
			}
			a := tensor.ToSlice[float64](tensor.RandUniform(tensor.NewRNG(uint64(n+40)), tensor.Float64, -1, 1, batch, n, n))
			for b, scale := range []float64{0.001 / float64(n), 0.2 / float64(n), 0.8 / float64(n), 2 / float64(n), 5 / float64(n), 300}[:batch] {
				for i := range n * n {
					a[b*n*n+i] *= scale
				}
			}
			if batch > 1 {
				a[n*n+n*n-1] = math.Inf(1) // the second matrix: NaN out
			}
			x := ops.Cast(tensor.FromSlice(a, batch, n, n), dt)
			sameBits(t, "expm", dt, n, onHost(t, ops.MatrixExp(onGPU(t, d, x))), ops.MatrixExp(x))
		}
	}
}

// Det's gradient on the GPU where the batch holds a singular matrix (the
// cofactors by the SVD, ops' composite) is the CPU's.
func TestDetGradientAtSingularOnGPU(t *testing.T) {
	d := testGPU(t)
	a := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6, 5, 7, 9, 1, 2, 3, 4, 5, 6, 7, 8, 10}, 2, 3, 3)
	grad := func(x *tensor.Tensor) *tensor.Tensor {
		tp := tape.New()
		tp.Watch(x)
		return tp.Gradient(ops.Sum(ops.Det(x)), x)[0]
	}
	want := tensor.ToSlice[float64](grad(a))
	got := tensor.ToSlice[float64](onHost(t, grad(onGPU(t, d, a))))
	for i := range want {
		if !(math.Abs(got[i]-want[i]) < 1e-12) {
			t.Fatalf("GPU %v, CPU %v", got, want)
		}
	}
}
