package cuda

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Conv2D and both its gradients agree with the CPU with cuDNN's
// convolutions and without them (the patch matrix and GEMMs): both
// layouts, strides, dilations, padding the same on both sides or not
// (cuDNN takes only the former; the others fall back), every float dtype
// (the half types through cuDNN where it takes them, else in float32).
func TestConvWithAndWithoutCuDNN(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	r := tensor.NewRNG(9)
	cases := []struct {
		o         ops.Conv2DOpts
		symmetric bool
	}{
		{ops.Conv2DOpts{Padding: ops.Same}, true},
		{ops.Conv2DOpts{Padding: ops.Valid, Strides: [2]int{2, 1}}, true},
		{ops.Conv2DOpts{Padding: ops.Same, Dilations: [2]int{2, 2}}, true},
		{ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{1, 1}, {2, 2}}, Strides: [2]int{1, 2}}, true},
		{ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 2}}, false}, // 8 -> 4 with a 3x3 window: one row of padding, at the end
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16} {
		for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			for i, c := range cases {
				c.o.Format = format
				xs := []int{2, 8, 7, 3}
				if format == ops.NCHW {
					xs = []int{2, 3, 8, 7}
				}
				x := tensor.RandNormal(r, dt, xs...)
				f := tensor.RandNormal(r, dt, 3, 3, 3, 4)
				want := convAndGrads(x, f, c.o)
				for _, on := range []bool{true, false} {
					d.SetCuDNN(on)
					before := 0
					if emulated {
						before = ctx.DNNCalls
					}
					got := convAndGrads(onGPU(t, d, x), onGPU(t, d, f), c.o)
					what := fmt.Sprintf("%v %v case %d cuDNN %v", dt, format, i, on)
					for k, name := range []string{"output", "input gradient", "filter gradient"} {
						agree(t, what+" "+name, got[k], want[k])
					}
					if emulated {
						if calls, wantCalls := ctx.DNNCalls-before, map[bool]int{true: 3}[on && c.symmetric]; calls != wantCalls {
							t.Errorf("%s: %d cuDNN passes, want %d", what, calls, wantCalls)
						}
					}
				}
				d.SetCuDNN(true)
			}
		}
	}
}

// convAndGrads is Conv2D's output and its gradients in x and f of the sum
// of the output times a fixed weight.
func convAndGrads(x, f *tensor.Tensor, o ops.Conv2DOpts) []*tensor.Tensor {
	tp := tape.New()
	tp.Watch(x, f)
	y := ops.Conv2D(x, f, o)
	weight := ops.Cast(ops.Iota(tensor.Float64, y.Shape(), y.Rank()-1), y.DType())
	weight, _ = weight.To(y.Device())
	g := tp.Gradient(ops.Sum(ops.Mul(y, ops.Sin(weight))), x, f)
	return []*tensor.Tensor{y, g[0], g[1]}
}
