package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// randomWindow draws a window of rank r over a random shape: sizes 0-5,
// windows 1-3, strides 1-3, dilations 1-2, padding -1 to 2 at each end.
func randomWindow(rng *rand.Rand, r int) (tensor.Shape, ops.Window) {
	shape := make(tensor.Shape, r)
	w := ops.Window{Dims: make([]int, r), Strides: make([]int, r), Padding: make([][2]int, r),
		BaseDilation: make([]int, r), WindowDilation: make([]int, r)}
	for d := range r {
		shape[d] = rng.IntN(6)
		w.Dims[d], w.Strides[d] = 1+rng.IntN(3), 1+rng.IntN(3)
		w.BaseDilation[d], w.WindowDilation[d] = 1+rng.IntN(2), 1+rng.IntN(2)
		w.Padding[d] = [2]int{rng.IntN(4) - 1, rng.IntN(4) - 1}
	}
	return shape, w
}

// The window kernels agree with the CPU's, exactly (integers, so that no
// order of summation hides a wrong or missing tap), over random windows
// with every field in play: the patches and their adjoint, the three
// reductions, and max pooling's selections both ways.
func TestRandomWindowsOnGPU(t *testing.T) {
	d := testGPU(t)
	rng := rand.New(rand.NewPCG(5, 11))
	r := tensor.NewRNG(3)
	ints := func(shape tensor.Shape) *tensor.Tensor {
		return ops.Cast(tensor.RandUniform(r, tensor.Float64, -50, 50, shape...), tensor.Int64)
	}
	for i := range 150 {
		shape, w := randomWindow(rng, 1+i%3)
		out := w.OutShape(shape)
		what := fmt.Sprintf("case %d: %v %v", i, shape, w)
		x, init := ints(shape), tensor.Scalar(int64(-3))
		gx := onGPU(t, d, x)
		gi := onGPU(t, d, init)
		agree(t, what+" patches", ops.ExtractPatches(gx, gi, w), ops.ExtractPatches(x, init, w))
		patches := ints(append(out.Clone(), w.Dims...))
		agree(t, what+" scatter patches", ops.ScatterPatches(onGPU(t, d, patches), shape, w), ops.ScatterPatches(patches, shape, w))
		for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMax, ops.ReduceMin} {
			agree(t, fmt.Sprintf("%s reduce %d", what, kind), ops.ReduceWindow(gx, gi, kind, w), ops.ReduceWindow(x, init, kind, w))
		}
		src := ints(out)
		for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			agree(t, fmt.Sprintf("%s select %d", what, sel),
				ops.SelectAndScatter(gx, onGPU(t, d, src), gi, sel, w), ops.SelectAndScatter(x, src, init, sel, w))
		}
		// SelectAndGather: the gradient of SelectAndScatter in its source.
		gather := eager.Lookup("SelectAndGather")
		dy := ints(shape)
		attrs := ops.SelectAttrs{Select: ops.SelectGE, Window: w}
		got := eager.Run1(gather, attrs, gx, onGPU(t, d, dy))
		want := eager.Run1(gather, attrs, x, dy)
		agree(t, what+" select and gather", got, want)
	}
}

// SelectAndScatter over windows that do not overlap (max pooling's
// gradient) takes its one-pass path and agrees with the CPU exactly: ties
// go to the first maximum (or minimum), windows partly or wholly on
// padding, values in a small range so that ties are common.
func TestDisjointSelectAndScatterOnGPU(t *testing.T) {
	d := testGPU(t)
	rng := rand.New(rand.NewPCG(8, 13))
	r := tensor.NewRNG(4)
	var kernels []string
	if ctx, ok := d.ctx.(*emu.Context); ok {
		ctx.SetProfiler(func(p emu.Profile) { kernels = append(kernels, p.Kernel) })
		defer ctx.SetProfiler(nil)
	}
	for i := range 80 {
		rank := 1 + i%3
		shape, w := randomWindow(rng, rank)
		for k := range rank {
			w.BaseDilation[k], w.WindowDilation[k] = 1, 1
			w.Strides[k] = w.Dims[k] + rng.IntN(2)
		}
		if !disjoint(w) {
			t.Fatalf("case %d: %v is not disjoint", i, w)
		}
		x := ops.Cast(tensor.RandUniform(r, tensor.Float64, -3, 3, shape...), tensor.Int64)
		src := ops.Cast(tensor.RandUniform(r, tensor.Float64, -50, 50, w.OutShape(shape)...), tensor.Int64)
		init := tensor.Scalar(int64(7))
		for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			agree(t, fmt.Sprintf("case %d: %v %v select %d", i, shape, w, sel),
				ops.SelectAndScatter(onGPU(t, d, x), onGPU(t, d, src), onGPU(t, d, init), sel, w), ops.SelectAndScatter(x, src, init, sel, w))
		}
	}
	if _, ok := d.ctx.(*emu.Context); ok && !slices.Contains(kernels, "window_select_put_ge_s64") {
		t.Errorf("the one-pass kernel did not run: %v", kernels)
	}
}

// 2-D pooling windows over NHWC and NCHW images take the pooling kernels
// and agree with the CPU exactly: window sizes, strides and padding drawn
// at random (SAME's padding among them), every reduction with an init
// that padding taps count as, and the selections of max and min pooling's
// gradients where the windows do not overlap, with ties; in int64 and
// the half types (their taps widened, the result rounded once).
func TestPool2DOnGPU(t *testing.T) {
	d := testGPU(t)
	rng := rand.New(rand.NewPCG(21, 3))
	r := tensor.NewRNG(6)
	var kernels []string
	if ctx, ok := d.ctx.(*emu.Context); ok {
		ctx.SetProfiler(func(p emu.Profile) { kernels = append(kernels, p.Kernel) })
		defer ctx.SetProfiler(nil)
	}
	for i := range 60 {
		nhwc := i%2 == 0
		kh, kw := 1+rng.IntN(3), 1+rng.IntN(3)
		sh, sw := 1+rng.IntN(3), 1+rng.IntN(3)
		ph, pw := [2]int{rng.IntN(3), rng.IntN(3)}, [2]int{rng.IntN(3), rng.IntN(3)}
		n, c, h, wd := 1+rng.IntN(2), 1+rng.IntN(3), 1+rng.IntN(7), 1+rng.IntN(7)
		shape := tensor.Shape{n, h, wd, c}
		w := ops.Window{Dims: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1}, Padding: [][2]int{{0, 0}, ph, pw, {0, 0}},
			BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		if !nhwc {
			shape = tensor.Shape{n, c, h, wd}
			w.Dims, w.Strides, w.Padding = []int{1, 1, kh, kw}, []int{1, 1, sh, sw}, [][2]int{{0, 0}, {0, 0}, ph, pw}
		}
		if _, _, ok := pool2D(shape, w); !ok {
			t.Fatalf("case %d: %v over %v is not a 2-D pooling", i, w, shape)
		}
		out := w.OutShape(shape)
		dt := []tensor.DType{tensor.Int64, tensor.BFloat16, tensor.Float16}[i%3] // small integers: the half types' sums are exact
		x := ops.Cast(ops.Cast(tensor.RandUniform(r, tensor.Float64, -3, 3, shape...), tensor.Int64), dt)
		init := ops.Cast(tensor.Scalar(int64(-2)), dt)
		gx, gi := onGPU(t, d, x), onGPU(t, d, init)
		what := fmt.Sprintf("case %d: %v %v %v", i, dt, shape, w)
		for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMax, ops.ReduceMin} {
			agree(t, fmt.Sprintf("%s reduce %d", what, kind), ops.ReduceWindow(gx, gi, kind, w), ops.ReduceWindow(x, init, kind, w))
		}
		src := ops.Cast(ops.Cast(tensor.RandUniform(r, tensor.Float64, -50, 50, out...), tensor.Int64), dt)
		for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			agree(t, fmt.Sprintf("%s select %d", what, sel),
				ops.SelectAndScatter(gx, onGPU(t, d, src), gi, sel, w), ops.SelectAndScatter(x, src, init, sel, w))
		}
	}
	if _, ok := d.ctx.(*emu.Context); ok {
		for _, k := range []string{"pool2d_max_nhwc_s64", "pool2d_sum_nchw_s64", "pool2d_select_put_le_nchw_s64",
			"pool2d_min_nchwband_bf16", "pool2d_sum_nhwc_f16", "pool2d_select_put_ge_nhwc_bf16", "pool2d_select_put_le_nchwband_f16"} {
			if !slices.Contains(kernels, k) {
				t.Errorf("%s did not run", k)
			}
		}
	}
}

// NCHW windows two columns wide at a stride of two, over rows too wide
// for a band, take the pair kernels (a row of a window one vector of two)
// and agree with the CPU exactly,
// in both float dtypes: small integers for ties, a NaN here and there,
// heights, window heights and strides, and padding (even on the left, any
// on the right) drawn at random; max and min pooling's gradients too.
func TestPoolPairsOnGPU(t *testing.T) {
	d := testGPU(t)
	rng := rand.New(rand.NewPCG(17, 4))
	r := tensor.NewRNG(9)
	launched := recordLaunches(t, d)
	for i := range 24 {
		dt := []tensor.DType{tensor.Float32, tensor.Float64}[i%2]
		kh, sh := 1+rng.IntN(3), 1+rng.IntN(3)
		ph, pw := [2]int{rng.IntN(3), rng.IntN(3)}, [2]int{2 * rng.IntN(2), rng.IntN(3)}
		width := kernels.BandBytes/dt.Size() + 2 + 2*rng.IntN(4) // over a band's shared memory
		shape := tensor.Shape{1, 1 + rng.IntN(2), 1 + rng.IntN(5), width}
		w := ops.Window{Dims: []int{1, 1, kh, 2}, Strides: []int{1, 1, sh, 2}, Padding: [][2]int{{0, 0}, {0, 0}, ph, pw},
			BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		p, nhwc, ok := pool2D(shape, w)
		if !ok || nhwc || poolLayout(p, nhwc, kernelType(dt)) != "nchw2" {
			t.Fatalf("case %d: %v over %v does not take the pair kernels", i, w, shape)
		}
		x := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -3, 3, shape...)), dt)
		if i%5 == 0 { // a NaN in the first image's first row
			at := ops.Reshape(tensor.Arange(0, float64(shape.NumElements()), 1), shape...)
			x = ops.Where(ops.Eq(at, tensor.Scalar(float64(i%3))), ops.Cast(tensor.Scalar(math.NaN()), dt), x)
		}
		init := ops.Cast(tensor.Scalar(-2.0), dt)
		gx, gi := onGPU(t, d, x), onGPU(t, d, init)
		what := fmt.Sprintf("case %d: %v %v %v", i, dt, shape, w)
		for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMax, ops.ReduceMin} {
			agree(t, fmt.Sprintf("%s reduce %d", what, kind), ops.ReduceWindow(gx, gi, kind, w), ops.ReduceWindow(x, init, kind, w))
		}
		src := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -50, 50, w.OutShape(shape)...)), dt)
		for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			agree(t, fmt.Sprintf("%s select %d", what, sel),
				ops.SelectAndScatter(gx, onGPU(t, d, src), gi, sel, w), ops.SelectAndScatter(x, src, init, sel, w))
		}
	}
	mustHaveRun(t, d, launched, "pool2d_max_nchw2_f32", "pool2d_sum_nchw2_f64", "pool2d_select_put_le_nchw2_f32", "pool2d_select_put_ge_nchw2_f64")
}

// NCHW 2x2 windows at a stride of two without padding, on images of even
// height and width, take the 2x2 kernels (chunks of row pairs staged in
// shared memory) and agree with the CPU exactly: the float and half dtypes, a
// chunk of several row pairs and of one (the widest row a chunk holds),
// batches of many chunks, small integers for ties, NaNs; max and min
// pooling's gradients too. An odd height takes a band; a row pair wider
// than a chunk, the pair kernels.
func TestPoolQuadsOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(11)
	launched := recordLaunches(t, d)
	pool := ops.Window{Dims: []int{1, 1, 2, 2}, Strides: []int{1, 1, 2, 2}, Padding: [][2]int{{0, 0}, {0, 0}, {0, 0}, {0, 0}},
		BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
	for i, c := range []struct {
		dt    tensor.DType
		shape tensor.Shape
		quads bool
	}{
		{tensor.Float32, tensor.Shape{3, 5, 28, 28}, true}, // 210 row pairs, 36 a chunk
		{tensor.Float64, tensor.Shape{2, 3, 14, 14}, true},
		{tensor.Float32, tensor.Shape{1, 2, 4, 1024}, true}, // one row pair a chunk
		{tensor.Float64, tensor.Shape{1, 1, 2, 512}, true},
		{tensor.Float32, tensor.Shape{2, 1, 6, 2}, true},
		{tensor.Float32, tensor.Shape{2, 20, 4, 512}, true},  // 40 chunks: blocks take several (the emulator runs 32)
		{tensor.Float32, tensor.Shape{2, 3, 7, 14}, false},   // odd height: a band
		{tensor.Float32, tensor.Shape{1, 1, 2, 2050}, false}, // a row pair wider than a chunk (and a band: pairs)
		{tensor.BFloat16, tensor.Shape{2, 3, 8, 12}, true},   // the half types: taps in float32
		{tensor.Float16, tensor.Shape{1, 2, 6, 28}, true},
		{tensor.BFloat16, tensor.Shape{1, 2, 4, 14}, false}, // a row pair of 56 bytes: not whole vectors
	} {
		p, nhwc, ok := pool2D(c.shape, pool)
		if !ok || nhwc || kernels.PoolQuads(p, kernelType(c.dt)) != c.quads {
			t.Fatalf("case %d: %v: PoolQuads %v, want %v", i, c.shape, !c.quads, c.quads)
		}
		x := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -3, 3, c.shape...)), c.dt)
		if i%2 == 0 { // NaNs here and there
			at := ops.Reshape(tensor.Arange(0, float64(c.shape.NumElements()), 1), c.shape...)
			x = ops.Where(ops.Eq(ops.Rem(at, tensor.Scalar(97.0)), tensor.Scalar(5.0)), ops.Cast(tensor.Scalar(math.NaN()), c.dt), x)
		}
		init := ops.Cast(tensor.Scalar(-2.0), c.dt)
		gx, gi := onGPU(t, d, x), onGPU(t, d, init)
		what := fmt.Sprintf("case %d: %v %v", i, c.dt, c.shape)
		for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMax, ops.ReduceMin} {
			agree(t, fmt.Sprintf("%s reduce %d", what, kind), ops.ReduceWindow(gx, gi, kind, pool), ops.ReduceWindow(x, init, kind, pool))
		}
		src := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -50, 50, pool.OutShape(c.shape)...)), c.dt)
		for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			agree(t, fmt.Sprintf("%s select %d", what, sel),
				ops.SelectAndScatter(gx, onGPU(t, d, src), gi, sel, pool), ops.SelectAndScatter(x, src, init, sel, pool))
		}
	}
	mustHaveRun(t, d, launched, "pool2d_max_nchw2x2_f32", "pool2d_sum_nchw2x2_f64", "pool2d_min_nchw2x2_f32",
		"pool2d_select_put_ge_nchw2x2_f32", "pool2d_select_put_le_nchw2x2_f64", "pool2d_max_nchw2_f32",
		"pool2d_max_nchw2x2_bf16", "pool2d_sum_nchw2x2_f16", "pool2d_select_put_ge_nchw2x2_bf16", "pool2d_select_put_le_nchw2x2_f16")
}

// SelectAndScatter over overlapping 2-D pooling windows takes the pooling
// kernels' two passes (a byte a window for its choice, then a thread an
// element over the windows on it) and agrees with the CPU exactly: NHWC
// and NCHW (by bands), windows of 2 or 3 at strides of 1 or 2, padding,
// the float, integer and half dtypes, ties, NaNs, both selections.
func TestPoolScatterOnGPU(t *testing.T) {
	d := testGPU(t)
	rng := rand.New(rand.NewPCG(19, 6))
	r := tensor.NewRNG(21)
	launched := recordLaunches(t, d)
	dtypes := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.BFloat16, tensor.Float16}
	for i := range 30 {
		dt, nhwc := dtypes[i%len(dtypes)], i%2 == 0
		if dt == tensor.Int32 && !nhwc {
			nhwc = true // NCHW's bands take the float dtypes
		}
		k, s := [2]int{2 + rng.IntN(2), 2 + rng.IntN(2)}, [2]int{1 + rng.IntN(2), 1 + rng.IntN(2)}
		if s[0] >= k[0] && s[1] >= k[1] {
			s[0] = 1 // windows that overlap
		}
		pad := [2][2]int{{rng.IntN(k[0]), rng.IntN(k[0])}, {rng.IntN(k[1]), rng.IntN(k[1])}}
		h, wd, ch := 3+rng.IntN(8), 3+rng.IntN(8), 1+rng.IntN(5)
		shape := tensor.Shape{1 + rng.IntN(2), ch, h, wd}
		w := ops.Window{Dims: []int{1, 1, k[0], k[1]}, Strides: []int{1, 1, s[0], s[1]},
			Padding: [][2]int{{0, 0}, {0, 0}, pad[0], pad[1]}, BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		if nhwc {
			shape = tensor.Shape{shape[0], h, wd, ch}
			w.Dims, w.Strides = []int{1, k[0], k[1], 1}, []int{1, s[0], s[1], 1}
			w.Padding = [][2]int{{0, 0}, pad[0], pad[1], {0, 0}}
		}
		p, isNHWC, ok := pool2D(shape, w)
		if !ok || isNHWC != nhwc || disjoint(w) || !poolScatters(p, nhwc, kernelType(dt)) {
			t.Fatalf("case %d: %v over %v does not take the pooling scatter", i, w, shape)
		}
		x := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -3, 3, shape...)), dt)
		if i%3 == 0 && dt != tensor.Int32 { // NaNs here and there
			at := ops.Reshape(tensor.Arange(0, float64(shape.NumElements()), 1), shape...)
			x = ops.Where(ops.Eq(ops.Rem(at, tensor.Scalar(13.0)), tensor.Scalar(4.0)), ops.Cast(tensor.Scalar(math.NaN()), dt), x)
		}
		init := ops.Cast(tensor.Scalar(-2.0), dt)
		src := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -50, 50, w.OutShape(shape)...)), dt)
		gx, gi, gs := onGPU(t, d, x), onGPU(t, d, init), onGPU(t, d, src)
		for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			agree(t, fmt.Sprintf("case %d: %v %v %v select %d", i, dt, shape, w, sel),
				ops.SelectAndScatter(gx, gs, gi, sel, w), ops.SelectAndScatter(x, src, init, sel, w))
		}
	}
	// NCHW planes of several bands of operand rows: a band's last rows
	// share windows with the next band's first.
	for i, c := range []struct {
		dt     tensor.DType
		shape  tensor.Shape
		k, s   [2]int
		pad    [2][2]int
		stages int // bands a plane
	}{
		{tensor.Float32, tensor.Shape{2, 3, 300, 130}, [2]int{3, 3}, [2]int{2, 2}, [2][2]int{{1, 1}, {1, 1}}, 3},
		{tensor.Float64, tensor.Shape{1, 2, 61, 200}, [2]int{3, 2}, [2]int{1, 2}, [2][2]int{{1, 0}, {0, 0}}, 4},
		{tensor.BFloat16, tensor.Shape{1, 1, 100, 700}, [2]int{3, 3}, [2]int{2, 2}, [2][2]int{{0, 1}, {1, 0}}, 3},
	} {
		w := ops.Window{Dims: []int{1, 1, c.k[0], c.k[1]}, Strides: []int{1, 1, c.s[0], c.s[1]},
			Padding: [][2]int{{0, 0}, {0, 0}, c.pad[0], c.pad[1]}, BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		p, _, _ := pool2D(c.shape, w)
		kt := kernelType(c.dt)
		if per := kernels.ScatterBandRows(p, kt); !poolScatters(p, false, kt) || (p.H+per-1)/per != c.stages {
			t.Fatalf("banded case %d: %v over %v: bands of %d rows, want %d a plane", i, w, c.shape, per, c.stages)
		}
		x := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -3, 3, c.shape...)), c.dt)
		init := ops.Cast(tensor.Scalar(0.5), c.dt)
		src := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -50, 50, w.OutShape(c.shape)...)), c.dt)
		agree(t, fmt.Sprintf("banded case %d: %v %v %v", i, c.dt, c.shape, w),
			ops.SelectAndScatter(onGPU(t, d, x), onGPU(t, d, src), onGPU(t, d, init), ops.SelectGE, w), ops.SelectAndScatter(x, src, init, ops.SelectGE, w))
	}
	mustHaveRun(t, d, launched, "pool2d_select_ge_nhwc_f32", "pool2d_select_le_nchwband_f64", "pool2d_select_ge_nhwc_s32",
		"pool2d_select_scatter_nhwc_bf16", "pool2d_select_scatter_nchwband_f16", "pool2d_select_scatter_nchwband_f32")
}

// NCHW windows the 2x2 and pair kernels do not take go by bands of output
// rows, their input rows staged in shared memory (pool_band.go), and agree
// with the CPU exactly: 3x3 windows at a stride of 2 with padding on an
// image of many bands and on one of a band a plane, a 3x2 window at
// stride 1, SAME's uneven padding, in the float and half dtypes, with
// NaNs and an init that padding taps count as; and the gradients of max
// and min pooling where windows do not overlap, gaps between them too.
func TestPoolBandOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(12)
	launched := recordLaunches(t, d)
	for i, c := range []struct {
		dt    tensor.DType
		shape tensor.Shape
		w     ops.Window
	}{
		{tensor.Float32, tensor.Shape{1, 2, 40, 224}, nchwWindow(3, 3, 2, 2, [2]int{1, 1}, [2]int{1, 1})}, // bands of 4 output rows
		{tensor.Float64, tensor.Shape{2, 3, 7, 7}, nchwWindow(3, 3, 2, 2, [2]int{1, 1}, [2]int{1, 1})},    // a band a plane
		{tensor.Float32, tensor.Shape{2, 6, 8, 512}, nchwWindow(3, 3, 2, 2, [2]int{1, 1}, [2]int{1, 1})},  // 48 bands: blocks take several
		{tensor.Float32, tensor.Shape{1, 2, 9, 10}, nchwWindow(3, 2, 1, 1, [2]int{0, 2}, [2]int{1, 0})},
		{tensor.BFloat16, tensor.Shape{2, 2, 11, 13}, nchwWindow(3, 3, 2, 2, [2]int{1, 1}, [2]int{1, 1})},
		{tensor.Float16, tensor.Shape{1, 3, 8, 8}, nchwWindow(2, 3, 2, 1, [2]int{0, 1}, [2]int{1, 1})},
		{tensor.Float32, tensor.Shape{2, 3, 15, 14}, nchwWindow(2, 2, 2, 2, [2]int{0, 1}, [2]int{0, 0})}, // pairs' windows, odd heights
		// Windows that do not overlap: their gradients take the band too.
		{tensor.Float32, tensor.Shape{2, 2, 40, 224}, nchwWindow(3, 3, 3, 3, [2]int{1, 1}, [2]int{0, 2})},
		{tensor.Float64, tensor.Shape{1, 3, 11, 10}, nchwWindow(2, 3, 3, 4, [2]int{0, 1}, [2]int{1, 0})}, // gaps between windows
		{tensor.BFloat16, tensor.Shape{2, 2, 9, 12}, nchwWindow(3, 3, 3, 3, [2]int{0, 0}, [2]int{0, 0})},
	} {
		p, nhwc, ok := pool2D(c.shape, c.w)
		if !ok || nhwc || poolLayout(p, nhwc, kernelType(c.dt)) != "nchwband" {
			t.Fatalf("case %d: %v over %v does not take the band kernels", i, c.w, c.shape)
		}
		agreePooling(t, d, r, fmt.Sprintf("case %d", i), c.dt, c.shape, c.w, 89, disjoint(c.w))
	}
	mustHaveRun(t, d, launched, "pool2d_max_nchwband_f32", "pool2d_sum_nchwband_f64", "pool2d_min_nchwband_bf16", "pool2d_max_nchwband_f16",
		"pool2d_select_put_ge_nchwband_f32", "pool2d_select_put_le_nchwband_f64", "pool2d_select_put_ge_nchwband_bf16")
}

// nchwWindow is a 2-D pooling window over NCHW images: kh x kw, strides
// sh and sw, padding ph and pw (low, high).
func nchwWindow(kh, kw, sh, sw int, ph, pw [2]int) ops.Window {
	return ops.Window{Dims: []int{1, 1, kh, kw}, Strides: []int{1, 1, sh, sw}, Padding: [][2]int{{0, 0}, {0, 0}, ph, pw},
		BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
}

// agreePooling checks ReduceWindow (sum, max and min, with an init that
// padding taps count as) of w over random small integers of dt and shape,
// a NaN every nanEvery elements, on d against the CPU, and where grads is
// set SelectAndScatter (both selections) too.
func agreePooling(t *testing.T, d *Device, r *tensor.RNG, what string, dt tensor.DType, shape tensor.Shape, w ops.Window, nanEvery float64, grads bool) {
	t.Helper()
	x := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -3, 3, shape...)), dt)
	at := ops.Reshape(tensor.Arange(0, float64(shape.NumElements()), 1), shape...)
	x = ops.Where(ops.Eq(ops.Rem(at, tensor.Scalar(nanEvery)), tensor.Scalar(7.0)), ops.Cast(tensor.Scalar(math.NaN()), dt), x)
	init := ops.Cast(tensor.Scalar(-2.5), dt)
	gx, gi := onGPU(t, d, x), onGPU(t, d, init)
	for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMax, ops.ReduceMin} {
		agree(t, fmt.Sprintf("%s: %v %v reduce %d", what, dt, shape, kind), ops.ReduceWindow(gx, gi, kind, w), ops.ReduceWindow(x, init, kind, w))
	}
	if !grads {
		return
	}
	src := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -50, 50, w.OutShape(shape)...)), dt)
	for _, sel := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
		agree(t, fmt.Sprintf("%s: %v %v select %d", what, dt, shape, sel),
			ops.SelectAndScatter(gx, onGPU(t, d, src), gi, sel, w), ops.SelectAndScatter(x, src, init, sel, w))
	}
}

// mustHaveRun fails t for each of kernels that launched (recordLaunches
// of d) does not hold, where d records them (the emulator).
func mustHaveRun(t *testing.T, d *Device, launched *[]string, kernels ...string) {
	t.Helper()
	if _, ok := d.ctx.(*emu.Context); !ok {
		return
	}
	for _, k := range kernels {
		if !slices.Contains(*launched, k) {
			t.Errorf("%s did not run", k)
		}
	}
}

// recordLaunches collects the names of the kernels d launches until t
// ends, where d is the emulator (nil elsewhere: nothing is collected).
func recordLaunches(t *testing.T, d *Device) *[]string {
	var launched []string
	if ctx, ok := d.ctx.(*emu.Context); ok {
		ctx.SetProfiler(func(p emu.Profile) { launched = append(launched, p.Kernel) })
		t.Cleanup(func() { ctx.SetProfiler(nil) })
	}
	return &launched
}
