package cuda

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The Bessel kernels are internal/mathx's functions within 6 ulps (the
// loops' sums in mathx's order; the exponentials the GPU's own), over the
// math inputs and both sides of the switch to the asymptotic expansion,
// to where I₀ and I₁ overflow; their gradients the CPU's.
func TestBesselFamilyOnGPU(t *testing.T) {
	d := testGPU(t)
	xs := mathInputs()
	for v := -720.0; v <= 720; v += 3.3 {
		xs = append(xs, v)
	}
	xs = append(xs, 20, 19.999999999999996, 20.000000000000004, -20, 713.9, 714)
	for _, c := range []mathCase{
		{"i0", ops.BesselI0, mathx.BesselI0, xs},
		{"i1", ops.BesselI1, mathx.BesselI1, xs},
		{"i0e", ops.BesselI0e, mathx.BesselI0e, xs},
		{"i1e", ops.BesselI1e, mathx.BesselI1e, xs},
	} {
		c.agreeOnGPU(t, d, 6)
		x := tensor.FromSlice([]float64{0, 0.5, -3, 25, -40}, 5)
		grad := func(x *tensor.Tensor) []float64 {
			tp := tape.New()
			tp.Watch(x)
			return tensor.ToSlice[float64](onHost(t, tp.Gradient(ops.Sum(c.op(x)), x)[0]))
		}
		want, got := grad(x), grad(onGPU(t, d, x))
		for i := range want {
			if u := ulps(got[i], want[i]); u > 8 {
				t.Errorf("%s' at %v: GPU %v, CPU %v", c.name, tensor.ToSlice[float64](x)[i], got[i], want[i])
			}
		}
	}
}
