package cpu

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// ulps is the distance between two float32s in units in the last place.
func ulps(a, b float32) int64 {
	ia, ib := int64(int32(math.Float32bits(a))), int64(int32(math.Float32bits(b)))
	if ia < 0 {
		ia = math.MinInt32 - ia
	}
	if ib < 0 {
		ib = math.MinInt32 - ib
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

func tanh32(x float32) float32 {
	o := []float32{0}
	tanh32Loop(o, []float32{x})
	return o[0]
}

func TestFastMath32(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(float32) float32
		ref  func(float64) float64
		lo   float32
		hi   float32
	}{
		{"exp32", exp32, math.Exp, -110, 90},
		{"tanh32", tanh32, math.Tanh, -12, 12},
	} {
		worst, at := int64(0), float32(0)
		check := func(x float32) {
			want := float32(c.ref(float64(x)))
			if d := ulps(c.f(x), want); d > worst {
				worst, at = d, x
			}
		}
		// Every float32 in the range would be 2^31 points; a dense grid plus
		// every float32 near zero and near the branch points covers it.
		const steps = 2_000_000
		for i := range steps + 1 {
			check(c.lo + (c.hi-c.lo)*float32(i)/steps)
		}
		for _, x0 := range []float32{0, 0.55, -0.55, 9.1, -9.1, expMax32, expMin32} {
			x := x0
			for range 5000 {
				check(x)
				x = math.Nextafter32(x, float32(math.Inf(1)))
			}
			x = x0
			for range 5000 {
				check(x)
				x = math.Nextafter32(x, float32(math.Inf(-1)))
			}
		}
		if worst > 1 {
			t.Errorf("%s: %d ulps at %v: got %v, want %v", c.name, worst, at, c.f(at), float32(c.ref(float64(at))))
		}
		for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30, 100, -100, 1e-45} {
			if got, want := c.f(x), float32(c.ref(float64(x))); got != want {
				t.Errorf("%s(%v) = %v, want %v", c.name, x, got, want)
			}
		}
		if nan := c.f(float32(math.NaN())); nan == nan {
			t.Errorf("%s(NaN) = %v", c.name, nan)
		}
	}
	if z := tanh32(float32(math.Copysign(0, -1))); z != 0 || !math.Signbit(float64(z)) {
		t.Errorf("tanh32(-0) = %v, want -0", z)
	}
}

// TestTanhVectorPath runs tanh32Loop over whole slices (the AVX2 kernel
// where the CPU has it, the scalar code on the tail and elsewhere) against
// math.Tanh: within 2 ulp everywhere (the kernel's documented bound; the
// scalar code alone is within 1), exact at the special values.
func TestTanhVectorPath(t *testing.T) {
	const steps = 1 << 20
	x := make([]float32, 0, steps+64)
	for i := range steps {
		x = append(x, -12+24*float32(i)/steps)
	}
	for _, x0 := range []float32{0, 0.0625, -0.0625, 0.55, -0.55, 9.01, -9.01, 9.1, -9.1} {
		v := x0
		for range 2000 {
			x = append(x, v)
			v = math.Nextafter32(v, float32(math.Inf(1)))
		}
	}
	x = append(x, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30, 100, -100, 1e-45, float32(math.Copysign(0, -1)))
	o := make([]float32, len(x))
	tanh32Loop(o, x)
	worst := int64(0)
	for i, v := range x {
		want := float32(math.Tanh(float64(v)))
		d := ulps(o[i], want)
		worst = max(worst, d)
		if d > 2 || (v == 0 && math.Signbit(float64(o[i])) != math.Signbit(float64(v))) {
			t.Fatalf("tanh(%v) = %v, want %v (%d ulps)", v, o[i], want, d)
		}
	}
	t.Logf("worst error %d ulp over %d values", worst, len(x))
	nan := []float32{1, float32(math.NaN()), 2, 3, 4, 5, 6, 7, 8}
	tanh32Loop(nan, nan) // in place, NaN in the vector part
	if nan[1] == nan[1] || nan[0] != float32(math.Tanh(1)) {
		t.Errorf("in place with NaN: %v", nan)
	}
}

// The float32-lane exp and sigmoid kernels (through exp32Loop and
// sigmoid32Loop, whose tails use the scalar code) against float64
// references over a dense sweep of their whole ranges and around the
// clamping points: within 2 ulp, exact at the special values.
func TestExpVectorPath(t *testing.T) {
	testVectorPath(t, "exp", exp32Loop, math.Exp, -110, 90, []float32{0, expMax32, expMin32, -87.33655, -88, 88})
}

func TestSigmoidVectorPath(t *testing.T) {
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	testVectorPath(t, "sigmoid", sigmoid32Loop, sig, -110, 30, []float32{0, -expMin32, expMin32, -87.33655, 17})
}

// The erf kernel over [-5, 5] and around its joins (1, 3.92) and zero:
// within 2 ulp, ±1 beyond 3.92, tiny and denormal inputs kept.
func TestErfVectorPath(t *testing.T) {
	testVectorPath(t, "erf", erf32Loop, math.Erf, -5, 5, []float32{0, 1, 3.92, 1e-20, 0.5, 2})
}

// Gelu in float32 (one pass, Φ by the vector kernel) against float64 over
// [-16, 16] and every binade of tiny inputs: within 2 ulp for x >= 0, 8
// ulp down to -12.5 (the lower tail of Φ, where five roundings add up),
// and below, where Φ(x) nears the denormals, 16 ulp (absolute errors under
// 1e-43); -0 below -14.2 and at -Inf, x above 14.2, NaN and -0 kept.
func TestGeluFloat32(t *testing.T) {
	ref := func(v float64) float64 { return v * 0.5 * math.Erfc(-v/math.Sqrt2) }
	const n = 1 << 21
	xs := make([]float32, 0, n+400)
	for i := range n {
		xs = append(xs, -16+32*float32(i)/n)
	}
	for e := -140; e < 0; e++ {
		xs = append(xs, float32(math.Ldexp(1.3, e)), -float32(math.Ldexp(1.3, e)))
	}
	inf := float32(math.Inf(1))
	xs = append(xs, inf, -inf, float32(math.Copysign(0, -1)))
	got := make([]float32, len(xs))
	gelu32Loop(got, xs)
	worst, at, worstPos, worstTail := int64(0), float32(0), int64(0), int64(0)
	for i, v := range xs {
		want := float32(ref(float64(v)))
		if math.IsInf(float64(v), 0) {
			want = map[bool]float32{true: inf, false: 0}[v > 0]
		}
		d := ulps(got[i], want)
		switch {
		case v < -12.5:
			worstTail = max(worstTail, d)
		case d > worst:
			worst, at = d, v
		}
		if v >= 0 {
			worstPos = max(worstPos, d)
		}
	}
	if worst > 8 || worstPos > 2 || worstTail > 16 {
		t.Errorf("Gelu: %d ulp at %v; %d ulp for x >= 0, %d below -12.5", worst, at, worstPos, worstTail)
	}
	t.Logf("Gelu: worst %d ulp (at %v) from -12.5 up, %d ulp for x >= 0, %d below -12.5, over %d values",
		worst, at, worstPos, worstTail, len(xs))
	if g := got[len(got)-1]; g != 0 || !math.Signbit(float64(g)) {
		t.Errorf("Gelu(-0) = %v", g)
	}
	nan := []float32{1, float32(math.NaN()), 2, 3, 4, 5, 6, 7}
	gelu32Loop(nan, nan)
	if nan[1] == nan[1] {
		t.Errorf("Gelu(NaN) = %v", nan[1])
	}
}

func testVectorPath(t *testing.T, name string, f func(o, x []float32), ref func(float64) float64, lo, hi float32, near []float32) {
	const steps = 1 << 21
	x := make([]float32, 0, steps+8000)
	for i := range steps {
		x = append(x, lo+(hi-lo)*float32(i)/steps)
	}
	for _, x0 := range near {
		v := x0
		for range 500 {
			x = append(x, v, -v)
			v = math.Nextafter32(v, float32(math.Inf(1)))
		}
	}
	inf := float32(math.Inf(1))
	x = append(x, inf, -inf, 1e-30, -1e-30, 200, -200, 1e-45, float32(math.Copysign(0, -1)))
	for len(x)%8 != 0 {
		x = append(x, 0.5)
	}
	o := make([]float32, len(x))
	f(o, x)
	checkULPs(t, name, o, x, ref, 2)
	nan := []float32{1, float32(math.NaN()), 2, 3, 4, 5, 6, 7, 8}
	f(nan, nan)
	if nan[1] == nan[1] || nan[0] != float32(ref(1)) {
		t.Errorf("%s in place with NaN: %v", name, nan)
	}
}

// The float32-lane log kernel over every binade (normal and denormal),
// densely around 1, and at its special values: within 2 ulp of math.Log.
func TestLogVectorPath(t *testing.T) {
	var x []float32
	for e := -149; e < 128; e++ {
		base := math.Ldexp(1, e)
		for k := 0; k < 256; k++ {
			x = append(x, float32(base*(1+float64(k)/256)))
		}
	}
	for i := range 1 << 18 {
		x = append(x, 0.5+float32(i)/(1<<18)) // [0.5, 1.5): near 1 the result is small
	}
	for _, x0 := range []float32{1, 0x1.6a09e6p0, 0x1.6a09e8p0, 1.17549435e-38} {
		v := x0
		for range 300 {
			x = append(x, v)
			v = math.Nextafter32(v, 0)
		}
	}
	for len(x)%8 != 0 {
		x = append(x, 2)
	}
	o := make([]float32, len(x))
	log32Loop(o, x)
	checkULPs(t, "log", o, x, math.Log, 2)
	inf := float32(math.Inf(1))
	special := []float32{0, float32(math.Copysign(0, -1)), inf, -1, -inf, float32(math.NaN()), 1, 2, 4, 8}
	so := make([]float32, len(special))
	log32Loop(so, special)
	for i, v := range special[:5] {
		want := float32(math.Log(float64(v)))
		if so[i] != want && !(want != want && so[i] != so[i]) {
			t.Errorf("log(%v) = %v, want %v", v, so[i], want)
		}
	}
	if so[5] == so[5] || so[6] != 0 {
		t.Errorf("log(NaN) = %v, log(1) = %v", so[5], so[6])
	}
}

// The float32 kernels of the scalar-code ops against their float64
// functions over every binade of both signs (denormals included) up to
// 2^9, and Pow over a grid: within 1 ulp (2 where a vector kernel runs).
func TestFloat32ScalarFunctions(t *testing.T) {
	var xs []float32
	for e := -149; e < 9; e++ {
		for k := range 16 {
			v := math.Ldexp(1+float64(k)/16, e)
			xs = append(xs, float32(v), float32(-v))
		}
	}
	x := tensorOf(xs)
	for _, c := range []struct {
		name string
		op   func(*tensor.Tensor) *tensor.Tensor
		ref  func(float64) float64
		tol  int64
	}{
		{"Sin", ops.Sin, math.Sin, 1}, {"Cos", ops.Cos, math.Cos, 1}, {"Expm1", ops.Expm1, math.Expm1, 1},
		{"Log1p", ops.Log1p, math.Log1p, 1}, {"Erf", ops.Erf, math.Erf, 2}, {"Exp", ops.Exp, math.Exp, 2},
		{"Tanh", ops.Tanh, math.Tanh, 2}, {"Log", ops.Log, math.Log, 2},
	} {
		got := tensor.ToSlice[float32](c.op(x))
		for i, v := range xs {
			want := float32(c.ref(float64(v)))
			if want != want && got[i] != got[i] {
				continue
			}
			if d := ulps(got[i], want); d > c.tol {
				t.Errorf("%s(%v) = %v, want %v (%d ulps)", c.name, v, got[i], want, d)
				break
			}
		}
	}
	for _, a := range []float32{0.5, 1.5, 2, 3.7, 100, 1e-3, 7e10} {
		for _, b := range []float32{-3.5, -1, 0.5, 2, 3.3, 7, 0.1} {
			got := tensor.ToSlice[float32](ops.Pow(tensor.Scalar(a), tensor.Scalar(b)))[0]
			if want := float32(math.Pow(float64(a), float64(b))); ulps(got, want) > 1 {
				t.Errorf("Pow(%v, %v) = %v, want %v", a, b, got, want)
			}
		}
	}
}

func tensorOf(v []float32) *tensor.Tensor { return tensor.FromSlice(v) }

// Each tanh kernel on its own (tanh32Loop gives stanh8 only the blocks
// stanh16 leaves where the CPU has AVX-512): within 2 ulp on a sweep.
func TestTanhKernelsEach(t *testing.T) {
	const n = 1 << 16
	x := make([]float32, n)
	for i := range x {
		x[i] = -12 + 24*float32(i)/n
	}
	for _, k := range []struct {
		name string
		ok   bool
		f    func(dst, x *float32, n int)
	}{{"stanh8", haveVecKernels, stanh8}, {"stanh16", haveAVX512, stanh16}} {
		if !k.ok {
			continue
		}
		o := make([]float32, n)
		k.f(&o[0], &x[0], n)
		for i, v := range x {
			if d := ulps(o[i], float32(math.Tanh(float64(v)))); d > 2 {
				t.Fatalf("%s(%v) = %v (%d ulps)", k.name, v, o[i], d)
			}
		}
	}
}

// The sigmoid kernels, sixteen lanes and eight, give the same bits (the
// same steps) over a sweep past both ends of e^-|x|'s range, the
// subnormal results, ±0, ±∞ and NaN.
func TestSigmoidKernelsAgree(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512: ssigmoid16 never runs")
	}
	const n = 1 << 16
	x := make([]float32, n)
	for i := range x {
		x[i] = -120 + 240*float32(i)/n
	}
	copy(x, []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-45, -87.5, -103.9, -104})
	a, b := make([]float32, n), make([]float32, n)
	ssigmoid16(&a[0], &x[0], n)
	ssigmoid8(&b[0], &x[0], n)
	for i := range x {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("sigmoid(%v): sixteen lanes %v, eight %v", x[i], a[i], b[i])
		}
	}
}

// checkULPs fails the test where got[i], a float32 kernel's result for
// x[i], is more than bound ulps from ref in float64 rounded to float32, and
// logs the worst error of the sweep.
func checkULPs(t *testing.T, name string, got, x []float32, ref func(float64) float64, bound int64) {
	t.Helper()
	worst, at := int64(0), 0
	for i, v := range x {
		if d := ulps(got[i], float32(ref(float64(v)))); d > worst {
			worst, at = d, i
		}
	}
	t.Logf("%s: worst error %d ulp (at %v) over %d values", name, worst, x[at], len(x))
	if worst > bound {
		t.Errorf("%s(%v) = %v, want %v (%d ulps, bound %d)", name, x[at], got[at], float32(ref(float64(x[at]))), worst, bound)
	}
}

// GeluTanh and its gradient in float32 (the vector kernels) against
// float64 over [-10, 10]: within a few float32 roundings of max(1, |x|)
// absolute (where t nears -1, 1 + t cancels: PyTorch's float32 loses the
// same).
func TestGeluTanhFloat32(t *testing.T) {
	const n, k, a = 1 << 16, 0.7978845608028654, 0.044715
	xs, dy := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], dy[i] = -10+20*float32(i)/n, 1-float32(i%7)/3
	}
	got, grad := make([]float32, n), make([]float32, n)
	geluTanh32Loop(got, xs)
	geluTanhBlocks(grad, xs, dy, geluTanhGrad32)
	worst, worstGrad := 0.0, 0.0
	for i, v := range xs {
		x := float64(v)
		th := math.Tanh(k * (x + a*x*x*x))
		scale := math.Max(1, math.Abs(x))
		worst = math.Max(worst, math.Abs(float64(got[i])-0.5*x*(1+th))/scale)
		want := float64(dy[i]) * (0.5*(1+th) + 0.5*x*(1-th*th)*k*(1+3*a*x*x))
		worstGrad = math.Max(worstGrad, math.Abs(float64(grad[i])-want)/scale)
	}
	if worst > 3e-7 || worstGrad > 5e-7 {
		t.Errorf("GeluTanh: worst error %g of max(1, |x|), its gradient %g", worst, worstGrad)
	}
	t.Logf("GeluTanh: worst error %g of max(1, |x|), its gradient %g", worst, worstGrad)
}
