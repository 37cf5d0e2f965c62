package cpu

import (
	"github.com/chewxy/math32"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/internal/mathx"
)

// trigInputs are float32 arguments of every magnitude (subnormal to the
// largest), the float32s nearest the multiples of π/2 up to 2²⁵ (where
// sin, cos or tan is smallest or largest), log1p's domain near -1 and 0
// and its edges, 2²⁸ and its neighbours (the trigonometric kernel's range
// ends there), ±0, infinities and NaN, in an order
// that puts the ones the kernel leaves in the middle of groups of four.
func trigInputs() []float32 {
	r := rand.New(rand.NewPCG(3, 4))
	var xs []float32
	for range 20000 {
		xs = append(xs, float32(math.Ldexp(1+r.Float64(), r.IntN(276)-149)*float64(1-2*r.IntN(2))))
	}
	for k := 1.0; k < 1<<25; k *= 1.37 {
		v := float32(math.Round(k) * math.Pi / 2)
		xs = append(xs, v, math.Nextafter32(v, 0), math.Nextafter32(v, float32(math.Inf(1))), -v)
	}
	for range 4000 { // log1p's domain near -1 and 0
		xs = append(xs, -1+float32(math.Ldexp(r.Float64(), -r.IntN(24))), float32(math.Ldexp(r.Float64()-0.5, -r.IntN(40))))
	}
	for v := float32(-120); v < 100; v += 0.0371 { // expm1's range, its ends included
		xs = append(xs, v)
	}
	xs = append(xs, 88.72, 88.73, -103.9, -0.5, 0.5, math.Nextafter32(0.5, 0), -1, -2, 0x1p-29, -0x1p-29, 0x1p-30, 0, float32(math.Copysign(0, -1)), 1<<28, math.Nextafter32(1<<28, 0), -(1 << 28),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, 1e-45, 3)
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs
}

// Sin, Cos, Tan, Atan, Log1p, Log2, Log10, Expm1 and Softplus of float32
// (the AVX2 kernels strig4, satan4, slogs4, sexpm1_4 and ssoftplus4 in
// float64 lanes, the rest
// through the float64 functions): the float64 functions' values rounded
// once, bit for bit but for the rare argument whose true value lies
// within about 2⁻⁵⁰ of a rounding boundary (then an ulp), ±0 kept, NaN
// where the function is; the logarithms exact at their bases' powers.
func TestTrigLoopsRoundTheFloat64Functions(t *testing.T) {
	xs := trigInputs()
	if haveVecKernels { // the kernel takes ordinary arguments whole
		x, o := make([]float32, 4096), make([]float32, 4096)
		for i := range x {
			x[i] = float32(i) - 2048.5
		}
		if n := strig4(&o[0], &x[0], len(x), trigSin); n != len(x) {
			t.Fatalf("strig4 did %d of %d", n, len(x))
		}
		if n := satan4(&o[0], &x[0], len(x)); n != len(x) {
			t.Fatalf("satan4 did %d of %d", n, len(x))
		}
		for i := range x {
			x[i] = float32(i)/1024 - 0.999
		}
		if n := slogs4(&o[0], &x[0], len(x), logOnePlus); n != len(x) {
			t.Fatalf("slogs4 (log1p) did %d of %d", n, len(x))
		}
		for i := range x {
			x[i] = float32(i)/1024 + 1e-3
		}
		for _, mode := range []int{logTwo, logTen} {
			if n := slogs4(&o[0], &x[0], len(x), mode); n != len(x) {
				t.Fatalf("slogs4 mode %d did %d of %d", mode, n, len(x))
			}
		}
		if n := sexpm1_4(&o[0], &x[0], len(x)); n != len(x) {
			t.Fatalf("sexpm1_4 did %d of %d", n, len(x))
		}
		if n := ssoftplus4(&o[0], &x[0], len(x)); n != len(x) {
			t.Fatalf("ssoftplus4 did %d of %d", n, len(x))
		}
	}
	positive := make([]float32, len(xs)) // the logarithms' domain, 0 and the specials besides
	for i, v := range xs {
		positive[i] = float32(math.Abs(float64(v)))
	}
	for _, c := range []struct {
		name string
		loop func(o, x []float32)
		f    func(float64) float64
	}{
		{"sin", trigLoop(trigSin, math.Sin), math.Sin}, {"cos", trigLoop(trigCos, math.Cos), math.Cos},
		{"tan", trigLoop(trigTan, mathx.Tan), mathx.Tan},
		{"atan", lanesLoop(satan4, math.Atan), math.Atan}, {"log1p", logLoop(logOnePlus, math.Log1p), math.Log1p},
		{"log2", logLoop(logTwo, mathx.Log2), mathx.Log2}, {"log10", logLoop(logTen, mathx.Log10), mathx.Log10},
		{"expm1", lanesLoop(sexpm1_4, math.Expm1), math.Expm1}, {"softplus", lanesLoop(ssoftplus4, softplus64), softplus64},
	} {
		in := xs
		if c.name == "log2" || c.name == "log10" {
			in = positive
		}
		o := make([]float32, len(in))
		c.loop(o, in)
		off := 0
		for i, v := range in {
			want := float32(c.f(float64(v)))
			switch d := ulps(o[i], want); {
			case want != want || o[i] != o[i]:
				if want == want || o[i] == o[i] {
					t.Fatalf("%s(%v) = %v, want %v", c.name, v, o[i], want)
				}
			case d > 1 || want == 0 && math.Signbit(float64(want)) != math.Signbit(float64(o[i])):
				t.Fatalf("%s(%v) = %v, want %v (%d ulps)", c.name, v, o[i], want, d)
			case d == 1:
				off++
			}
		}
		if off > len(xs)/10000 {
			t.Errorf("%s: %d of %d values an ulp off", c.name, off, len(xs))
		}
		t.Logf("%s: %d of %d an ulp off", c.name, off, len(xs))
	}
}

// The branchless float sign loops are signOf: ±1, ±0 kept, NaN kept, the
// infinities and subnormals ±1.
func TestSignLoops(t *testing.T) {
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -3e300, 5e-324, -5e-324, math.Inf(1), math.Inf(-1), math.NaN(), 1e-45, -2}
	o64 := make([]float64, len(xs))
	signLoop64(o64, xs)
	x32 := make([]float32, len(xs))
	for i, v := range xs {
		x32[i] = float32(v)
	}
	o32 := make([]float32, len(xs))
	signLoop32(o32, x32)
	for i, v := range xs {
		if w := signOf(v); math.Float64bits(o64[i]) != math.Float64bits(w) && !(w != w && o64[i] != o64[i]) {
			t.Errorf("signLoop64(%v) = %v, want %v", v, o64[i], w)
		}
		if w := signOf(x32[i]); math.Float32bits(o32[i]) != math.Float32bits(w) && !(w != w && o32[i] != o32[i]) {
			t.Errorf("signLoop32(%v) = %v, want %v", x32[i], o32[i], w)
		}
	}
}

// The rounding and root loops give math32's (the loops before them) and
// math's values bit for bit: halves of both signs, the integers' edge at
// 2²³, signed zeros, subnormals, infinities and NaN.
func TestRoundingAndRootLoops(t *testing.T) {
	xs := trigInputs()
	for _, v := range []float32{0.5, -0.5, 1.5, -2.5, 0.49999997, -0.49999997, 8388607.5, 8388608, 16777215, 1e-45} {
		xs = append(xs, v, -v)
	}
	x64 := make([]float64, len(xs))
	for i, v := range xs {
		x64[i] = float64(v)
	}
	for _, c := range []struct {
		name   string
		loop32 func(o, x []float32)
		ref32  func(float32) float32
		loop64 func(o, x []float64)
		ref64  func(float64) float64
	}{
		{"floor", floorLoop[float32], math32.Floor, floorLoop[float64], math.Floor},
		{"ceil", ceilLoop[float32], math32.Ceil, ceilLoop[float64], math.Ceil},
		{"round", roundLoop[float32], math32.Round, roundLoop[float64], math.Round},
		{"sqrt", sqrtLoop[float32], math32.Sqrt, sqrtLoop[float64], math.Sqrt},
		{"rsqrt", rsqrtLoop[float32], func(v float32) float32 { return 1 / math32.Sqrt(v) }, rsqrtLoop[float64], func(v float64) float64 { return 1 / math.Sqrt(v) }},
	} {
		o32, o64 := make([]float32, len(xs)), make([]float64, len(xs))
		c.loop32(o32, xs)
		c.loop64(o64, x64)
		for i, v := range xs {
			if w := c.ref32(v); math.Float32bits(o32[i]) != math.Float32bits(w) && !(w != w && o32[i] != o32[i]) {
				t.Fatalf("%s float32(%v) = %v, want %v", c.name, v, o32[i], w)
			}
			if w := c.ref64(x64[i]); math.Float64bits(o64[i]) != math.Float64bits(w) && !(w != w && o64[i] != o64[i]) {
				t.Fatalf("%s float64(%v) = %v, want %v", c.name, x64[i], o64[i], w)
			}
		}
	}
}
