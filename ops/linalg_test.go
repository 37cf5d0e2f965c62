package ops_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// spd returns a batch of symmetric positive-definite matrices m·mᵀ + n·I.
func spd(dt tensor.DType, seed uint64, batch ...int) *tensor.Tensor {
	n := batch[len(batch)-1]
	m := tensor.RandUniform(tensor.NewRNG(seed), tensor.Float64, -1, 1, batch...)
	a := ops.Add(ops.MatMulT(m, m, false, true), ops.Mul(tensor.Eye(tensor.Float64, n), tensor.Scalar(float64(n))))
	return ops.Cast(a, dt)
}

// maxAbsDiff is max |x - y| over float64 copies.
func maxAbsDiff(x, y *tensor.Tensor) float64 {
	d := tensor.ToSlice[float64](ops.Cast(ops.Abs(ops.Sub(ops.Cast(x, tensor.Float64), ops.Cast(y, tensor.Float64))), tensor.Float64))
	worst := 0.0
	for _, v := range d {
		if !(v <= worst) {
			worst = v
		}
	}
	return worst
}

// Cholesky's factor is lower-triangular and reproduces a (float64 to
// 1e-14, float32 to 1e-5 relative), reads only a's lower triangle, and is
// NaN for the matrices of a batch that are not positive definite.
func TestCholesky(t *testing.T) {
	for _, c := range []struct {
		dt  tensor.DType
		tol float64
	}{{tensor.Float64, 1e-13}, {tensor.Float32, 2e-5}} {
		a := spd(c.dt, 1, 3, 7, 7)
		l := ops.Cholesky(a)
		if d := maxAbsDiff(ops.MatMulT(l, l, false, true), a); d > c.tol*7 {
			t.Errorf("%v: |L·Lᵀ - a| = %g", c.dt, d)
		}
		if d := maxAbsDiff(ops.Triu(l, 1), ops.ZerosLike(l)); d != 0 {
			t.Errorf("%v: L has %g above its diagonal", c.dt, d)
		}
		// The upper triangle is not read.
		junk := ops.Add(a, ops.Triu(ops.Cast(tensor.RandUniform(tensor.NewRNG(5), tensor.Float64, -9, 9, 3, 7, 7), c.dt), 1))
		if d := maxAbsDiff(ops.Cholesky(junk), l); d != 0 {
			t.Errorf("%v: the upper triangle changed L by %g", c.dt, d)
		}
	}
	// A batch of a positive-definite matrix, an indefinite one and one
	// holding NaN: the last two NaN, the first factored.
	good := tensor.FromSlice([]float64{4, 0, 2, 5}, 2, 2)
	bad := tensor.FromSlice([]float64{1, 0, 2, 1}, 2, 2) // [[1 2] [2 1]]: eigenvalues 3 and -1
	nan := tensor.FromSlice([]float64{1, 0, math.NaN(), 1}, 2, 2)
	got := tensor.ToSlice[float64](ops.Cholesky(ops.Stack(0, good, bad, nan)))
	want := []float64{2, 0, 1, 2}
	for i, v := range got {
		if i < 4 && v != want[i] || i >= 4 && !math.IsNaN(v) {
			t.Fatalf("Cholesky of [good bad nan] = %v", got)
		}
	}
	for _, bad := range []*tensor.Tensor{tensor.Zeros(tensor.Float64, 2, 3), tensor.Zeros(tensor.Float64, 3), tensor.Zeros(tensor.Int32, 2, 2)} {
		if _, err := catch(func() *tensor.Tensor { return ops.Cholesky(bad) }); !errors.As(err, new(*tensor.Error)) {
			t.Errorf("Cholesky(%v): error %v, want a *tensor.Error", bad, err)
		}
	}
}

// TriangularSolve in each of its eight forms solves the system it names
// (the other triangle holding junk that must not be read), batches
// broadcast; CholeskySolve solves with the factor.
func TestTriangularSolve(t *testing.T) {
	const n, k = 6, 3
	raw := tensor.RandUniform(tensor.NewRNG(2), tensor.Float64, -1, 1, n, n)
	a := ops.Add(raw, ops.Mul(tensor.Eye(tensor.Float64, n), tensor.Scalar(4.0))) // diagonal away from 0
	b := tensor.RandUniform(tensor.NewRNG(3), tensor.Float64, -1, 1, 2, n, k)
	for _, upper := range []bool{false, true} {
		for _, trans := range []bool{false, true} {
			for _, unit := range []bool{false, true} {
				opts := ops.TriangularSolveOpts{Upper: upper, Transpose: trans, UnitDiagonal: unit}
				x := ops.TriangularSolve(a, b, opts)
				m := ops.Tril(a, 0)
				if upper {
					m = ops.Triu(a, 0)
				}
				if unit {
					m = ops.Add(ops.Sub(m, ops.Mul(m, tensor.Eye(tensor.Float64, n))), tensor.Eye(tensor.Float64, n))
				}
				if trans {
					m = ops.Transpose(m, 1, 0)
				}
				if d := maxAbsDiff(ops.MatMul(m, x), b); d > 1e-14 {
					t.Errorf("%+v: |M·x - b| = %g", opts, d)
				}
			}
		}
	}
	a32 := spd(tensor.Float32, 4, 2, n, n)
	x := ops.CholeskySolve(ops.Cholesky(a32), ops.Cast(b, tensor.Float32))
	if d := maxAbsDiff(ops.MatMul(a32, x), ops.Cast(b, tensor.Float32)); d > 1e-5 {
		t.Errorf("CholeskySolve: |a·x - b| = %g", d)
	}
	for _, c := range []struct{ a, b *tensor.Tensor }{
		{tensor.Zeros(tensor.Float64, 3, 3), tensor.Zeros(tensor.Float64, 4, 1)},
		{tensor.Zeros(tensor.Float64, 2, 3, 3), tensor.Zeros(tensor.Float64, 3, 3, 1)},
		{tensor.Zeros(tensor.Float64, 3, 3), tensor.Zeros(tensor.Float32, 3, 1)},
		{tensor.Zeros(tensor.Float64, 3, 3), tensor.Zeros(tensor.Float64, 3)},
	} {
		if _, err := catch(func() *tensor.Tensor { return ops.TriangularSolve(c.a, c.b, ops.TriangularSolveOpts{}) }); !errors.As(err, new(*tensor.Error)) {
			t.Errorf("TriangularSolve(%v, %v): error %v, want a *tensor.Error", c.a, c.b, err)
		}
	}
}

// Solve and Inverse leave residuals at rounding's level (float32 too),
// batches broadcast; Det and Slogdet agree with each other, with
// products of known factors and exchanges, at a singular matrix (0, and
// sign 0 with -∞) and past float64's range (Slogdet's logarithm).
func TestLUFunctions(t *testing.T) {
	const n = 5
	a := ops.Add(tensor.RandUniform(tensor.NewRNG(8), tensor.Float64, -1, 1, 3, n, n), ops.Mul(tensor.Eye(tensor.Float64, n), tensor.Scalar(0.5)))
	b := tensor.RandUniform(tensor.NewRNG(9), tensor.Float64, -1, 1, n, 2) // broadcast over a's batch
	x := ops.Solve(a, b)
	if d := maxAbsDiff(ops.MatMul(a, x), ops.BroadcastTo(b, 3, n, 2)); d > 1e-13 {
		t.Errorf("|a·Solve(a, b) - b| = %g", d)
	}
	if d := maxAbsDiff(ops.MatMul(ops.Inverse(a), a), ops.BroadcastTo(tensor.Eye(tensor.Float64, n), 3, n, n)); d > 1e-13 {
		t.Errorf("|Inverse(a)·a - I| = %g", d)
	}
	a32 := ops.Cast(a, tensor.Float32)
	if d := maxAbsDiff(ops.MatMul(a32, ops.Solve(a32, ops.Cast(b, tensor.Float32))), ops.BroadcastTo(ops.Cast(b, tensor.Float32), 3, n, 2)); d > 1e-5 {
		t.Errorf("float32: |a·Solve(a, b) - b| = %g", d)
	}
	// det(P·L·U) = ±Π diag(U): an exchange of rows 0 and 1 of an upper
	// triangle.
	u := tensor.FromSlice([]float64{2, 7, 1, 0, -3, 4, 0, 0, 0.5}, 3, 3)
	swapped := tensor.FromSlice([]float64{0, -3, 4, 2, 7, 1, 0, 0, 0.5}, 3, 3)
	singular := tensor.FromSlice([]float64{1, 2, 3, 2, 4, 6, 0, 1, 1}, 3, 3)
	dets := tensor.ToSlice[float64](ops.Det(ops.Stack(0, u, swapped, singular)))
	if dets[0] != -3 || dets[1] != 3 || dets[2] != 0 {
		t.Errorf("Det = %v, want [-3 3 0]", dets)
	}
	sign, logAbs := ops.Slogdet(ops.Stack(0, u, swapped, singular))
	s, l := tensor.ToSlice[float64](sign), tensor.ToSlice[float64](logAbs)
	if s[0] != -1 || s[1] != 1 || s[2] != 0 || math.Abs(l[0]-math.Log(3)) > 1e-15 || !math.IsInf(l[2], -1) {
		t.Errorf("Slogdet = %v, %v", s, l)
	}
	big := ops.Mul(tensor.Eye(tensor.Float64, 40), tensor.Scalar(1e10)) // det 1e400
	if _, l := ops.Slogdet(big); math.Abs(tensor.ToSlice[float64](l)[0]-400*math.Log(10)) > 1e-12 {
		t.Errorf("Slogdet(1e10·I₄₀) = %v, want 400 ln 10", tensor.ToSlice[float64](l))
	}
	if d := tensor.ToSlice[float64](ops.Det(tensor.Zeros(tensor.Float64, 2, 0, 0))); d[0] != 1 || d[1] != 1 {
		t.Errorf("Det of empty matrices = %v, want 1s", d)
	}
	for _, bad := range []func() *tensor.Tensor{
		func() *tensor.Tensor { return ops.Det(tensor.Zeros(tensor.Float64, 2, 3)) },
		func() *tensor.Tensor { return ops.Inverse(tensor.Zeros(tensor.Float64, 3)) },
		func() *tensor.Tensor {
			return ops.Solve(tensor.Zeros(tensor.Float64, 3, 3), tensor.Zeros(tensor.Float64, 2, 1))
		},
		func() *tensor.Tensor { return ops.Det(tensor.Zeros(tensor.BFloat16, 2, 2)) },
	} {
		if _, err := catch(bad); !errors.As(err, new(*tensor.Error)) {
			t.Errorf("error %v, want a *tensor.Error", err)
		}
	}
}

// LU reproduces a as p·l·u (LUUnpack), its pivots and permutation are
// getrf's (0-based), LUSolve solves both systems with the factors and
// agrees with Solve, a singular matrix factors without error, and the
// composed functions' gradients match finite differences.
func TestLUFactorization(t *testing.T) {
	a := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6, 7, 8, 10}, 3, 3)
	lu, piv, perm := ops.LU(a)
	if got := tensor.ToSlice[int32](piv); got[0] != 2 || got[1] != 2 || got[2] != 2 {
		t.Errorf("pivots = %v, want [2 2 2]", got)
	}
	if got := tensor.ToSlice[int32](perm); got[0] != 2 || got[1] != 0 || got[2] != 1 {
		t.Errorf("perm = %v, want [2 0 1]", got)
	}
	want := []float64{7, 8, 10, 1.0 / 7, 6.0 / 7, 11.0 / 7, 4.0 / 7, 0.5, -0.5}
	for i, v := range tensor.ToSlice[float64](lu) {
		if math.Abs(v-want[i]) > 1e-15 {
			t.Errorf("lu[%d] = %v, want %v", i, v, want[i])
		}
	}
	batch := ops.Add(tensor.RandUniform(tensor.NewRNG(31), tensor.Float64, -1, 1, 2, 3, 5, 5), ops.Mul(tensor.Eye(tensor.Float64, 5), tensor.Scalar(0.3)))
	blu, _, bperm := ops.LU(batch)
	p, l, u := ops.LUUnpack(blu, bperm)
	if d := maxAbsDiff(ops.MatMul(p, ops.MatMul(l, u)), batch); d > 1e-15 {
		t.Errorf("|p·l·u - a| = %g", d)
	}
	if d := maxAbsDiff(l, ops.Add(ops.Tril(l, -1), tensor.Eye(tensor.Float64, 5))); d != 0 {
		t.Errorf("l is not unit lower triangular: %g", d)
	}
	b := tensor.RandUniform(tensor.NewRNG(32), tensor.Float64, -1, 1, 5, 2) // broadcast over the batch
	x := ops.LUSolve(blu, bperm, b, ops.LUSolveOpts{})
	if d := maxAbsDiff(x, ops.Solve(batch, b)); d > 1e-15 {
		t.Errorf("LUSolve and Solve differ by %g", d)
	}
	xt := ops.LUSolve(blu, bperm, b, ops.LUSolveOpts{Transpose: true})
	if d := maxAbsDiff(ops.MatMulT(batch, xt, true, false), ops.BroadcastTo(b, 2, 3, 5, 2)); d > 1e-14 {
		t.Errorf("|aᵀ·LUSolve(transposed) - b| = %g", d)
	}
	s32 := ops.Cast(batch, tensor.Float32)
	lu32, _, perm32 := ops.LU(s32)
	lu64, _, _ := ops.LU(ops.Cast(s32, tensor.Float64))
	if d := maxAbsDiff(lu32, ops.Cast(lu64, tensor.Float32)); d != 0 {
		t.Errorf("float32 LU is not float64's rounded once: %g", d)
	}
	if d := maxAbsDiff(ops.LUSolve(lu32, perm32, ops.Cast(b, tensor.Float32), ops.LUSolveOpts{}), x); d > 1e-4 {
		t.Errorf("float32 LUSolve is %g off", d)
	}
	singular := tensor.FromSlice([]float64{1, 2, 2, 4}, 2, 2)
	if slu, _, _ := ops.LU(singular); tensor.ToSlice[float64](slu)[3] != 0 {
		t.Errorf("LU of a singular matrix: %v, want a 0 on U's diagonal", slu)
	}
	well := func(x T) T { return ops.Add(x, ops.Mul(tensor.Eye(tensor.Float64, 4), tensor.Scalar(2.5))) }
	runGradients(t, []gradCase{
		{"LUSolve", func(x []T) T {
			lu, _, perm := ops.LU(well(x[0]))
			return ops.LUSolve(lu, perm, x[1], ops.LUSolveOpts{})
		}, []T{rnd(33, -1, 1, 2, 4, 4), rnd(34, -1, 1, 2, 4, 3)}},
		{"LUSolve transposed", func(x []T) T {
			lu, _, perm := ops.LU(well(x[0]))
			return ops.LUSolve(lu, perm, x[1], ops.LUSolveOpts{Transpose: true})
		}, []T{rnd(35, -1, 1, 4, 4), rnd(36, -1, 1, 4, 2)}},
		{"LUUnpack", func(x []T) T {
			lu, _, perm := ops.LU(well(x[0]))
			p, l, u := ops.LUUnpack(lu, perm)
			return ops.Add(ops.Mul(p, l), ops.Mul(l, u))
		}, []T{rnd(37, -1, 1, 4, 4)}},
		{"Solve through its factors", func(x []T) T { return ops.Inverse(well(x[0])) }, []T{rnd(38, -1, 1, 4, 4)}},
	}, nil, nil)
	m3 := tensor.Zeros(tensor.Float64, 3, 3)
	runBadInput(t, []badInput{
		{"LU of a non-square matrix", func() { ops.LU(tensor.Zeros(tensor.Float64, 2, 3)) }, tensor.ErrShape, "not a square matrix"},
		{"LU of int32", func() { ops.LU(tensor.Zeros(tensor.Int32, 2, 2)) }, tensor.ErrDType, "int32"},
		{"LUSolve's perm int64", func() {
			ops.LUSolve(m3, tensor.Zeros(tensor.Int64, 3), tensor.Zeros(tensor.Float64, 3, 1), ops.LUSolveOpts{})
		},
			tensor.ErrShape, "perm must be Int32 [3]"},
		{"LUSolve's b of other rows", func() {
			ops.LUSolve(m3, tensor.Zeros(tensor.Int32, 3), tensor.Zeros(tensor.Float64, 2, 1), ops.LUSolveOpts{})
		},
			tensor.ErrShape, "b [2 1] is not [batch..., 3, k]"},
		{"LUSolve's lu not square", func() {
			ops.LUSolve(tensor.Zeros(tensor.Float64, 3, 2), tensor.Zeros(tensor.Int32, 3), tensor.Zeros(tensor.Float64, 3, 1), ops.LUSolveOpts{})
		},
			tensor.ErrShape, "lu [3 2] is not a square matrix"},
		{"LUUnpack's perm of another batch", func() { ops.LUUnpack(m3, tensor.Zeros(tensor.Int32, 2, 3)) }, tensor.ErrShape, "perm Int32 [..., n]"},
	})
}

// Eigh's eigenvalues ascend and its eigenvectors are orthonormal and
// reproduce a (from its lower triangle alone), each signed so that its
// largest component is positive; known spectra come out to rounding's
// level; a matrix holding NaN gives NaN.
func TestEigh(t *testing.T) {
	for _, c := range []struct {
		dt  tensor.DType
		tol float64
	}{{tensor.Float64, 1e-13}, {tensor.Float32, 1e-5}} {
		m := tensor.RandUniform(tensor.NewRNG(11), tensor.Float64, -1, 1, 2, 7, 7)
		a := ops.Cast(ops.Add(m, ops.Transpose(m, 0, 2, 1)), c.dt)
		junk := ops.Add(a, ops.Triu(ops.Cast(tensor.RandUniform(tensor.NewRNG(12), tensor.Float64, -5, 5, 2, 7, 7), c.dt), 1))
		vals, vecs := ops.Eigh(junk)
		rebuilt := ops.MatMulT(ops.Mul(vecs, ops.ExpandDims(vals, -2)), vecs, false, true)
		if d := maxAbsDiff(rebuilt, a); d > c.tol*10 {
			t.Errorf("%v: |V·diag(λ)·Vᵀ - a| = %g", c.dt, d)
		}
		if d := maxAbsDiff(ops.MatMulT(vecs, vecs, true, false), ops.BroadcastTo(tensor.Eye(c.dt, 7), 2, 7, 7)); d > c.tol*10 {
			t.Errorf("%v: |VᵀV - I| = %g", c.dt, d)
		}
		lv := tensor.ToSlice[float64](ops.Cast(vals, tensor.Float64))
		for i := 1; i < len(lv); i++ {
			if i%7 != 0 && lv[i] < lv[i-1] {
				t.Errorf("%v: eigenvalues %v do not ascend", c.dt, lv)
			}
		}
		vv := tensor.ToSlice[float64](ops.Cast(vecs, tensor.Float64))
		for b := range 2 {
			for col := range 7 {
				best, at := -1.0, 0
				for i := range 7 {
					if v := math.Abs(vv[b*49+i*7+col]); v > best {
						best, at = v, i
					}
				}
				if vv[b*49+at*7+col] < 0 {
					t.Errorf("%v: eigenvector %d's largest component is negative", c.dt, col)
				}
			}
		}
	}
	// [[2 1] [1 2]]: 1 and 3, (1, -1)/√2 and (1, 1)/√2.
	vals, vecs := ops.Eigh(tensor.FromSlice([]float64{2, 1, 1, 2}, 2, 2))
	if v := tensor.ToSlice[float64](vals); v[0] != 1 || math.Abs(v[1]-3) > 4e-16 {
		t.Errorf("eigenvalues of [[2 1] [1 2]] = %v", v)
	}
	r := 1 / math.Sqrt2
	for i, want := range []float64{r, r, -r, r} {
		if got := tensor.ToSlice[float64](vecs)[i]; math.Abs(math.Abs(got)-math.Abs(want)) > 1e-15 || math.Signbit(got) != math.Signbit(want) && i != 0 && i != 2 {
			t.Errorf("eigenvectors of [[2 1] [1 2]] = %v", tensor.ToSlice[float64](vecs))
			break
		}
	}
	// A small eigenvalue beside a large one, to the rounding of the
	// matrix's elements (2e-16): diag(1e-12, 1) turned by a rotation.
	cs, sn := math.Cos(0.3), math.Sin(0.3)
	q := tensor.FromSlice([]float64{cs, -sn, sn, cs}, 2, 2)
	a := ops.MatMulT(ops.Mul(q, tensor.FromSlice([]float64{1e-12, 1}, 1, 2)), q, false, true)
	if v, _ := ops.Eigh(a); math.Abs(tensor.ToSlice[float64](v)[0]-1e-12) > 2e-16 {
		t.Errorf("the small eigenvalue = %v, want 1e-12", tensor.ToSlice[float64](v)[0])
	}
	nanVals, _ := ops.Eigh(tensor.FromSlice([]float64{1, 0, math.NaN(), 1}, 2, 2))
	if v := tensor.ToSlice[float64](nanVals); !math.IsNaN(v[0]) || !math.IsNaN(v[1]) {
		t.Errorf("Eigh of a matrix holding NaN = %v", v)
	}
}

// QR of tall, square and wide matrices: q's columns orthonormal, r upper
// triangular with a non-negative diagonal, q·r = a; a zero column too.
func TestQR(t *testing.T) {
	for _, c := range []struct {
		dt  tensor.DType
		tol float64
	}{{tensor.Float64, 1e-14}, {tensor.Float32, 2e-6}} {
		for _, shape := range [][]int{{6, 4}, {2, 5, 5}, {3, 7}, {1, 1}} {
			a := ops.Cast(tensor.RandUniform(tensor.NewRNG(13), tensor.Float64, -1, 1, shape...), c.dt)
			q, r := ops.QR(a)
			k := min(shape[len(shape)-2], shape[len(shape)-1])
			if d := maxAbsDiff(ops.MatMul(q, r), a); d > c.tol*10 {
				t.Errorf("%v %v: |q·r - a| = %g", c.dt, shape, d)
			}
			eye := ops.BroadcastTo(tensor.Eye(c.dt, k), append(q.Shape()[:q.Rank()-2].Clone(), k, k)...)
			if d := maxAbsDiff(ops.MatMulT(q, q, true, false), eye); d > c.tol*10 {
				t.Errorf("%v %v: |qᵀq - I| = %g", c.dt, shape, d)
			}
			if d := maxAbsDiff(ops.Tril(r, -1), ops.ZerosLike(r)); d != 0 {
				t.Errorf("%v %v: r has %g below its diagonal", c.dt, shape, d)
			}
			diag := tensor.ToSlice[float64](ops.Cast(ops.Tril(ops.Triu(r, 0), 0), tensor.Float64)) // the diagonal, zeros elsewhere
			for _, v := range diag {
				if v < 0 {
					t.Fatalf("%v %v: r's diagonal has %v", c.dt, shape, v)
				}
			}
		}
	}
	q, r := ops.QR(tensor.FromSlice([]float64{0, 1, 0, 2, 0, 3}, 3, 2))
	if d := maxAbsDiff(ops.MatMul(q, r), tensor.FromSlice([]float64{0, 1, 0, 2, 0, 3}, 3, 2)); d > 1e-14 {
		t.Errorf("QR of a matrix with a zero column: |q·r - a| = %g", d)
	}
	if _, err := catch(func() *tensor.Tensor { q, _ := ops.QR(tensor.Zeros(tensor.Float64, 3)); return q }); !errors.As(err, new(*tensor.Error)) {
		t.Errorf("QR of a vector: error %v, want a *tensor.Error", err)
	}
}

// SVD of tall, square and wide matrices: orthonormal u and vt, s
// descending and not negative, u·diag(s)·vt = a, u's largest components
// positive; a rank-deficient matrix's u still orthonormal; huge and tiny
// scales kept (the power-of-2 prescaling).
func TestSVD(t *testing.T) {
	for _, c := range []struct {
		dt  tensor.DType
		tol float64
	}{{tensor.Float64, 1e-14}, {tensor.Float32, 2e-6}} {
		for _, shape := range [][]int{{6, 4}, {2, 5, 5}, {3, 7}, {1, 1}, {4, 1}} {
			a := ops.Cast(tensor.RandUniform(tensor.NewRNG(17), tensor.Float64, -1, 1, shape...), c.dt)
			u, s, vt := ops.SVD(a)
			if d := maxAbsDiff(ops.MatMul(ops.Mul(u, ops.ExpandDims(s, -2)), vt), a); d > c.tol*20 {
				t.Errorf("%v %v: |u·diag(s)·vt - a| = %g", c.dt, shape, d)
			}
			k := s.Dim(-1)
			batch := s.Shape()[:s.Rank()-1].Clone()
			eye := ops.BroadcastTo(tensor.Eye(c.dt, k), append(batch, k, k)...)
			if d := maxAbsDiff(ops.MatMulT(u, u, true, false), eye); d > c.tol*20 {
				t.Errorf("%v %v: |uᵀu - I| = %g", c.dt, shape, d)
			}
			if d := maxAbsDiff(ops.MatMulT(vt, vt, false, true), eye); d > c.tol*20 {
				t.Errorf("%v %v: |vt·vtᵀ - I| = %g", c.dt, shape, d)
			}
			sv := tensor.ToSlice[float64](ops.Cast(s, tensor.Float64))
			for i := range sv {
				if sv[i] < 0 || i%k != 0 && sv[i] > sv[i-1] {
					t.Errorf("%v %v: s = %v", c.dt, shape, sv)
					break
				}
			}
		}
	}
	// Rank 1: s = (√(1+4+9)·√2, 0), u orthonormal all the same.
	a := tensor.FromSlice([]float64{1, 1, 2, 2, 3, 3}, 3, 2)
	u, s, vt := ops.SVD(a)
	if sv := tensor.ToSlice[float64](s); math.Abs(sv[0]-math.Sqrt(28)) > 1e-14 || sv[1] > 1e-15 {
		t.Errorf("s of a rank-1 matrix = %v", sv)
	}
	if d := maxAbsDiff(ops.MatMulT(u, u, true, false), tensor.Eye(tensor.Float64, 2)); d > 1e-15 {
		t.Errorf("rank 1: |uᵀu - I| = %g", d)
	}
	if d := maxAbsDiff(ops.MatMul(ops.Mul(u, ops.ExpandDims(s, -2)), vt), a); d > 1e-14 {
		t.Errorf("rank 1: |u·diag(s)·vt - a| = %g", d)
	}
	huge := ops.Mul(tensor.FromSlice([]float64{3, 0, 0, 4}, 2, 2), tensor.Scalar(1e300))
	if _, s, _ := ops.SVD(huge); tensor.ToSlice[float64](s)[0] != 4e300 {
		t.Errorf("s of diag(3e300, 4e300) = %v", tensor.ToSlice[float64](s))
	}
}

// The composed functions against their definitions: Diagonal and Trace;
// Lstsq's residual orthogonal to a's columns (tall) and its solution of
// least norm (wide: in aᵀ's span, a·x = b); Pinv's four Penrose
// conditions, a rank-deficient matrix included; MatrixNorm's ords.
func TestMatrixFunctions(t *testing.T) {
	a := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, 3)
	if d := tensor.ToSlice[float64](ops.Diagonal(a)); d[0] != 1 || d[1] != 5 || d[2] != 9 {
		t.Errorf("Diagonal = %v", d)
	}
	if tr := tensor.ToSlice[float64](ops.Trace(a))[0]; tr != 15 {
		t.Errorf("Trace = %v", tr)
	}
	tall := tensor.RandUniform(tensor.NewRNG(21), tensor.Float64, -1, 1, 2, 6, 3)
	b := tensor.RandUniform(tensor.NewRNG(22), tensor.Float64, -1, 1, 2, 6, 2)
	x := ops.Lstsq(tall, b)
	residual := ops.Sub(ops.MatMul(tall, x), b)
	if d := maxAbsDiff(ops.MatMulT(tall, residual, true, false), tensor.Zeros(tensor.Float64, 2, 3, 2)); d > 1e-14 {
		t.Errorf("tall Lstsq: |aᵀ·(a·x - b)| = %g", d)
	}
	wide := ops.Transpose(tall, 0, 2, 1) // [2 3 6]
	bw := tensor.RandUniform(tensor.NewRNG(23), tensor.Float64, -1, 1, 2, 3, 2)
	xw := ops.Lstsq(wide, bw)
	if d := maxAbsDiff(ops.MatMul(wide, xw), bw); d > 1e-14 {
		t.Errorf("wide Lstsq: |a·x - b| = %g", d)
	}
	// Least norm: x = aᵀ·y for y = (a·aᵀ)⁻¹·b.
	y := ops.Solve(ops.MatMulT(wide, wide, false, true), bw)
	if d := maxAbsDiff(xw, ops.MatMulT(wide, y, true, false)); d > 1e-13 {
		t.Errorf("wide Lstsq is not the least-norm solution: %g", d)
	}
	rank2 := ops.MatMul(tensor.RandUniform(tensor.NewRNG(24), tensor.Float64, -1, 1, 5, 2), tensor.RandUniform(tensor.NewRNG(25), tensor.Float64, -1, 1, 2, 4))
	for _, m := range []*tensor.Tensor{tall, rank2} {
		p := ops.Pinv(m)
		mpm := ops.MatMul(ops.MatMul(m, p), m)
		pmp := ops.MatMul(ops.MatMul(p, m), p)
		mp, pm := ops.MatMul(m, p), ops.MatMul(p, m)
		for name, d := range map[string]float64{
			"a·p·a - a": maxAbsDiff(mpm, m), "p·a·p - p": maxAbsDiff(pmp, p),
			"(a·p)ᵀ - a·p": maxAbsDiff(ops.Transpose(mp, lastTwo(mp)...), mp), "(p·a)ᵀ - p·a": maxAbsDiff(ops.Transpose(pm, lastTwo(pm)...), pm),
		} {
			if d > 1e-13 {
				t.Errorf("Pinv of %v: |%s| = %g", m.Shape(), name, d)
			}
		}
	}
	m := tensor.FromSlice([]float64{3, 0, 0, -4}, 2, 2)
	for ord, want := range map[string]float64{"fro": 5, "nuc": 7, "2": 4, "-2": 3, "1": 4, "-1": 3, "inf": 4, "-inf": 3} {
		if got := tensor.ToSlice[float64](ops.MatrixNorm(m, ord))[0]; math.Abs(got-want) > 1e-15 {
			t.Errorf("MatrixNorm(%s) = %v, want %v", ord, got, want)
		}
	}
	if _, err := catch(func() *tensor.Tensor { return ops.MatrixNorm(m, "3") }); !errors.As(err, new(*tensor.Error)) {
		t.Errorf("MatrixNorm(3): error %v, want a *tensor.Error", err)
	}
}

// MatrixExp: exp(x) of 1×1 matrices across every degree's range and the
// squarings to rounding's level, rotations from exp of skew matrices,
// diagonals, a nilpotent matrix's finite series, exp(a)·exp(-a) = I, the
// trace's gradient exp(a)ᵀ, float32 as float64's rounded once, NaN for a
// matrix holding ∞, and its bad inputs.
func TestMatrixExp(t *testing.T) {
	for _, x := range []float64{0, 1e-3, -0.2, 0.9, 2, -5, 12, -100, 300, 700} {
		got := tensor.ToSlice[float64](ops.MatrixExp(tensor.FromSlice([]float64{x}, 1, 1)))[0]
		if want := math.Exp(x); math.Abs(got-want) > (8+4*math.Abs(x))*0x1p-52*want { // about ‖a‖₁·u
			t.Errorf("exp of [[%v]] = %v, want %v", x, got, want)
		}
	}
	for _, th := range []float64{1e-3, 0.1, 1.5, 3, 20} {
		r := tensor.ToSlice[float64](ops.MatrixExp(tensor.FromSlice([]float64{0, th, -th, 0}, 2, 2)))
		c, s := math.Cos(th), math.Sin(th)
		for i, want := range []float64{c, s, -s, c} {
			if math.Abs(r[i]-want) > 8*max(th, 1)*0x1p-52 {
				t.Errorf("exp of a rotation by %v: %v, want [%v %v %v %v]", th, r, c, s, -s, c)
				break
			}
		}
	}
	diag := ops.MatrixExp(tensor.FromSlice([]float64{-1, 0, 0, 0, 2, 0, 0, 0, 7}, 3, 3))
	if d := maxAbsDiff(diag, tensor.FromSlice([]float64{math.Exp(-1), 0, 0, 0, math.Exp(2), 0, 0, 0, math.Exp(7)}, 3, 3)); d > (8+4*7)*0x1p-52*math.Exp(7) {
		t.Errorf("exp of a diagonal matrix is %g off", d)
	}
	nil3 := tensor.FromSlice([]float64{0, 2, 3, 0, 0, 5, 0, 0, 0}, 3, 3) // N³ = 0: exp = I + N + N²/2
	want := tensor.FromSlice([]float64{1, 2, 3 + 5, 0, 1, 5, 0, 0, 1}, 3, 3)
	if d := maxAbsDiff(ops.MatrixExp(nil3), want); d > 1e-14 {
		t.Errorf("exp of a nilpotent matrix is %g off I + N + N²/2", d)
	}
	a := tensor.RandUniform(tensor.NewRNG(51), tensor.Float64, -1, 1, 4, 6, 6)
	for _, scale := range []float64{0.01, 0.5, 3} {
		x := ops.Mul(a, tensor.Scalar(scale))
		if d := maxAbsDiff(ops.MatMul(ops.MatrixExp(x), ops.MatrixExp(ops.Neg(x))), ops.BroadcastTo(tensor.Eye(tensor.Float64, 6), 4, 6, 6)); d > 1e-13*(1+scale*scale) {
			t.Errorf("‖exp(a)·exp(-a) - I‖ = %g for a of scale %v", d, scale)
		}
	}
	x := ops.Mul(a, tensor.Scalar(0.7))
	tp := tape.New()
	tp.Watch(x)
	grad := tp.Gradient(ops.Trace(ops.MatrixExp(x)), x)[0] // d tr exp(a) = exp(a)ᵀ
	if d := maxAbsDiff(grad, ops.Transpose(ops.MatrixExp(x), 0, 2, 1)); d > 1e-13 {
		t.Errorf("the trace's gradient is %g off exp(a)ᵀ", d)
	}
	x32 := ops.Cast(x, tensor.Float32)
	if d := maxAbsDiff(ops.MatrixExp(x32), ops.Cast(ops.MatrixExp(ops.Cast(x32, tensor.Float64)), tensor.Float32)); d != 0 {
		t.Errorf("float32 is not float64's rounded once: %g", d)
	}
	if got := tensor.ToSlice[float64](ops.MatrixExp(tensor.FromSlice([]float64{1, math.Inf(1), 0, 1}, 2, 2))); !math.IsNaN(got[0]) || !math.IsNaN(got[3]) {
		t.Errorf("exp of a matrix holding ∞ = %v, want NaN", got)
	}
	runBadInput(t, []badInput{
		{"not square", func() { ops.MatrixExp(tensor.Zeros(tensor.Float64, 2, 3)) }, tensor.ErrShape, "not a square matrix"},
		{"int64", func() { ops.MatrixExp(tensor.Zeros(tensor.Int64, 2, 2)) }, tensor.ErrDType, "int64"},
	})
}

// A factorization some of whose outputs no gradient reaches leaves their
// terms out: each output alone matches finite differences, and the
// eigenvalues and singular values alone have finite gradients where
// they repeat (their vectors' terms divide by the gaps: NaN before).
func TestFactorizationGradientsOfSomeOutputs(t *testing.T) {
	first := func(i int, f func(x T) []T) func(x []T) T { return func(x []T) T { return f(x[0])[i] } }
	qr := func(x T) []T { q, r := ops.QR(x); return []T{q, r} }
	svd := func(x T) []T { u, s, vt := ops.SVD(x); return []T{u, s, vt} }
	eigh := func(x T) []T { l, v := ops.Eigh(x); return []T{l, v} }
	var cases []gradCase
	for _, shape := range [][]int{{4, 3}, {3, 3}, {2, 5}} {
		for i := range 2 {
			cases = append(cases, gradCase{fmt.Sprintf("QR%v output %d", shape, i), first(i, qr), []T{rnd(40, -1, 1, shape...)}})
		}
		for i := range 3 {
			cases = append(cases, gradCase{fmt.Sprintf("SVD%v output %d", shape, i), first(i, svd), []T{rnd(41, -1, 1, shape...)}})
		}
	}
	for i := range 2 {
		cases = append(cases, gradCase{fmt.Sprintf("Eigh output %d", i), first(i, eigh), []T{rnd(42, -1, 1, 4, 4)}})
	}
	runGradients(t, cases, nil, nil)
	a := tensor.FromSlice([]float64{2, 0, 0, 0, 2, 0, 0, 0, 5}, 3, 3) // 2 repeated
	tp := tape.New()
	tp.Watch(a)
	values, _ := ops.Eigh(a)
	if d := maxAbsDiff(tp.Gradient(ops.Sum(ops.Square(values)), a)[0], tensor.FromSlice([]float64{4, 0, 0, 0, 4, 0, 0, 0, 10}, 3, 3)); !(d < 1e-14) {
		t.Errorf("the gradient of Σλ² at repeated eigenvalues is %g off 2a", d)
	}
	tp = tape.New()
	tp.Watch(a)
	_, s, _ := ops.SVD(a)
	if d := maxAbsDiff(tp.Gradient(ops.Sum(s), a)[0], tensor.Eye(tensor.Float64, 3)); !(d < 1e-14) {
		t.Errorf("the gradient of Σs at repeated singular values is %g off u·vᵀ", d)
	}
}

// lastTwo is the permutation of x's dimensions that swaps the last two.
func lastTwo(x *tensor.Tensor) []int {
	perm := make([]int, x.Rank())
	for i := range perm {
		perm[i] = i
	}
	perm[len(perm)-2], perm[len(perm)-1] = len(perm)-1, len(perm)-2
	return perm
}

// Det's gradient is the cofactor matrix where a is singular too (NaN
// before: det·a⁻ᵀ is 0·∞ there): a batch holding singular matrices of
// rank n-1 (a zero pivot last, in the middle, first; a zero column), of
// rank n-2 (cofactors 0) and a regular one, against cofactors expanded
// by minors; and the second derivative of a 2×2 determinant, which is
// constant.
func TestDetGradientAtSingularMatrices(t *testing.T) {
	mats := [][]float64{
		{1, 2, 3, 4, 5, 6, 7, 8, 10},   // regular
		{1, 2, 3, 4, 5, 6, 5, 7, 9},    // third row the sum of the others
		{0, 1, 2, 0, 3, 4, 0, 5, 6},    // a zero column
		{2, 4, 1, 1, 2, 5, 3, 6, 2},    // the second column twice the first
		{1, 2, 3, 2, 4, 6, -1, -2, -3}, // rank 1: cofactors 0
		{0, 1, 0, 0, 0, 1, 0, 0, 0},    // nilpotent, rank 2
	}
	var flat, want []float64
	for _, m := range mats {
		flat = append(flat, m...)
		want = append(want, cofactors3(m)...)
	}
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		a := ops.Cast(tensor.FromSlice(flat, len(mats), 3, 3), dt)
		tp := tape.New()
		tp.Watch(a)
		got := ops.Cast(tp.Gradient(ops.Sum(ops.Det(a)), a)[0], tensor.Float64)
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-4
		}
		if d := maxAbsDiff(got, tensor.FromSlice(want, len(mats), 3, 3)); !(d < tol) {
			t.Errorf("%v: Det's gradient is %g off the cofactors: %v", dt, d, tensor.ToSlice[float64](got))
		}
	}
	// Singular but for rounding: det 3.3e-15 from a's factors; aᵀ's met an
	// exact zero pivot, and det·(aᵀ)⁻¹ was ±∞ and NaN.
	near := []float64{1, 2, 3, 4, 5, 6, 5, 7, 9}
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		a := ops.Cast(tensor.FromSlice(near, 3, 3), dt)
		tp := tape.New()
		tp.Watch(a)
		got := ops.Cast(tp.Gradient(ops.Det(a), a)[0], tensor.Float64)
		if d := maxAbsDiff(got, tensor.FromSlice(cofactors3(near), 3, 3)); !(d < 1e-5) {
			t.Errorf("%v: Det's gradient at a nearly singular matrix is %g off the cofactors: %v", dt, d, tensor.ToSlice[float64](got))
		}
	}
	a := tensor.FromSlice([]float64{1, 2, 2, 4}, 2, 2)
	w := tensor.FromSlice([]float64{0.5, -1, 2, 3}, 2, 2)
	outer, inner := tape.New(), tape.New()
	outer.Watch(a)
	inner.Watch(a)
	g := inner.Gradient(ops.Det(a), a)[0]
	if d := maxAbsDiff(g, tensor.FromSlice([]float64{4, -2, -2, 1}, 2, 2)); !(d < 1e-14) {
		t.Errorf("the gradient of det [[1 2] [2 4]] is %v, want [[4 -2] [-2 1]]", tensor.ToSlice[float64](g))
	}
	h := outer.Gradient(ops.Sum(ops.Mul(g, w)), a)[0] // ∂(w00·a11 - w01·a10 - w10·a01 + w11·a00)
	if d := maxAbsDiff(h, tensor.FromSlice([]float64{3, -2, 1, 0.5}, 2, 2)); !(d < 1e-12) {
		t.Errorf("the second derivative at a singular matrix is %v, want [[3 -2] [1 0.5]]", tensor.ToSlice[float64](h))
	}
}

// cofactors3 is the cofactor matrix of a 3×3 matrix m (row-major), by
// its 2×2 minors.
func cofactors3(m []float64) []float64 {
	c := make([]float64, 9)
	for i := range 3 {
		for j := range 3 {
			r0, r1 := (i+1)%3, (i+2)%3 // cyclic order carries the sign
			c0, c1 := (j+1)%3, (j+2)%3
			c[i*3+j] = m[r0*3+c0]*m[r1*3+c1] - m[r0*3+c1]*m[r1*3+c0]
		}
	}
	return c
}
