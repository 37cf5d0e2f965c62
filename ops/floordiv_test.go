package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// FloorDiv and Mod of integers against floor division written out, over
// every pair of a small range of both signs, in each integer dtype; a
// divisor of 0 as Div's and Rem's rules give; MinInt32 over -1 as Div.
func TestFloorDivAndModIntegers(t *testing.T) {
	var as, bs []int64
	for a := int64(-20); a <= 20; a++ {
		for b := int64(-7); b <= 7; b++ {
			as, bs = append(as, a), append(bs, b)
		}
	}
	for _, dt := range []tensor.DType{tensor.Int32, tensor.Int64, tensor.Uint8} {
		a, b := ops.Cast(tensor.FromSlice(as, len(as)), dt), ops.Cast(tensor.FromSlice(bs, len(bs)), dt)
		av, bv := tensor.ToSlice[int64](ops.Cast(a, tensor.Int64)), tensor.ToSlice[int64](ops.Cast(b, tensor.Int64))
		q := tensor.ToSlice[int64](ops.Cast(ops.FloorDiv(a, b), tensor.Int64))
		m := tensor.ToSlice[int64](ops.Cast(ops.Mod(a, b), tensor.Int64))
		for i := range av {
			x, y := av[i], bv[i]
			wantQ, wantM := int64(-1), x
			if y != 0 {
				wantQ, wantM = x/y, x%y
				if wantM != 0 && (wantM < 0) != (y < 0) {
					wantQ, wantM = wantQ-1, wantM+y
				}
			}
			if dt == tensor.Uint8 && y == 0 {
				wantQ = 255 // Div's all bits set
			}
			if q[i] != wantQ || m[i] != wantM {
				t.Errorf("%v: %d // %d = %d, %d %% %d = %d; want %d and %d", dt, x, y, q[i], x, y, m[i], wantQ, wantM)
			}
		}
	}
	minInt := tensor.FromSlice([]int32{math.MinInt32})
	minusOne := tensor.FromSlice([]int32{-1})
	if q, d := tensor.ToSlice[int32](ops.FloorDiv(minInt, minusOne))[0], tensor.ToSlice[int32](ops.Div(minInt, minusOne))[0]; q != d {
		t.Errorf("MinInt32 // -1 = %d, Div gives %d", q, d)
	}
}

// FloorDiv and Mod of floats as Python computes them (values from
// CPython 3.11), signed zeros, infinities and a divisor of 0 included,
// in float64 and float32; broadcasting and a weak scalar divisor.
func TestFloorDivAndModFloats(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct{ a, b, q, m float64 }{
		{-7.5, 2, -4, 0.5}, {7.5, -2, -4, -0.5}, {7, -3, -3, -2},
		{math.Copysign(0, -1), 5, math.Copysign(0, -1), 0}, {0, -5, math.Copysign(0, -1), math.Copysign(0, -1)},
		{-1, inf, -1, inf}, {1, inf, 0, 1}, {1e300, 1e-300, inf, 4.891554850853602e-301},
		{-1e-20, 1, -1, 1}, {0.3, 0.1, 2, 0.09999999999999998}, {-0.3, 0.1, -3, 2.7755575615628914e-17},
		{5.5, 0.5, 11, 0}, {1.0000000000000002e+16, 3, 3333333333333334, 0},
		{5, 0, inf, math.NaN()}, {-5, 0, -inf, math.NaN()}, {inf, 2, math.NaN(), math.NaN()},
	}
	var as, bs []float64
	for _, c := range cases {
		as, bs = append(as, c.a), append(bs, c.b)
	}
	same := func(got, want float64) bool {
		return got == want && math.Signbit(got) == math.Signbit(want) || math.IsNaN(got) && math.IsNaN(want)
	}
	q := tensor.ToSlice[float64](ops.FloorDiv(tensor.FromSlice(as, len(as)), tensor.FromSlice(bs, len(bs))))
	m := tensor.ToSlice[float64](ops.Mod(tensor.FromSlice(as, len(as)), tensor.FromSlice(bs, len(bs))))
	for i, c := range cases {
		if !same(q[i], c.q) || !same(m[i], c.m) {
			t.Errorf("%v // %v = %v, %% = %v; want %v and %v", c.a, c.b, q[i], m[i], c.q, c.m)
		}
	}
	x32 := tensor.FromSlice([]float32{-7.5, 7.5, -0.25, 6}, 2, 2)
	if got := tensor.ToSlice[float32](ops.Mod(x32, tensor.Scalar(2.0))); got[0] != 0.5 || got[1] != 1.5 || got[2] != 1.75 || got[3] != 0 {
		t.Errorf("float32 Mod by a scalar 2 = %v, want [0.5 1.5 1.75 0]", got)
	}
	if got := tensor.ToSlice[float32](ops.FloorDiv(x32, tensor.FromSlice([]float32{2, -2}))); got[0] != -4 || got[1] != -4 || got[2] != -1 || got[3] != -3 {
		t.Errorf("float32 FloorDiv by [2 -2] broadcast = %v, want [-4 -4 -1 -3]", got)
	}
}

// Mod's gradient is 1 in a and -⌊a/b⌋ in b (the adjusted remainder's too);
// FloorDiv has none (the tape finds no path, or zeros). Bad input names
// the op.
func TestFloorDivAndModGradients(t *testing.T) {
	a := tensor.FromSlice([]float64{-7.5, 7.5, 2.2, -4.1})
	b := tensor.FromSlice([]float64{2, 2, -0.5, -3})
	tp := tape.New()
	tp.Watch(a, b)
	g := tp.Gradient(ops.Sum(ops.Mod(a, b)), a, b)
	if ga := tensor.ToSlice[float64](g[0]); ga[0] != 1 || ga[1] != 1 || ga[2] != 1 || ga[3] != 1 {
		t.Errorf("∂Mod/∂a = %v, want ones", ga)
	}
	if gb := tensor.ToSlice[float64](g[1]); gb[0] != 4 || gb[1] != -3 || gb[2] != 5 || gb[3] != -1 {
		t.Errorf("∂Mod/∂b = %v, want -⌊a/b⌋ = [4 -3 5 -1]", gb)
	}
	tp = tape.New()
	tp.Watch(a)
	if g := tp.Gradient(ops.Sum(ops.FloorDiv(a, b)), a)[0]; g != nil && tensor.ToSlice[float64](ops.Sum(ops.Abs(g)))[0] != 0 {
		t.Errorf("∂FloorDiv/∂a = %v, want none", g)
	}
	runBadInput(t, []badInput{
		{"bool", func() { ops.FloorDiv(tensor.Zeros(tensor.Bool, 2), tensor.Zeros(tensor.Bool, 2)) }, tensor.ErrDType, "FloorDiv"},
		{"shapes", func() { ops.Mod(tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Float32, 3)) }, tensor.ErrShape, "Mod"},
		{"dtypes", func() { ops.Mod(tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Int32, 2)) }, tensor.ErrDType, "Mod"},
		{"nil", func() { ops.FloorDiv(nil, tensor.Zeros(tensor.Float32, 2)) }, tensor.ErrArity, "FloorDiv"},
	})
}
