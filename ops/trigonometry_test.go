package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The trigonometric, hyperbolic and base-2 and -10 functions: values
// against Go's math package at ordinary points, exactly where the result
// is exact (the logarithms at their bases' powers, 2^x at integers,
// Atan2's quadrants and signed zeros), the ends of their domains, and
// float32 rounded once from float64.
func TestTrigonometryAndBases(t *testing.T) {
	x := tensor.FromSlice([]float64{-0.9, -0.25, 0.5, 0.75})
	for _, c := range []struct {
		name string
		op   func(T) T
		ref  func(float64) float64
		x    T
	}{
		{"tan", ops.Tan, math.Tan, x}, {"asin", ops.Asin, math.Asin, x}, {"acos", ops.Acos, math.Acos, x},
		{"atan", ops.Atan, math.Atan, x}, {"sinh", ops.Sinh, math.Sinh, x}, {"cosh", ops.Cosh, math.Cosh, x},
		{"asinh", ops.Asinh, math.Asinh, x}, {"atanh", ops.Atanh, math.Atanh, x}, {"exp2", ops.Exp2, math.Exp2, x},
		{"acosh", ops.Acosh, math.Acosh, tensor.FromSlice([]float64{1, 1.5, 10, 1e10})},
		{"log2", ops.Log2, math.Log2, tensor.FromSlice([]float64{0.3, 3, 1e10, 7e-300})},
		{"log10", ops.Log10, math.Log10, tensor.FromSlice([]float64{0.3, 3, 1e10, 7e-300})},
	} {
		in := tensor.ToSlice[float64](c.x)
		want := make([]float64, len(in))
		for i, v := range in {
			want[i] = c.ref(v)
		}
		check(t, c.name, c.op(c.x), c.x.Shape(), want)
		x32 := ops.Cast(c.x, tensor.Float32)
		f32 := tensor.ToSlice[float32](ops.Cast(c.op(ops.Cast(x32, tensor.Float64)), tensor.Float32))
		if got := tensor.ToSlice[float32](c.op(x32)); !equalBits32(got, f32) {
			t.Errorf("%s float32 = %v, want float64's rounded %v", c.name, got, f32)
		}
	}
	exact := func(name string, got T, want []float64) {
		t.Helper()
		for i, g := range tensor.ToSlice[float64](got) {
			if g != want[i] && !(math.IsNaN(g) && math.IsNaN(want[i])) || math.Signbit(g) != math.Signbit(want[i]) && !math.IsNaN(g) {
				t.Errorf("%s element %d = %v, want %v", name, i, g, want[i])
			}
		}
	}
	exact("log2", ops.Log2(tensor.FromSlice([]float64{1, 8, 0x1p-1074, 0x1p1023, 0, -1, math.Inf(1)})), []float64{0, 3, -1074, 1023, math.Inf(-1), math.NaN(), math.Inf(1)})
	exact("log10", ops.Log10(tensor.FromSlice([]float64{1, 1000, 1e15, 1e22, 0.1})), []float64{0, 3, 15, 22, -1})
	exact("exp2", ops.Exp2(tensor.FromSlice([]float64{0, 10, -1074, 1023, 1024, math.Inf(-1)})), []float64{1, 1024, 0x1p-1074, 0x1p1023, math.Inf(1), 0})
	exact("asin", ops.Asin(tensor.FromSlice([]float64{1, -1, math.Copysign(0, -1), 1.5})), []float64{math.Pi / 2, -math.Pi / 2, math.Copysign(0, -1), math.NaN()})
	exact("acos", ops.Acos(tensor.FromSlice([]float64{1, -1, 0})), []float64{0, math.Pi, math.Pi / 2})
	exact("atanh", ops.Atanh(tensor.FromSlice([]float64{1, -1, 2})), []float64{math.Inf(1), math.Inf(-1), math.NaN()})
	e355 := math.Exp(355)
	check(t, "cosh near the range's end", ops.Cosh(tensor.FromSlice([]float64{710, -710})), tensor.Shape{2}, []float64{e355 / 2 * e355, e355 / 2 * e355})
	check(t, "sinh near the range's end", ops.Sinh(tensor.FromSlice([]float64{710, -710})), tensor.Shape{2}, []float64{e355 / 2 * e355, -e355 / 2 * e355})
	z, nz := 0.0, math.Copysign(0, -1)
	y := tensor.FromSlice([]float64{1, 1, -1, -1, z, nz, z, nz, math.Inf(1), 1})
	xq := tensor.FromSlice([]float64{1, -1, 1, -1, z, z, nz, nz, math.Inf(-1), 0})
	exact("atan2", ops.Atan2(y, xq), []float64{math.Pi / 4, 3 * math.Pi / 4, -math.Pi / 4, -3 * math.Pi / 4, z, nz, math.Pi, -math.Pi, 3 * math.Pi / 4, math.Pi / 2})
	exact("hypot", ops.Hypot(tensor.FromSlice([]float64{3, 1e300, math.NaN(), 0}), tensor.FromSlice([]float64{4, 1e300, math.Inf(-1), nz})),
		[]float64{5, math.Hypot(1e300, 1e300), math.Inf(1), 0})
	inf := math.Inf(1)
	exact("logaddexp", ops.LogAddExp(tensor.FromSlice([]float64{-inf, inf, 0, 1000, -1000, inf, math.NaN()}), tensor.FromSlice([]float64{-inf, inf, 0, 1000, 0, -inf, 1})),
		[]float64{-inf, inf, math.Ln2, 1000 + math.Ln2, 0, inf, math.NaN()})
	check(t, "logaddexp", ops.LogAddExp(tensor.FromSlice([]float64{1, -3}), tensor.FromSlice([]float64{2, 0.5})), tensor.Shape{2},
		[]float64{math.Log(math.E + math.E*math.E), math.Log(math.Exp(-3) + math.Exp(0.5))})
	check(t, "atan2 broadcast", ops.Atan2(tensor.FromSlice([]float64{1, 2}, 2, 1), tensor.Scalar(2.0)), tensor.Shape{2, 1}, []float64{math.Atan2(1, 2), math.Atan2(2, 2)})
}

// equalBits32 reports whether got and want agree, NaN matching NaN.
func equalBits32(got, want []float32) bool {
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			return false
		}
	}
	return true
}

// Erfinv inverts Erf (erf(erfinv(x)) within 1e-15 of x, erfinv(erf(y))
// within a few roundings of x times the condition number, √π/2·e^(y²)), is ±∞ at ±1 and NaN beyond, keeps -0, and rounds float64's
// value once in float32; its gradient is √π/2·e^(y²).
func TestErfinv(t *testing.T) {
	var xs []float64
	for v := -0.999; v < 1; v += 0.0037 {
		xs = append(xs, v)
	}
	xs = append(xs, 1e-300, -1e-20, 0.85, math.Nextafter(0.85, 1), 1-1e-12, -(1 - 1e-15))
	y := tensor.ToSlice[float64](ops.Erfinv(tensor.FromSlice(xs)))
	for i, x := range xs {
		if back := math.Erf(y[i]); math.Abs(back-x) > 1e-15*math.Max(math.Abs(x), 1e-300) {
			t.Errorf("erf(erfinv(%v)) = %v", x, back)
		}
	}
	for _, v := range []float64{-3, -0.5, 1e-3, 2.5} {
		x := math.Erf(v)
		cond := math.Sqrt(math.Pi) / 2 * math.Exp(v*v) * math.Abs(x)
		if got := tensor.ToSlice[float64](ops.Erfinv(tensor.FromSlice([]float64{x})))[0]; math.Abs(got-v) > 4*0x1p-52*cond+1e-15*math.Abs(v) {
			t.Errorf("erfinv(erf(%v)) = %v", v, got)
		}
	}
	special := ops.Erfinv(tensor.FromSlice([]float64{1, -1, 1.5, -2, math.NaN(), math.Copysign(0, -1)}))
	got := tensor.ToSlice[float64](special)
	if !math.IsInf(got[0], 1) || !math.IsInf(got[1], -1) || !math.IsNaN(got[2]) || !math.IsNaN(got[3]) || !math.IsNaN(got[4]) || !math.Signbit(got[5]) || got[5] != 0 {
		t.Errorf("erfinv at 1, -1, 1.5, -2, NaN, -0 = %v", got)
	}
	x32 := ops.Cast(tensor.FromSlice(xs), tensor.Float32)
	want := tensor.ToSlice[float32](ops.Cast(ops.Erfinv(ops.Cast(x32, tensor.Float64)), tensor.Float32))
	if g := tensor.ToSlice[float32](ops.Erfinv(x32)); !equalBits32(g, want) {
		t.Errorf("float32 erfinv is not float64's rounded once")
	}
	x := tensor.FromSlice([]float64{-0.6, 0.2, 0.95})
	tp := tape.New()
	tp.Watch(x)
	g := tensor.ToSlice[float64](tp.Gradient(ops.Sum(ops.Erfinv(x)), x)[0])
	for i, v := range tensor.ToSlice[float64](x) {
		e := math.Erfinv(v)
		if want := math.Sqrt(math.Pi) / 2 * math.Exp(e*e); math.Abs(g[i]-want) > 1e-14*want {
			t.Errorf("erfinv'(%v) = %v, want %v", v, g[i], want)
		}
	}
}
