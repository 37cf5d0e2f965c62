package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The normal family's kernels are internal/mathx's functions within a few
// ulps (their exponentials and logarithms are the GPU's own), in float64
// over the math inputs, erfc's region boundaries and the tails (to where
// each underflows or overflows), and float32 rounded from them; Ndtri
// over probabilities from 1e-300 to 1.
func TestNormalFamilyOnGPU(t *testing.T) {
	d := testGPU(t)
	xs := mathInputs()
	for _, b := range []float64{0.25, 0.84375, 1.25, 1 / 0.35, 26.5, 27.3, 38.4, -26.6, -1} {
		xs = append(xs, b, math.Nextafter(b, 0), math.Nextafter(b, 100), -b)
	}
	for v := -40.0; v <= 40; v += 0.37 {
		xs = append(xs, v)
	}
	var ps []float64
	for e := -300.0; e <= 0; e += 1.7 {
		ps = append(ps, math.Pow(10, e), 1-math.Pow(10, e/20))
	}
	ps = append(ps, 0, 1, -0.1, 1.1, math.NaN(), 0.5, 0.075, 0.925, 0.0749, 0.9251)
	for _, c := range []mathCase{
		{"erfc", ops.Erfc, mathx.Erfc, xs},
		{"erfcx", ops.Erfcx, mathx.Erfcx, xs},
		{"ndtr", ops.Ndtr, mathx.Ndtr, xs},
		{"logndtr", ops.LogNdtr, mathx.LogNdtr, xs},
		{"ndtri", ops.Ndtri, mathx.Ndtri, ps},
	} {
		c.agreeOnGPU(t, d, 4)
	}
	// The gradient ops: dy times mathx's derivatives, dy = 3 (erfcx's
	// below 1 is a difference that magnifies erfcx's ulps up to four
	// times).
	for _, c := range []struct {
		name string
		op   func(*tensor.Tensor) *tensor.Tensor
		ref  func(float64) float64
		ulps float64
	}{
		{"erfc'", ops.Erfc, mathx.ErfcDeriv, 4},
		{"erfcx'", ops.Erfcx, mathx.ErfcxDeriv, 10},
		{"ndtr'", ops.Ndtr, mathx.NdtrDeriv, 4},
		{"logndtr'", ops.LogNdtr, mathx.LogNdtrDeriv, 4},
		{"ndtri'", ops.Ndtri, func(p float64) float64 { return mathx.NdtriDeriv(mathx.Ndtri(p)) }, 8},
	} {
		in := xs
		if c.name == "ndtri'" {
			in = ps
		}
		x := onGPU(t, d, tensor.FromSlice(in, len(in)))
		tp := tape.New()
		tp.Watch(x)
		got := tensor.ToSlice[float64](onHost(t, tp.Gradient(ops.Sum(ops.Mul(c.op(x), ops.ScalarLike(x, 3))), x)[0]))
		for i, v := range in {
			want := 3 * c.ref(v)
			if u := ulps(got[i], want); u > c.ulps && !(math.Abs(want) < 0x1p-1020 && math.Abs(got[i]-want) <= 16*0x1p-1074) {
				t.Errorf("%s(%v)·3 = %v, want %v (%.1f ulps)", c.name, v, got[i], want, u)
			}
		}
	}
}

// mathCase is an elementwise function's op and its float64 reference
// (internal/mathx's) over inputs.
type mathCase struct {
	name string
	op   func(*tensor.Tensor) *tensor.Tensor
	ref  func(float64) float64
	in   []float64
}

// agreeOnGPU fails t where the op on d is more than ulps off the
// reference in float64 (subnormal results within 8 of the smallest), or
// a float32 result is more than 1 ulp off the reference rounded.
func (c mathCase) agreeOnGPU(t *testing.T, d *Device, ulpsAllowed float64) {
	t.Helper()
	x := tensor.FromSlice(c.in, len(c.in))
	got := tensor.ToSlice[float64](onHost(t, c.op(onGPU(t, d, x))))
	got32 := tensor.ToSlice[float32](onHost(t, c.op(onGPU(t, d, ops.Cast(x, tensor.Float32)))))
	worst, at := 0.0, 0.0
	for i, v := range c.in {
		want := c.ref(v)
		u := ulps(got[i], want)
		if u > worst {
			worst, at = u, v
		}
		if u > ulpsAllowed && !(want != 0 && math.Abs(want) < 0x1p-1022 && math.Abs(got[i]-want) <= 8*0x1p-1074) {
			t.Errorf("%s(%v) = %v, want %v (%.1f ulps)", c.name, v, got[i], want, u)
		}
		if w32 := c.ref(float64(float32(v))); ulps32(got32[i], float32(w32)) > 1 && float32(w32) != 0 {
			t.Errorf("float32 %s(%v) = %v, want %v", c.name, float32(v), got32[i], float32(w32))
		}
	}
	t.Logf("%s: worst %.2f ulps (at %v)", c.name, worst, at)
}
