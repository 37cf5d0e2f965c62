package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/internal/mathx"
)

// trigInputs are float32 arguments of every magnitude (subnormal to the
// largest), the float32s nearest the multiples of π/2 up to 2²⁵ (where
// sin, cos or tan is smallest or largest), 2²⁸ and its neighbours (the
// vector kernel's range ends there), ±0, infinities and NaN, in an order
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
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 1<<28, math.Nextafter32(1<<28, 0), -(1 << 28),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, 1e-45, 3)
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs
}

// Sin, Cos and Tan of float32 (the AVX2 kernel strig4 in float64 lanes,
// the rest through math.Sin, math.Cos and mathx.Tan): the float64
// functions' values rounded once, bit for bit but for the rare argument
// whose true value lies within about 2⁻⁵⁰ of a rounding boundary (then
// an ulp), ±0 kept, NaN where the function is.
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
	}
	for _, c := range []struct {
		name string
		mode int
		f    func(float64) float64
	}{{"sin", trigSin, math.Sin}, {"cos", trigCos, math.Cos}, {"tan", trigTan, mathx.Tan}} {
		o := make([]float32, len(xs))
		trigLoop(c.mode, c.f)(o, xs)
		off := 0
		for i, v := range xs {
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
