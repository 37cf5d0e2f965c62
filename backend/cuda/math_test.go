package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// mathInputs are special values, a sweep of magnitudes from the smallest
// subnormal to the largest float64, and a fine grid on [-10, 10].
func mathInputs() []float64 {
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, math.Inf(1), math.Inf(-1), math.NaN(),
		5e-324, 1e-310, math.MaxFloat64, -math.MaxFloat64, 709.78, 709.79, -745.1, -745.2, 22, -22, 5.9, -5.9,
		1 + 1e-15, 1 - 1e-16, 1e-20, -1e-20, math.Pi, math.Pi / 2, -math.Pi / 4, 1e5, -3e6}
	for e := -1074.0; e <= 1023; e += 7.3 {
		xs = append(xs, math.Exp2(e), -math.Exp2(e)*1.37)
	}
	for v := -10.0; v <= 10; v += 0.0137 {
		xs = append(xs, v)
	}
	return xs
}

// ulps is the distance from got to want in units of want's last place
// (0 when both are the same special or zero).
func ulps(got, want float64) float64 {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		if math.IsNaN(want) && math.IsNaN(got) {
			return 0
		}
		return math.Inf(1)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		if got == want {
			return 0
		}
		return math.Inf(1)
	case want == 0:
		if got == 0 && math.Signbit(got) == math.Signbit(want) {
			return 0
		}
		return math.Abs(got) / 5e-324
	}
	ulp := math.Nextafter(math.Abs(want), math.Inf(1)) - math.Abs(want)
	return math.Abs(got-want) / ulp
}

// The float64 math library of the GPU kernels agrees with Go's math
// package (internal/mathx's functions where math's err) over specials
// and the whole range, Atan2, Hypot and LogAddExp over pairs of specials: within a few ulps, or an
// absolute 1e-15 for gelu between -2.83 and 0, where Φ = (1 + erf)/2
// cancels (its lower tail, by erfc's continued fraction, is within ulps).
func TestMathFunctionsOnGPU(t *testing.T) {
	d := testGPU(t)
	xs := mathInputs()
	x := tensor.FromSlice(xs, len(xs))
	gelu := func(v float64) float64 {
		if p := 0.5 * math.Erfc(-v/math.Sqrt2); p > 0 || p != p {
			return v * p
		}
		return math.Copysign(0, -1)
	}
	sigmoid := func(v float64) float64 {
		if v >= 0 {
			return 1 / (1 + math.Exp(-v))
		}
		e := math.Exp(v)
		return e / (1 + e)
	}
	softplus := func(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }
	// GeluTanh as x·σ(2u), -0 at -∞ (0.5x(1 + tanh u) cancels where tanh u
	// nears -1).
	geluTanhRef := func(v float64) float64 {
		if math.IsInf(v, -1) {
			return math.Copysign(0, -1)
		}
		return v * sigmoid(2*0.7978845608028654*(v+0.044715*v*v*v))
	}
	for _, c := range []struct {
		name   string
		op     func(*tensor.Tensor) *tensor.Tensor
		ref    func(float64) float64
		ulps   float64
		abs    float64 // absolute error allowed besides
		within float64 // inputs beyond are not checked (sin, cos)
	}{
		{"exp", ops.Exp, mathx.Exp, 3, 0, 0},
		{"log", ops.Log, mathx.Log, 2, 0, 0},
		{"expm1", ops.Expm1, math.Expm1, 3, 0, 0},
		{"log1p", ops.Log1p, math.Log1p, 3, 0, 0},
		{"tanh", ops.Tanh, math.Tanh, 4, 0, 0},
		{"sigmoid", ops.Sigmoid, sigmoid, 4, 0, 0},
		{"softplus", ops.Softplus, softplus, 4, 0, 0},
		{"erf", ops.Erf, math.Erf, 8, 0, 0},
		{"gelu", ops.Gelu, gelu, 8, 1e-15, 0},
		{"gelutanh", ops.GeluTanh, geluTanhRef, 8, 1e-15, 0},
		{"sin", ops.Sin, math.Sin, 2, 1e-16, 0}, // Payne and Hanek's reduction from 2²⁸, as Go's from 2²⁹
		{"cos", ops.Cos, math.Cos, 2, 1e-16, 0},
		{"tan", ops.Tan, mathx.Tan, 3, 0, 0},
		{"asin", ops.Asin, mathx.Asin, 2, 0, 0},
		{"acos", ops.Acos, mathx.Acos, 2, 0, 0},
		{"atan", ops.Atan, math.Atan, 2, 0, 0},
		{"sinh", ops.Sinh, mathx.Sinh, 3, 0, 0},
		{"cosh", ops.Cosh, mathx.Cosh, 3, 0, 0},
		{"asinh", ops.Asinh, math.Asinh, 3, 0, 0},
		{"acosh", ops.Acosh, math.Acosh, 3, 0, 0},
		{"atanh", ops.Atanh, math.Atanh, 3, 0, 0},
		{"log2", ops.Log2, mathx.Log2, 0, 0, 0},
		{"log10", ops.Log10, mathx.Log10, 0, 0, 0},
		{"exp2", ops.Exp2, math.Exp2, 2, 0, 0},
		{"erfinv", ops.Erfinv, math.Erfinv, 4, 0, 0},
	} {
		got := tensor.ToSlice[float64](onHost(t, c.op(onGPU(t, d, x))))
		worst, at := 0.0, 0.0
		for i, v := range xs {
			if c.within > 0 && math.Abs(v) > c.within {
				continue
			}
			want := c.ref(v)
			u := ulps(got[i], want)
			if c.abs > 0 && math.Abs(got[i]-want) <= c.abs {
				u = 0
			}
			if u > worst {
				worst, at = u, v
			}
			if u > c.ulps {
				t.Errorf("%s(%v) = %v, want %v (%.1f ulps)", c.name, v, got[i], want, u)
			}
		}
		t.Logf("%s: worst %.2f ulps (at %v)", c.name, worst, at)
	}
	// Atan2 and Hypot over every pair of a set of values (C's special
	// cases: signed zeros, infinities, NaN).
	pairs := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, -3, 1e-300, -1e300, 5e-324, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), 0.7}
	var ys, xs2 []float64
	for _, a := range pairs {
		for _, b := range pairs {
			ys, xs2 = append(ys, a), append(xs2, b)
		}
	}
	yt, xt := onGPU(t, d, tensor.FromSlice(ys, len(ys))), onGPU(t, d, tensor.FromSlice(xs2, len(xs2)))
	for _, c := range []struct {
		name string
		op   func(a, b *tensor.Tensor) *tensor.Tensor
		ref  func(a, b float64) float64
		ulps float64
	}{{"atan2", ops.Atan2, math.Atan2, 2}, {"hypot", ops.Hypot, math.Hypot, 2}, {"logaddexp", ops.LogAddExp, mathx.LogAddExp, 2}} {
		got := tensor.ToSlice[float64](onHost(t, c.op(yt, xt)))
		for i := range ys {
			if want := c.ref(ys[i], xs2[i]); ulps(got[i], want) > c.ulps {
				t.Errorf("%s(%v, %v) = %v, want %v", c.name, ys[i], xs2[i], got[i], want)
			}
		}
	}
	// Pow over every pair of a set of bases and exponents, specials
	// included.
	bases := []float64{0, math.Copysign(0, -1), 1, -1, 2, -2, 0.5, -0.5, 10, -8, 1e-300, 1e300, math.Inf(1), math.Inf(-1), math.NaN(), 3.7, 0.999}
	exps := []float64{0, math.Copysign(0, -1), 1, -1, 2, -2, 3, -3, 0.5, -0.5, 1.0 / 3, 1e10, -1e10, 1e20, math.Inf(1), math.Inf(-1), math.NaN(), 2.5, 307, -300}
	var bx, ey []float64
	for _, b := range bases {
		for _, e := range exps {
			bx, ey = append(bx, b), append(ey, e)
		}
	}
	got := tensor.ToSlice[float64](onHost(t, ops.Pow(onGPU(t, d, tensor.FromSlice(bx, len(bx))), onGPU(t, d, tensor.FromSlice(ey, len(ey))))))
	for i := range bx {
		want := math.Pow(bx[i], ey[i])
		// exp(y·log x) carries log's rounding times |y·log x| (at most
		// about 745): a relative 1e-13.
		if u := ulps(got[i], want); u > 1 && !(math.Abs(got[i]-want) <= 1e-13*math.Abs(want)) {
			t.Errorf("pow(%v, %v) = %v, want %v", bx[i], ey[i], got[i], want)
		}
	}
}

// GeluTanh and its gradient in float32 (and so the half types) compute in
// float32 as x·σ(2u) (kernels' gelu32.go): within 4 + 2|2u| float32
// roundings, relative, of the float64 values at every input, the far
// negative tail (where 1 + tanh u cancels) and the specials included; the
// gradient, which crosses 0 near x = −0.75, within twice that of its
// terms' magnitude.
func TestGeluTanhFloat32OnGPU(t *testing.T) {
	d := testGPU(t)
	const k, a = 0.7978845608028654, 0.044715
	var xs, dys []float32
	for _, v := range mathInputs() {
		if f := float32(v); !math.IsInf(float64(f), 0) || math.IsInf(v, 0) {
			xs, dys = append(xs, f), append(dys, 1-float32(len(xs)%7)/3)
		}
	}
	for v := float32(-12); v < -5; v += 0.001 { // the tail, finely
		xs, dys = append(xs, v), append(dys, 1)
	}
	x, dy := onGPU(t, d, tensor.FromSlice(xs, len(xs))), onGPU(t, d, tensor.FromSlice(dys, len(dys)))
	got := tensor.ToSlice[float32](onHost(t, ops.GeluTanh(x)))
	tp := tape.New()
	tp.Watch(x)
	grad := tensor.ToSlice[float32](onHost(t, tp.Gradient(ops.Sum(ops.Mul(ops.GeluTanh(x), dy)), x)[0])) // GeluTanhGrad(x, dy)
	// tiny is the absolute error allowed besides: where e^(−2u)
	// overflows (x below about −10.1) σ is 0 and the results ±0, where
	// they are about 1e-37.
	const ulp32, tiny = 1.0 / (1 << 23), 0x1p-100
	worst, worstGrad := 0.0, 0.0
	for i, f := range xs {
		v := float64(f)
		u := k * (v + a*v*v*v)
		s := 1 / (1 + math.Exp(-2*u)) // σ(2u) = (1 + tanh u)/2, no cancelling
		want := v * s
		if math.IsInf(v, -1) {
			want = math.Copysign(0, -1) // the limit, not −∞·0, as the float64 kernel and the CPU
		}
		if math.IsNaN(want) != math.IsNaN(float64(got[i])) {
			t.Errorf("GeluTanh(%v) = %v, want %v", f, got[i], want)
			continue
		}
		// e^(−2u) carries u's rounding times |2u| (the exponent's
		// absolute error): far out in the negative tail, tens of ulps,
		// where 1 + tanh u in float32 (PyTorch's) loses every digit.
		bound := 4 + 2*math.Abs(2*u)
		if e := math.Abs(float64(got[i]) - want); !(e <= bound*ulp32*math.Abs(want)+tiny) && got[i] != float32(want) && !math.IsNaN(want) {
			t.Errorf("GeluTanh(%v) = %v, want %v (%.1f ulps, bound %.1f)", f, got[i], want, e/(ulp32*math.Abs(want)), bound)
		} else if math.Abs(want) > tiny && !math.IsInf(want, 0) {
			worst = math.Max(worst, e/(ulp32*math.Abs(want))/bound)
		}
		if math.IsNaN(v) {
			if !math.IsNaN(float64(grad[i])) {
				t.Errorf("GeluTanhGrad(NaN, %v) = %v, want NaN", dys[i], grad[i])
			}
			continue
		}
		if math.IsInf(v, 0) { // the gradient's limits, 1 and 0
			if want := dys[i]; v > 0 && grad[i] != want || v < 0 && grad[i] != 0 {
				t.Errorf("GeluTanhGrad(%v, %v) = %v, want %v (0 for −∞)", v, dys[i], grad[i], want)
			}
			continue
		}
		slope := 2 * v * k * (1 + 3*a*v*v) * (1 - s)
		wantGrad, scale := float64(dys[i])*s*(1+slope), math.Abs(float64(dys[i]))*s*(1+math.Abs(slope))
		if s == 0 { // σ underflowed: so did the gradient
			wantGrad, scale = 0, 0
		}
		if e := math.Abs(float64(grad[i]) - wantGrad); !(e <= 2*bound*ulp32*scale+tiny) { // NaN fails
			t.Errorf("GeluTanhGrad(%v, %v) = %v, want %v", f, dys[i], grad[i], wantGrad)
		} else if scale > tiny {
			worstGrad = math.Max(worstGrad, e/(ulp32*scale)/(2*bound))
		}
	}
	t.Logf("GeluTanh: worst error %.2f of its bound; its gradient's %.2f", worst, worstGrad)
}

// Gelu and its gradient in float32 (and so the half types) compute in
// float32 by the CPU's Φ (kernels' gelu32.go): within 12 float32 ulps of
// the float64 values (6 on the emulator, whose ex2.approx is exact; the
// hardware's errs by up to 2⁻²²·⁵), 20 below x = -12.5, where Φ nears
// float32's least values, and 1e-43 absolute besides (some seventy
// subnormal spacings, where e^(-x²/2) flushes), over the math inputs,
// Φ's joins (±0.75, ±14.2) and the negative tail finely; the gradient,
// Φ + x·φ, which crosses 0 near x = -0.75, in ulps of its terms'
// magnitude; -0 at -∞, the gradient's 1 and 0 at ±∞, NaN kept.
func TestGeluFloat32OnGPU(t *testing.T) {
	d := testGPU(t)
	var xs []float32
	for _, v := range mathInputs() {
		if f := float32(v); !math.IsInf(float64(f), 0) || math.IsInf(v, 0) {
			xs = append(xs, f)
		}
	}
	for v := float32(-16); v < 4; v += 0.0037 {
		xs = append(xs, v)
	}
	for _, j := range []float32{0.75, -0.75, 14.2, -14.2} {
		for i, v := 0, j; i < 8; i, v = i+1, math.Nextafter32(v, 0) {
			xs = append(xs, v, math.Nextafter32(j, -2*j))
		}
	}
	x := onGPU(t, d, tensor.FromSlice(xs, len(xs)))
	got := tensor.ToSlice[float32](onHost(t, ops.Gelu(x)))
	tp := tape.New()
	tp.Watch(x)
	grad := tensor.ToSlice[float32](onHost(t, tp.Gradient(ops.Sum(ops.Gelu(x)), x)[0])) // GeluGrad(x, 1)
	phi := func(v float64) float64 { return 0.5 * math.Erfc(-v/math.Sqrt2) }
	worst, worstGrad := 0.0, 0.0
	// check measures got against want in float32 ulps of scale (≥ |want|).
	check := func(what string, v float64, got float32, want, scale float64) float64 {
		bound := 12.0
		if v < -12.5 {
			bound = 20
		}
		w32, s32 := float32(want), float32(scale)
		u := math.Abs(float64(got)-float64(w32)) / float64(math.Nextafter32(s32, float32(math.Inf(1)))-s32)
		switch {
		case math.IsNaN(want) || math.IsInf(want, 0):
			u = map[bool]float64{true: 0, false: math.Inf(1)}[got == w32 || got != got && want != want]
		case got == w32 || math.Abs(float64(got)-float64(w32)) <= 1e-43:
			u = 0
		}
		if u > bound {
			t.Errorf("%s(%v) = %v, want %v (%.1f ulps)", what, v, got, w32, u)
		}
		return u
	}
	for i, f := range xs {
		v := float64(f)
		want, slope := v*phi(v), phi(v)+v*math.Exp(-v*v/2)/math.Sqrt(2*math.Pi)
		switch {
		case math.IsInf(v, -1):
			want, slope = math.Copysign(0, -1), 0
		case math.IsInf(v, 1):
			slope = 1
		}
		terms := math.Abs(phi(v)) + math.Abs(v*math.Exp(-v*v/2)/math.Sqrt(2*math.Pi))
		if math.IsInf(v, 0) {
			terms = 1
		}
		worst = max(worst, check("Gelu", v, got[i], want, math.Abs(want)))
		worstGrad = max(worstGrad, check("GeluGrad", v, grad[i], slope, terms))
	}
	t.Logf("Gelu: worst %.1f ulps, its gradient %.1f, over %d inputs", worst, worstGrad, len(xs))
}

// ulps32 is got's distance from want (float32s) in want's float32 ulps:
// 0 where both are the same special or equal, zeros' signs compared.
func ulps32(got, want float32) float64 {
	switch {
	case want != want || got != got:
		return map[bool]float64{true: 0, false: math.Inf(1)}[want != want && got != got]
	case got == want:
		if got == 0 && math.Signbit(float64(got)) != math.Signbit(float64(want)) {
			return math.Inf(1)
		}
		return 0
	case math.IsInf(float64(want), 0) || math.IsInf(float64(got), 0):
		return math.Inf(1)
	}
	w := float32(math.Abs(float64(want)))
	return math.Abs(float64(got)-float64(want)) / float64(math.Nextafter32(w, float32(math.Inf(1)))-w)
}

// Exp, Tanh, Sigmoid, Erf, Log, Expm1, Log1p and Softplus in float32
// (and so the half types) compute in float32 on the carried exponential
// (kernels' math32.go): within 6 float32 ulps of the float64 values
// rounded over the math inputs, tanh's join (0.55) and a fine grid (the
// emulator's ex2.approx is exact, 3 ulps worst here; the hardware's errs
// by up to 2⁻²²·⁵, three ulps more); specials, -0 and NaN kept.
func TestFloat32MathOnGPU(t *testing.T) {
	d := testGPU(t)
	var xs []float32
	for _, v := range mathInputs() {
		xs = append(xs, float32(v))
	}
	for v := float32(-110); v < 90; v += 0.0173 {
		xs = append(xs, v)
	}
	for i, v := 0, float32(0.55); i < 16; i, v = i+1, math.Nextafter32(v, 0) {
		xs = append(xs, v, -v, math.Nextafter32(0.55, 1)+float32(i)*1e-7)
	}
	x := onGPU(t, d, tensor.FromSlice(xs, len(xs)))
	sigmoid := func(v float64) float64 {
		if v >= 0 {
			return 1 / (1 + math.Exp(-v))
		}
		return math.Exp(v) / (1 + math.Exp(v))
	}
	for _, c := range []struct {
		name string
		op   func(*tensor.Tensor) *tensor.Tensor
		ref  func(float64) float64
	}{{"exp", ops.Exp, math.Exp}, {"tanh", ops.Tanh, math.Tanh}, {"sigmoid", ops.Sigmoid, sigmoid}, {"erf", ops.Erf, math.Erf}, {"log", ops.Log, mathx.Log},
		{"expm1", ops.Expm1, math.Expm1}, {"log1p", ops.Log1p, math.Log1p},
		{"softplus", ops.Softplus, func(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }}} {
		got := tensor.ToSlice[float32](onHost(t, c.op(x)))
		worst, at := 0.0, float32(0)
		for i, v := range xs {
			want := float32(c.ref(float64(v)))
			u := ulps32(got[i], want)
			if got[i] != want && math.Abs(float64(got[i])-float64(want)) <= 0x1p-140 {
				u = 0 // the subnormals' last bits
			}
			if u > 6 {
				t.Errorf("%s(%v) = %v, want %v (%.1f ulps)", c.name, v, got[i], want, u)
			}
			if u > worst {
				worst, at = u, v
			}
		}
		t.Logf("%s: worst %.1f float32 ulps (at %v)", c.name, worst, at)
	}
}
