package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/internal/approx"
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
					before, halfBefore := 0, 0
					if emulated {
						before, halfBefore = ctx.DNNCalls, ctx.HalfDNNCalls
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
						// The half types' passes on 16-bit floats, not
						// through float32.
						if half, wantHalf := ctx.HalfDNNCalls-halfBefore, map[bool]int{true: 3}[on && c.symmetric && dt.IsHalf()]; half != wantHalf {
							t.Errorf("%s: %d cuDNN passes on 16-bit floats, want %d", what, half, wantHalf)
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

// FusedConv2D in the half types runs forward and backward through cuDNN
// (three passes; the bias gradient's sum in float32) and agrees with the
// CPU, which computes through float32.
func TestHalfFusedConvThroughCuDNN(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	r := tensor.NewRNG(12)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			o := ops.Conv2DOpts{Padding: ops.Same, Format: format}
			xs := []int{2, 6, 5, 3}
			if format == ops.NCHW {
				xs = []int{2, 3, 6, 5}
			}
			x, f, b := tensor.RandNormal(r, dt, xs...), tensor.RandNormal(r, dt, 3, 3, 3, 4), tensor.RandNormal(r, dt, 4)
			run := func(x, f, b *tensor.Tensor) []*tensor.Tensor {
				tp := tape.New()
				tp.Watch(x, f, b)
				y := ops.FusedConv2D(x, f, b, o, ops.ReluActivation)
				g := tp.Gradient(ops.Sum(ops.Cast(y, tensor.Float32)), x, f, b)
				return append([]*tensor.Tensor{y}, g...)
			}
			want := run(x, f, b)
			before := 0
			if emulated {
				before = ctx.HalfDNNCalls
			}
			got := run(onGPU(t, d, x), onGPU(t, d, f), onGPU(t, d, b))
			what := fmt.Sprintf("%v %v", dt, format)
			for k, name := range []string{"output", "input gradient", "filter gradient", "bias gradient"} {
				if got[k].DType() != dt {
					t.Fatalf("%s %s is %v", what, name, got[k].DType())
				}
				g, w := ops.Cast(got[k], tensor.Float32), ops.Cast(want[k], tensor.Float32)
				// Sums of up to 60 products rounded once either way: a few
				// units in the half type's last place.
				agreeWithin(t, what+" "+name, g, w, 8*approx.Tolerance(dt))
			}
			if emulated && ctx.HalfDNNCalls-before != 3 {
				t.Errorf("%s: %d cuDNN passes on %v, want 3", what, ctx.HalfDNNCalls-before, dt)
			}
		}
	}
}

// FusedConv2D's gradients agree with the CPU in both layouts and float
// dtypes: the input's and the filter's through cuDNN (with the forward,
// three cuDNN calls), the bias's by the reductions' kernels, never
// cuDNN's (cudnnConvolutionBackwardBias took 284 µs a call on an H200,
// 2026-11-28, for a sum the column reduction does in about 6).
func TestFusedConvBiasGradientThroughCuDNN(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	launched := recordLaunches(t, d)
	r := tensor.NewRNG(12)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			xs := []int{3, 9, 8, 2}
			if format == ops.NCHW {
				xs = []int{3, 2, 9, 8}
			}
			x, f, b := tensor.RandNormal(r, dt, xs...), tensor.RandNormal(r, dt, 3, 3, 2, 5), tensor.RandNormal(r, dt, 5)
			o := ops.Conv2DOpts{Padding: ops.Same, Format: format}
			seed := tensor.RandNormal(r, dt, ops.Conv2D(x, f, o).Shape()...)
			grads := func(x, f, b, seed *tensor.Tensor) []*tensor.Tensor {
				tp := tape.New()
				tp.Watch(x, f, b)
				return tp.GradientSeeded(ops.FusedConv2D(x, f, b, o, ops.ReluActivation), seed, x, f, b)
			}
			want := grads(x, f, b, seed)
			before := 0
			if emulated {
				before = ctx.DNNCalls
			}
			*launched = (*launched)[:0]
			got := grads(onGPU(t, d, x), onGPU(t, d, f), onGPU(t, d, b), onGPU(t, d, seed))
			what := fmt.Sprintf("%v %v", dt, format)
			for k, name := range []string{"input", "filter", "bias"} {
				agree(t, what+": the "+name+" gradient", got[k], want[k])
			}
			if !emulated {
				continue
			}
			if calls := ctx.DNNCalls - before; calls != 3 {
				t.Errorf("%s: %d cuDNN calls, want 3 (forward, data, filter)", what, calls)
			}
			if !slices.ContainsFunc(*launched, func(k string) bool { return strings.HasPrefix(k, "reduce_") }) {
				t.Errorf("%s: no reduction kernel for the bias gradient (%v)", what, *launched)
			}
		}
	}
}

// The depthwise convolution runs through cuDNN (a grouped convolution,
// three passes) where its padding is the same on both sides, else and
// with cuDNN off on the GPU's own kernels (not the grouped Conv's
// per-channel GEMMs), and agrees with the CPU, values and both
// gradients, float32, float64 and bfloat16 (through float32), both
// layouts.
func TestDepthwiseOnGPU(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	r := tensor.NewRNG(14)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16} {
		for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			for _, c := range []struct {
				o         ops.Conv2DOpts
				symmetric bool
			}{
				{ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 1}}, true},
				{ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{1, 2}}, false}, // 6 -> 3 at a stride of 2: padding at the end alone
				{ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{2, 2}, {1, 1}}, Dilations: [2]int{2, 1}}, true},
			} {
				c.o.Format = format
				shape := []int{2, 7, 6, 4}
				if format == ops.NCHW {
					shape = []int{2, 4, 7, 6}
				}
				x, f := ops.Cast(tensor.RandNormal(r, tensor.Float32, shape...), dt), ops.Cast(tensor.RandNormal(r, tensor.Float32, 3, 3, 4, 2), dt)
				for _, on := range []bool{true, false} {
					d.SetCuDNN(on)
					before := 0
					if emulated {
						before = ctx.DNNCalls
					}
					what := fmt.Sprintf("%v %v %v cuDNN %v", dt, format, c.o, on)
					agreeDepthwise(t, d, what, x, f, c.o, ops.Sin)
					if !emulated {
						continue
					}
					if calls, want := ctx.DNNCalls-before, map[bool]int{true: 3}[on && c.symmetric]; calls != want {
						t.Errorf("%s: %d cuDNN passes, want %d", what, calls, want)
					}
				}
				d.SetCuDNN(true)
			}
		}
	}
}

// Depthwise convolutions of random geometry agree with the CPU on the
// GPU, values and both gradients, through cuDNN and on the GPU's own
// kernels: layouts, multipliers 1-3, windows 1-4 each way, strides and
// dilations 1-2, SAME, VALID and explicit (uneven) padding, one or two
// images; float32 and float64.
func TestDepthwiseRandomOnGPU(t *testing.T) {
	d := testGPU(t)
	rng := rand.New(rand.NewPCG(23, 1))
	r := tensor.NewRNG(16)
	defer d.SetCuDNN(true)
	for i := range 40 {
		d.SetCuDNN(i%3 != 2)
		dt := []tensor.DType{tensor.Float32, tensor.Float64}[i%2]
		format := []ops.DataFormat{ops.NHWC, ops.NCHW}[i/2%2]
		n, c, m := 1+rng.IntN(2), 1+rng.IntN(4), 1+rng.IntN(3)
		kh, kw := 1+rng.IntN(4), 1+rng.IntN(4)
		o := ops.Conv2DOpts{Strides: [2]int{1 + rng.IntN(2), 1 + rng.IntN(2)}, Dilations: [2]int{1 + rng.IntN(2), 1 + rng.IntN(2)},
			Padding: ops.PaddingMode(rng.IntN(3)), Format: format}
		if o.Padding == ops.Explicit {
			o.Explicit = [2][2]int{{rng.IntN(3), rng.IntN(3)}, {rng.IntN(3), rng.IntN(3)}}
		}
		h := (kh-1)*o.Dilations[0] + 1 + rng.IntN(9)
		w := (kw-1)*o.Dilations[1] + 1 + rng.IntN(9)
		shape := []int{n, h, w, c}
		if format == ops.NCHW {
			shape = []int{n, c, h, w}
		}
		x := ops.Cast(tensor.RandNormal(r, tensor.Float32, shape...), dt)
		f := ops.Cast(tensor.RandNormal(r, tensor.Float32, kh, kw, c, m), dt)
		agreeDepthwise(t, d, fmt.Sprintf("case %d: %v %v %v filter %dx%dx%dx%d %v", i, dt, format, shape, kh, kw, c, m, o), x, f, o, ops.Sin)
	}
}

// NCHW depthwise convolutions without dilation take the band kernels (the
// forward and the filter gradient at any stride and multiplier, the input
// gradient at a stride and multiplier of 1; at other strides and
// multipliers, bands of its rows) and agree with the CPU: windows of 3x3,
// 5x5, 5x3, 4x4 and 1x3, SAME and VALID, uneven padding, strides 1-3,
// multipliers 1-3, planes of one band and of several.
func TestDepthwiseBandsOnGPU(t *testing.T) {
	d := testGPU(t)
	withoutCuDNN(t, d)
	r := tensor.NewRNG(15)
	launched := recordLaunches(t, d)
	for i, c := range []struct {
		dt       tensor.DType
		shape    tensor.Shape // NCHW
		kh, kw   int
		strides  [2]int
		padding  ops.PaddingMode
		gradBand bool // the input gradient takes a band too
		m        int  // the multiplier
		gradRows bool // the input gradient takes bands of its rows (dw_input_nchwrows)
		dil      [2]int
	}{
		{tensor.Float32, tensor.Shape{2, 3, 14, 14}, 3, 3, [2]int{1, 1}, ops.Same, true, 1, false, [2]int{1, 1}},
		{tensor.Float64, tensor.Shape{1, 2, 9, 7}, 5, 5, [2]int{1, 1}, ops.Same, true, 1, false, [2]int{1, 1}},
		{tensor.Float32, tensor.Shape{1, 2, 11, 10}, 1, 3, [2]int{1, 1}, ops.Valid, true, 1, false, [2]int{1, 1}},
		{tensor.Float32, tensor.Shape{2, 2, 13, 12}, 3, 3, [2]int{2, 2}, ops.Same, false, 1, true, [2]int{1, 1}},
		{tensor.Float64, tensor.Shape{2, 3, 9, 10}, 3, 3, [2]int{1, 1}, ops.Same, false, 2, true, [2]int{1, 1}},
		{tensor.Float32, tensor.Shape{1, 1, 80, 96}, 3, 3, [2]int{1, 1}, ops.Same, true, 1, false, [2]int{1, 1}}, // several bands a plane
		{tensor.BFloat16, tensor.Shape{1, 2, 8, 8}, 3, 3, [2]int{1, 1}, ops.Same, true, 1, false, [2]int{1, 1}},
		// Strides and multipliers on planes of several bands of dx's rows.
		{tensor.Float32, tensor.Shape{1, 2, 150, 200}, 3, 3, [2]int{2, 2}, ops.Same, false, 1, true, [2]int{1, 1}},
		{tensor.Float64, tensor.Shape{1, 2, 60, 90}, 5, 3, [2]int{2, 1}, ops.Valid, false, 3, true, [2]int{1, 1}},
		{tensor.Float32, tensor.Shape{2, 1, 41, 33}, 4, 4, [2]int{3, 3}, ops.Same, false, 2, true, [2]int{1, 1}},
		// Dilated: bands over the windows' extent, the input gradient's
		// taps found a division each.
		{tensor.Float32, tensor.Shape{1, 3, 70, 64}, 3, 3, [2]int{1, 1}, ops.Same, false, 1, true, [2]int{2, 2}},
		{tensor.Float64, tensor.Shape{2, 2, 33, 40}, 3, 2, [2]int{2, 1}, ops.Valid, false, 2, true, [2]int{3, 2}},
	} {
		o := ops.Conv2DOpts{Padding: c.padding, Strides: c.strides, Dilations: c.dil, Format: ops.NCHW}
		*launched = (*launched)[:0]
		agreeRandomDepthwise(t, d, r, fmt.Sprintf("case %d", i), c.dt, c.shape, c.kh, c.kw, c.m, o)
		if _, ok := d.ctx.(*emu.Context); ok {
			dt := "f32"
			if c.dt == tensor.Float64 {
				dt = "f64"
			}
			if !slices.Contains(*launched, "dw_fwd_nchwband_"+dt) {
				t.Errorf("case %d: the forward did not take a band (%v)", i, *launched)
			}
			if !slices.Contains(*launched, "dw_filter_nchwband_"+dt) {
				t.Errorf("case %d: the filter gradient did not take bands (%v)", i, *launched)
			}
			if slices.Contains(*launched, "dw_input_nchwband_"+dt) != c.gradBand {
				t.Errorf("case %d: the input gradient took a band: %v, want %v", i, !c.gradBand, c.gradBand)
			}
			if slices.Contains(*launched, "dw_input_nchwrows_"+dt) != c.gradRows {
				t.Errorf("case %d: the input gradient took bands of its rows: %v, want %v", i, !c.gradRows, c.gradRows)
			}
		}
	}
}

// agreeRandomDepthwise is agreeDepthwise of a random NCHW input of dt
// and shape and a random kh x kw filter of multiplier m, seeded by cos(y).
func agreeRandomDepthwise(t *testing.T, d *Device, r *tensor.RNG, what string, dt tensor.DType, shape tensor.Shape, kh, kw, m int, o ops.Conv2DOpts) {
	t.Helper()
	x := ops.Cast(tensor.RandNormal(r, tensor.Float32, shape...), dt)
	f := ops.Cast(tensor.RandNormal(r, tensor.Float32, kh, kw, shape[1], m), dt)
	agreeDepthwise(t, d, fmt.Sprintf("%s: %v %v %dx%d", what, dt, shape, kh, kw), x, f, o, ops.Cos)
}

// agreeDepthwise checks that the depthwise convolution of x by f and its
// two gradients (of seed(y)) on d agree with the CPU's.
func agreeDepthwise(t *testing.T, d *Device, what string, x, f *tensor.Tensor, o ops.Conv2DOpts, seed func(*tensor.Tensor) *tensor.Tensor) {
	t.Helper()
	run := func(x, f *tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(x, f)
		y := ops.DepthwiseConv2D(x, f, o)
		return append([]*tensor.Tensor{y}, tp.GradientSeeded(y, seed(y), x, f)...)
	}
	want, got := run(x, f), run(onGPU(t, d, x), onGPU(t, d, f))
	for k, name := range []string{"output", "input gradient"} {
		agree(t, what+" "+name, got[k], want[k])
	}
	// The filter gradient sums x·dy over every image and position: where
	// those cancel, the two devices' roundings of y (so of dy = seed(y))
	// move it by more than its own tolerance. It is held to a few float32
	// roundings of Σ|x|·|dy| besides (the same sums of the magnitudes).
	tp := tape.New()
	tp.Watch(f)
	mag := tp.GradientSeeded(ops.DepthwiseConv2D(ops.Abs(x), f, o), ops.Abs(seed(want[0])), f)[0]
	g := tensor.ToSlice[float64](ops.Cast(onHost(t, got[2]), tensor.Float64))
	w := tensor.ToSlice[float64](ops.Cast(want[2], tensor.Float64))
	m := tensor.ToSlice[float64](ops.Cast(mag, tensor.Float64))
	tol := approx.Tolerance(want[2].DType())
	for i := range w {
		if e := math.Abs(g[i] - w[i]); !(e <= tol*math.Max(1, math.Abs(w[i]))+tol*m[i]/16) {
			t.Fatalf("%s filter gradient: element %d: got %v, want %v (products' magnitudes %v)", what, i, g[i], w[i], m[i])
		}
	}
}

// withoutCuDNN turns d's cuDNN convolutions off until t ends (the tests
// of the GPU's own convolution kernels).
func withoutCuDNN(t *testing.T, d *Device) {
	off := d.dnnOff.Load()
	d.SetCuDNN(false)
	t.Cleanup(func() { d.dnnOff.Store(off) })
}
