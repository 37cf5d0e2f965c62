package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The gamma family's float64 kernels agree with internal/mathx's
// functions: within 4 ulps for x > 0 (about ψ's zero and ln Γ's zeros at
// 1 and 2 too, where both compute by series), and for x < 0, where the reflection's terms cancel near the
// functions' negative zeros, within 8 ulps of the largest term. Zeta and
// Polygamma over pairs of specials and a grid of orders and arguments.
func TestGammaFamilyOnGPU(t *testing.T) {
	d := testGPU(t)
	xs := mathInputs()
	for _, c := range []float64{1, 2, 1.4616321449683623} { // the zeros, closely
		for i := -30; i <= 30; i++ {
			xs = append(xs, c+float64(i)*1e-3, c*(1+float64(i)*0x1p-50))
		}
	}
	x := tensor.FromSlice(xs, len(xs))
	for _, c := range []struct {
		name string
		op   func(*tensor.Tensor) *tensor.Tensor
		ref  func(float64) float64
		// scale is the magnitude of the reflection's terms at x < 0.
		scale func(float64) float64
	}{
		{"lgamma", ops.Lgamma, mathx.Lgamma, func(v float64) float64 {
			return math.Abs(mathx.Lgamma(1-v)) + math.Abs(math.Log(math.Abs(math.Sin(math.Pi*(v-math.Round(v))))))
		}},
		{"digamma", ops.Digamma, mathx.Digamma, func(v float64) float64 {
			return math.Abs(mathx.Digamma(1-v)) + math.Abs(math.Pi/math.Tan(math.Pi*(v-math.Round(v))))
		}},
	} {
		got := tensor.ToSlice[float64](onHost(t, c.op(onGPU(t, d, x))))
		worst, at := 0.0, 0.0
		for i, v := range xs {
			want := c.ref(v)
			u := ulps(got[i], want)
			if v < 0 && !math.IsInf(want, 0) && !math.IsNaN(want) && math.Abs(got[i]-want) <= 8*0x1p-52*c.scale(v) {
				u = 0
			}
			if u > worst {
				worst, at = u, v
			}
			if u > 4 {
				t.Errorf("%s(%v) = %v, want %v (%.1f ulps)", c.name, v, got[i], want, u)
			}
		}
		t.Logf("%s: worst %.2f ulps (at %v)", c.name, worst, at)
	}

	specials := []float64{0, math.Copysign(0, -1), 1, -1, 2, 2.5, -2.5, 0.3, -0.7, 1e-300, 1e300, 40, -40.5,
		math.Inf(1), math.Inf(-1), math.NaN(), 1.5, 3, 7, 0.999}
	var as, bs []float64
	for _, a := range specials {
		for _, b := range specials {
			as, bs = append(as, a), append(bs, b)
		}
	}
	for n := 0; n <= 6; n++ { // Polygamma's orders over a grid, negative x included
		for v := -6.05; v < 12; v += 0.173 {
			as, bs = append(as, float64(n)), append(bs, v)
		}
	}
	at, bt := onGPU(t, d, tensor.FromSlice(as, len(as))), onGPU(t, d, tensor.FromSlice(bs, len(bs)))
	for _, c := range []struct {
		name string
		op   func(a, b *tensor.Tensor) *tensor.Tensor
		ref  func(a, b float64) float64
	}{
		{"zeta", ops.Zeta, mathx.Zeta},
		{"polygamma", func(n, x *tensor.Tensor) *tensor.Tensor { return eager.Run1(eager.Lookup("Polygamma"), nil, n, x) }, mathx.Polygamma},
	} {
		got := tensor.ToSlice[float64](onHost(t, c.op(at, bt)))
		worst := 0.0
		for i := range as {
			want := c.ref(as[i], bs[i])
			u := ulps(got[i], want)
			if bs[i] < 0 && math.Abs(got[i]-want) <= 8*0x1p-52*math.Abs(c.ref(as[i], bs[i]-math.Floor(bs[i]))) {
				u = 0 // the sum of terms of both signs cancels between poles
			}
			worst = max(worst, u)
			if u > 4 {
				t.Errorf("%s(%v, %v) = %v, want %v (%.1f ulps)", c.name, as[i], bs[i], got[i], want, u)
			}
		}
		t.Logf("%s: worst %.2f ulps", c.name, worst)
	}
}

// Igamma and Igammac on the GPU take mathx's steps: within a few ulps of
// it where the prefactor's exponent is small, its elementary functions'
// last-place differences growing with that exponent; the special cases
// exactly.
func TestIncompleteGammaOnGPU(t *testing.T) {
	d := testGPU(t)
	specials := []float64{0, 1e-300, 1e-5, 0.3, 1, 2.5, 9.99, 10, 40, 1e5, math.Inf(1), math.NaN(), -1}
	var as, xs []float64
	for _, a := range specials {
		for _, x := range specials {
			as, xs = append(as, a), append(xs, x)
		}
	}
	for _, a := range []float64{1e-3, 0.05, 0.7, 1.3, 4, 12, 300, 5000} {
		for _, f := range []float64{1e-3, 0.2, 0.7, 0.95, 1, 1.05, 1.4, 3, 20} {
			as, xs = append(as, a), append(xs, a*f+f)
		}
	}
	at, xt := onGPU(t, d, tensor.FromSlice(as, len(as))), onGPU(t, d, tensor.FromSlice(xs, len(xs)))
	for _, c := range []struct {
		name string
		op   func(a, x *tensor.Tensor) *tensor.Tensor
		ref  func(a, x float64) float64
	}{{"igamma", ops.Igamma, mathx.Igamma}, {"igammac", ops.Igammac, mathx.Igammac}} {
		got := tensor.ToSlice[float64](onHost(t, c.op(at, xt)))
		for i := range as {
			want := c.ref(as[i], xs[i])
			if math.IsNaN(want) != math.IsNaN(got[i]) || (!math.IsNaN(want) && ulps(got[i], want) > 16+4*(math.Abs(as[i]*math.Log(xs[i]))+xs[i])) {
				t.Errorf("%s(%v, %v) = %v, want %v", c.name, as[i], xs[i], got[i], want)
			}
		}
		got32 := tensor.ToSlice[float32](onHost(t, c.op(ops.Cast(at, tensor.Float32), ops.Cast(xt, tensor.Float32))))
		want32 := tensor.ToSlice[float32](c.op(ops.Cast(tensor.FromSlice(as, len(as)), tensor.Float32), ops.Cast(tensor.FromSlice(xs, len(xs)), tensor.Float32)))
		for i := range want32 {
			w, g := float64(want32[i]), float64(got32[i])
			if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > 2*math.Abs(w)*0x1p-23+1e-44) {
				t.Errorf("float32 %s(%v, %v) = %v, the CPU's %v", c.name, as[i], xs[i], g, w)
			}
		}
	}
}
