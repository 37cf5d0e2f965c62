package cuda

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// NCHW pooling whose rows are too wide for a band goes by bands split
// into column tiles (kernels/tiles.go) and agrees with the CPU exactly:
// overlapping and disjoint windows, padding on both sides, several tiles
// a row and several bands a plane, the float and half dtypes, NaNs, an
// init that padding taps count as; the gradients of max and min pooling,
// by the tiled selections and scatter where windows overlap and by the
// tiled puts where they do not.
func TestPoolTilesOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(31)
	launched := recordLaunches(t, d)
	for i, c := range []struct {
		dt    tensor.DType
		shape tensor.Shape
		w     ops.Window
	}{
		{tensor.Float32, tensor.Shape{1, 2, 9, 1500}, nchwWindow(3, 3, 2, 2, [2]int{1, 1}, [2]int{1, 1})}, // ResNet's pool, wide
		{tensor.Float32, tensor.Shape{1, 1, 11, 1400}, nchwWindow(3, 3, 1, 1, [2]int{1, 1}, [2]int{0, 2})},
		{tensor.Float64, tensor.Shape{2, 1, 7, 1500}, nchwWindow(3, 2, 2, 1, [2]int{0, 1}, [2]int{1, 0})},
		{tensor.BFloat16, tensor.Shape{1, 1, 5, 2900}, nchwWindow(3, 3, 1, 1, [2]int{1, 1}, [2]int{1, 1})},
		{tensor.Float16, tensor.Shape{1, 2, 6, 2800}, nchwWindow(3, 3, 2, 2, [2]int{1, 0}, [2]int{0, 1})},
		// Windows that do not overlap: their gradients take the tiled puts.
		{tensor.Float32, tensor.Shape{1, 2, 10, 1500}, nchwWindow(3, 3, 3, 3, [2]int{1, 1}, [2]int{0, 2})},
		{tensor.Float64, tensor.Shape{1, 1, 11, 800}, nchwWindow(3, 2, 3, 4, [2]int{0, 1}, [2]int{1, 0})}, // gaps between windows
	} {
		p, nhwc, ok := pool2D(c.shape, c.w)
		kt := kernelType(c.dt)
		if !ok || nhwc || poolLayout(p, nhwc, kt) != "nchwtile" {
			t.Fatalf("case %d: %v over %v does not take the tiled kernels", i, c.w, c.shape)
		}
		if tl, _ := kernels.BandTiling(p, kt, kernels.BandBytes, 0); tl.Tiles(p.OW) < 2 {
			t.Fatalf("case %d: %d tile a row (%+v)", i, tl.Tiles(p.OW), tl)
		}
		if !disjoint(c.w) && !poolScatters(p, false, kt) {
			t.Fatalf("case %d: the gradient does not take the pooling scatter", i)
		}
		agreePooling(t, d, r, fmt.Sprintf("case %d", i), c.dt, c.shape, c.w, 211, true)
	}
	mustHaveRun(t, d, launched, "pool2d_max_nchwtile_f32", "pool2d_sum_nchwtile_f64", "pool2d_min_nchwtile_bf16", "pool2d_max_nchwtile_f16",
		"pool2d_select_ge_nchwtile_f32", "pool2d_select_le_nchwtile_f16", "pool2d_select_scatter_nchwtile_f32",
		"pool2d_select_scatter_nchwtile_f64", "pool2d_select_scatter_nchwtile_bf16", "pool2d_select_scatter_nchwtile_f16",
		"pool2d_select_put_ge_nchwtile_f32", "pool2d_select_put_le_nchwtile_f64")
}

// NCHW depthwise convolutions whose rows are too wide for a band go by
// bands split into column tiles, forward and both gradients, and agree
// with the CPU: SAME and VALID, strides, multipliers and dilations, the
// input gradient by tiles of the forward's kind (a multiplier, strides
// and dilations of 1) or of dx's rows (the others).
func TestDepthwiseTilesOnGPU(t *testing.T) {
	d := testGPU(t)
	withoutCuDNN(t, d)
	r := tensor.NewRNG(33)
	launched := recordLaunches(t, d)
	for i, c := range []struct {
		dt       tensor.DType
		shape    tensor.Shape // NCHW
		kh, kw   int
		strides  [2]int
		padding  ops.PaddingMode
		m        int
		dil      [2]int
		gradRows bool // the input gradient takes tiles of dx's rows
	}{
		{tensor.Float32, tensor.Shape{1, 2, 6, 1500}, 3, 3, [2]int{1, 1}, ops.Same, 1, [2]int{1, 1}, false},
		{tensor.Float64, tensor.Shape{2, 1, 5, 900}, 5, 3, [2]int{1, 1}, ops.Valid, 1, [2]int{1, 1}, false},
		{tensor.Float32, tensor.Shape{1, 1, 7, 1500}, 3, 3, [2]int{1, 1}, ops.Same, 2, [2]int{1, 1}, true},
		{tensor.Float32, tensor.Shape{1, 2, 5, 4200}, 3, 3, [2]int{2, 2}, ops.Same, 1, [2]int{1, 1}, true},
		{tensor.Float64, tensor.Shape{1, 1, 9, 1000}, 3, 3, [2]int{1, 1}, ops.Same, 1, [2]int{2, 2}, true},
	} {
		o := ops.Conv2DOpts{Padding: c.padding, Strides: c.strides, Dilations: c.dil, Format: ops.NCHW}
		*launched = (*launched)[:0]
		agreeRandomDepthwise(t, d, r, fmt.Sprintf("case %d", i), c.dt, c.shape, c.kh, c.kw, c.m, o)
		dt, input := string(kernelType(c.dt)), "dw_input_nchwtile_"
		if c.gradRows {
			input = "dw_input_nchwrowtiles_"
		}
		mustHaveRun(t, d, launched, "dw_fwd_nchwtile_"+dt, "dw_filter_nchwtile_"+dt, input+dt)
	}
}
