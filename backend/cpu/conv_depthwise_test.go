package cpu_test

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The float32 depthwise convolution with one filter a channel
// (conv_depthwise_vec.go's row kernels, where this CPU has them; NCHW
// through transposes) gives
// the float64 kernels' values within float32's rounding: the output, the
// input's and the filter's gradients, over strides, dilations, paddings
// (taps whose every column falls outside the input among them), filters
// of 1x1 to 5x5, and channel counts that reach each of the row kernels'
// paths (32 lanes, 8, single ones); multiplier 2 takes the scalar kernels.
func TestDepthwiseVecFollowsFloat64(t *testing.T) {
	r := tensor.NewRNG(5)
	for _, c := range []struct {
		n, h, w, ch, m, kh, kw int
		strides, dilations     [2]int
		pad                    [2][2]int
	}{
		{2, 7, 9, 64, 1, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{{1, 1}, {1, 1}}},
		{1, 8, 8, 41, 1, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2][2]int{{0, 1}, {0, 1}}},
		{3, 5, 6, 7, 1, 5, 5, [2]int{1, 2}, [2]int{1, 1}, [2][2]int{{2, 2}, {2, 2}}},
		{1, 9, 10, 8, 1, 3, 3, [2]int{1, 1}, [2]int{2, 2}, [2][2]int{{2, 2}, {2, 2}}},
		{2, 4, 3, 33, 1, 1, 1, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{}},
		{1, 6, 5, 17, 1, 3, 2, [2]int{3, 3}, [2]int{1, 1}, [2][2]int{{1, 0}, {4, 3}}},
		{1, 3, 2, 9, 1, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{{2, 2}, {3, 3}}},
		{2, 5, 5, 12, 2, 3, 3, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{{1, 1}, {1, 1}}},
		{1, 4, 2, 40, 1, 3, 3, [2]int{2, 3}, [2]int{1, 1}, [2][2]int{{1, 1}, {1, 1}}},
		{2, 12, 14, 64, 1, 3, 3, [2]int{2, 2}, [2]int{1, 1}, [2][2]int{{1, 1}, {1, 1}}},
		{1, 9, 11, 24, 1, 4, 3, [2]int{2, 2}, [2]int{2, 1}, [2][2]int{{3, 0}, {1, 2}}},
	} {
		name := fmt.Sprintf("%+v", c)
		x := tensor.RandUniform(r, tensor.Float32, -1, 1, c.n, c.h, c.w, c.ch)
		f := tensor.RandUniform(r, tensor.Float32, -1, 1, c.kh, c.kw, c.ch, c.m)
		for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			o := ops.Conv2DOpts{Padding: ops.Explicit, Explicit: c.pad, Strides: c.strides, Dilations: c.dilations, Format: format}
			if format == ops.NCHW {
				x = ops.Transpose(x, 0, 3, 1, 2).Contiguous()
			}
			run := func(x, f *tensor.Tensor) []*tensor.Tensor {
				tp := tape.New()
				tp.Watch(x, f)
				y := ops.DepthwiseConv2D(x, f, o)
				// A weighted sum, so that the output's gradient is no constant.
				w := ops.Cast(tensor.RandUniform(tensor.NewRNG(9), tensor.Float32, -1, 1, y.Shape()...), y.DType())
				return append([]*tensor.Tensor{y}, tp.Gradient(ops.Sum(ops.Mul(y, w)), x, f)...)
			}
			got := run(x, f)
			want := run(ops.Cast(x, tensor.Float64), ops.Cast(f, tensor.Float64))
			for i, what := range []string{"output", "input gradient", "filter gradient"} {
				g := tensor.ToSlice[float64](ops.Cast(got[i], tensor.Float64))
				if d := approx.Diff(g, tensor.ToSlice[float64](want[i]), 2e-5); d != "" {
					t.Errorf("%s %v: %s: %s", name, format, what, d)
				}
			}
		}
	}
}
