package cuda

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Max pooling that keeps its choices agrees with the CPU in every layout
// of the pooling kernels (NHWC, the NCHW 2x2 quads, bands, column tiles,
// the pairs' geometry by tiles, a thread a window): the pooled values and
// taps, MaxUnpool2D and its gradient; and MaxPool2D under a tape on the
// GPU takes it, its gradient the CPU's without searching a window again.
func TestMaxPoolKeepsArgmaxOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(41)
	launched := recordLaunches(t, d)
	_, emulated := d.ctx.(*emu.Context) // the launches are the emulator's to record
	var all []string
	same := func(k, s int) ops.PoolOpts {
		return ops.PoolOpts{Size: [2]int{k, k}, Strides: [2]int{s, s}, Padding: ops.Same}
	}
	nchw := func(o ops.PoolOpts) ops.PoolOpts { o.Format = ops.NCHW; return o }
	for i, c := range []struct {
		dt     tensor.DType
		shape  tensor.Shape
		o      ops.PoolOpts
		layout string
	}{
		{tensor.Float32, tensor.Shape{2, 9, 10, 3}, same(3, 2), "nhwc"},
		{tensor.Float16, tensor.Shape{1, 6, 8, 5}, same(2, 2), "nhwc"},
		{tensor.Uint8, tensor.Shape{1, 5, 6, 2}, ops.PoolOpts{Size: [2]int{2, 3}, Strides: [2]int{1, 2}}, "nhwc"},
		{tensor.Float32, tensor.Shape{2, 3, 8, 12}, nchw(same(2, 2)), "nchw2x2"},
		{tensor.BFloat16, tensor.Shape{1, 2, 8, 16}, nchw(same(2, 2)), "nchw2x2"},
		{tensor.Float64, tensor.Shape{1, 2, 9, 11}, nchw(same(3, 2)), "nchwband"},
		{tensor.Float32, tensor.Shape{1, 2, 9, 1500}, nchw(same(3, 2)), "nchwtile"},
		{tensor.Float32, tensor.Shape{1, 1, 6, 3000}, nchw(ops.PoolOpts{Size: [2]int{2, 2}}), "nchwtile"}, // the pairs' geometry
		{tensor.Float32, tensor.Shape{1, 2, 10, 11}, nchw(same(3, 3)), "nchwband"},                        // disjoint: the band's put
		{tensor.Int32, tensor.Shape{1, 2, 5, 6}, nchw(ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{1, 1}}), "nchw"},
		{tensor.Int64, tensor.Shape{2, 1, 5, 7}, nchw(same(2, 2)), "nchw"},
	} {
		what := fmt.Sprintf("case %d (%v %v)", i, c.dt, c.shape)
		if p, nhwc, _ := pool2D(c.shape, maxPoolWindow(c.o)); argmaxLayout(p, nhwc, kernelType(c.dt)) != c.layout {
			t.Fatalf("%s: takes the %s kernels", what, argmaxLayout(p, nhwc, kernelType(c.dt)))
		}
		x := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -3, 3, c.shape...)), c.dt)
		if c.dt.IsFloat() { // ties everywhere, and a NaN every 97 elements
			at := ops.Reshape(tensor.Arange(0, float64(c.shape.NumElements()), 1), c.shape...)
			x = ops.Where(ops.Eq(ops.Rem(at, tensor.Scalar(97.0)), tensor.Scalar(5.0)), ops.Cast(tensor.Scalar(math.NaN()), c.dt), x)
		}
		gx := onGPU(t, d, x)
		y, taps := ops.MaxPool2DWithArgmax(gx, c.o)
		wy, wtaps := ops.MaxPool2DWithArgmax(x, c.o)
		agree(t, what+" pooled", y, wy)
		agree(t, what+" taps", taps, wtaps)
		if kernel := "pool2d_argmax_" + c.layout + "_"; emulated && !slices.ContainsFunc(*launched, func(k string) bool { return strings.HasPrefix(k, kernel) }) {
			t.Errorf("%s: no %s* kernel ran (%v)", what, kernel, *launched)
		}
		all = append(all, *launched...)
		*launched = (*launched)[:0]
		src := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -50, 50, wy.Shape()...)), c.dt)
		gsrc := onGPU(t, d, src)
		agree(t, what+" unpooled", ops.MaxUnpool2D(gsrc, taps, c.shape, c.o), ops.MaxUnpool2D(src, wtaps, c.shape, c.o))
		if !c.dt.IsFloat() {
			all = append(all, *launched...)
			continue
		}
		// MaxUnpool2D's gradient in its values gathers at the taps.
		g := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -50, 50, c.shape...)), c.dt)
		gathered := func(values, taps, g *tensor.Tensor) *tensor.Tensor {
			tp := tape.New()
			tp.Watch(values)
			return tp.Gradient(ops.Sum(ops.Mul(ops.MaxUnpool2D(values, taps, c.shape, c.o), g)), values)[0]
		}
		agree(t, what+" gathered", gathered(gsrc, taps, onGPU(t, d, g)), gathered(src, wtaps, g))
		// MaxPool2D's gradient on the GPU goes through the kept taps.
		pooledGrad := func(x, src *tensor.Tensor) *tensor.Tensor {
			tp := tape.New()
			tp.Watch(x)
			return tp.Gradient(ops.Sum(ops.Mul(ops.MaxPool2D(x, c.o), src)), x)[0]
		}
		agree(t, what+" MaxPool2D's gradient", pooledGrad(gx, gsrc), pooledGrad(x, src))
		for _, k := range *launched {
			if strings.HasPrefix(k, "pool2d_select_ge") || strings.HasPrefix(k, "pool2d_select_put") || strings.HasPrefix(k, "window_select") {
				t.Errorf("%s: MaxPool2D's gradient searched its windows again (%s)", what, k)
			}
		}
		all = append(all, *launched...)
	}
	*launched = all
	mustHaveRun(t, d, launched, "pool2d_unpool_put_nhwc_f16", "pool2d_unpool_put_nchw2x2_f32", "pool2d_unpool_put_nchw2x2_bf16",
		"pool2d_unpool_put_nchwband_f32", "pool2d_unpool_put_nchwtile_f32", "pool2d_unpool_put_nchw_s64",
		"pool2d_select_scatter_nhwc_f32", "pool2d_select_scatter_nhwc_u8", "pool2d_select_scatter_nchwband_f64",
		"pool2d_select_scatter_nchwtile_f32", "pool2d_select_scatter_nchw_s32",
		"pool2d_unpool_gather_nhwc_f32", "pool2d_unpool_gather_nchw_f64")
}

// maxPoolWindow is the window of a 2-D pooling o (VALID or SAME, as the
// cases above use) for the pool2D check, the operand's size aside.
func maxPoolWindow(o ops.PoolOpts) ops.Window {
	s := o.Strides
	if s == [2]int{} {
		s = o.Size
	}
	dims, strides := []int{1, o.Size[0], o.Size[1], 1}, []int{1, s[0], s[1], 1}
	if o.Format == ops.NCHW {
		dims, strides = []int{1, 1, o.Size[0], o.Size[1]}, []int{1, 1, s[0], s[1]}
	}
	return ops.Window{Dims: dims, Strides: strides, Padding: make([][2]int, 4), BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
}

// The gradient of average pooling (of a window sum) agrees with the CPU:
// windows side by side copy each window's gradient over its block,
// others take pool2d_spread (a thread an NHWC element, bands and tiles
// of NCHW rows), never a patch matrix.
func TestPoolSumGradientsOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(43)
	launched := recordLaunches(t, d)
	var all []string
	nchw := func(o ops.PoolOpts) ops.PoolOpts { o.Format = ops.NCHW; return o }
	for i, c := range []struct {
		dt    tensor.DType
		shape tensor.Shape
		o     ops.PoolOpts
	}{
		{tensor.Float32, tensor.Shape{2, 9, 10, 3}, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same}},
		{tensor.Float64, tensor.Shape{1, 7, 6, 2}, ops.PoolOpts{Size: [2]int{2, 3}, Strides: [2]int{1, 2}}},
		{tensor.BFloat16, tensor.Shape{1, 6, 8, 4}, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{1, 1}, Padding: ops.Same}},
		{tensor.Float32, tensor.Shape{2, 9, 10, 1}, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same}}, // one channel
		{tensor.Float32, tensor.Shape{2, 3, 11, 12}, nchw(ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same})},
		{tensor.Float64, tensor.Shape{1, 2, 7, 1500}, nchw(ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same})},
		{tensor.Float32, tensor.Shape{1, 1, 40, 5}, nchw(ops.PoolOpts{Size: [2]int{20, 3}, Strides: [2]int{3, 1}})}, // tall windows
		// Side by side: exact, cut at the end, padded at the start.
		{tensor.Float32, tensor.Shape{2, 8, 6, 3}, ops.PoolOpts{Size: [2]int{2, 2}}},
		{tensor.Float32, tensor.Shape{1, 2, 9, 7}, nchw(ops.PoolOpts{Size: [2]int{2, 3}})},
		{tensor.Float64, tensor.Shape{1, 7, 7, 2}, ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Explicit, Explicit: [2][2]int{{1, 0}, {1, 1}}}},
	} {
		what := fmt.Sprintf("case %d (%v %v %v)", i, c.dt, c.shape, c.o)
		x := ops.Cast(tensor.RandNormal(r, tensor.Float32, c.shape...), c.dt)
		grad := func(x *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			tp := tape.New()
			tp.Watch(x)
			y := ops.AvgPool2D(x, c.o)
			return y, tp.Gradient(ops.Sum(ops.Mul(y, ops.Sin(y))), x)[0]
		}
		gy, gg := grad(onGPU(t, d, x))
		wy, wg := grad(x)
		agree(t, what+" pooled", gy, wy)
		agree(t, what+" gradient", gg, wg)
		for _, k := range *launched {
			if strings.HasPrefix(k, "window_") {
				t.Errorf("%s: %s ran", what, k)
			}
		}
		all = append(all, *launched...)
		*launched = (*launched)[:0]
	}
	*launched = all
	mustHaveRun(t, d, launched, "pool2d_spread_nhwc_f32", "pool2d_spread_nhwc_f64", "pool2d_spread_nhwc_bf16",
		"pool2d_spread_nchwband_f32", "pool2d_spread_nchwtile_f64")
}

// Taps of another making that name no tap inside the operand choose
// nothing on the GPU as on the CPU: the put, the scatter and the gather.
func TestMaxUnpool2DIgnoresTapsOutsideTheOperandOnGPU(t *testing.T) {
	d := testGPU(t)
	pad := ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Explicit, Explicit: [2][2]int{{1, 0}, {0, 0}}}
	overlapping := pad
	overlapping.Strides = [2]int{1, 1}
	for _, c := range []struct {
		o      ops.PoolOpts
		shape  []int
		pooled []int
		taps   []uint8
	}{
		{pad, []int{1, 3, 2, 1}, []int{1, 2, 1, 1}, []uint8{0, 9}}, // on padding; past the window
		{pad, []int{1, 3, 2, 1}, []int{1, 2, 1, 1}, []uint8{3, 1}},
		{overlapping, []int{1, 3, 2, 1}, []int{1, 3, 1, 1}, []uint8{1, 200, 2}},
	} {
		pooled := c.pooled
		taps := tensor.FromSlice(c.taps, pooled...)
		values := ops.Cast(ops.Add(ops.Iota(tensor.Float64, tensor.Shape(pooled), 1), tensor.Scalar(1.0)), tensor.Float32)
		g := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, c.shape...)
		run := func(values, taps, g *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			tp := tape.New()
			tp.Watch(values)
			un := ops.MaxUnpool2D(values, taps, c.shape, c.o)
			return un, tp.Gradient(ops.Sum(ops.Mul(un, g)), values)[0]
		}
		wu, wg := run(values, taps, g)
		gu, gg := run(onGPU(t, d, values), onGPU(t, d, taps), onGPU(t, d, g))
		agree(t, fmt.Sprint(c.o, " unpooled"), gu, wu)
		agree(t, fmt.Sprint(c.o, " gathered"), gg, wg)
	}
}

// Max pooling keeping its choices inside a loop's body on a tape (the
// choices stored per iteration for the backward frame) gives the CPU's
// values and gradients on the GPU: eagerly, traced, and recorded as a
// CUDA graph.
func TestMaxPoolInALoopOnGPU(t *testing.T) {
	d := testGPU(t)
	launched := recordLaunches(t, d)
	r := tensor.NewRNG(3)
	x, w := tensor.RandNormal(r, tensor.Float32, 2, 8, 8, 3), tensor.RandNormal(r, tensor.Float32, 2, 8, 8, 3)
	o := ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{1, 1}, Padding: ops.Same}
	run := func(in []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(in[0])
		out := control.Fori(0, 3, func(_ *tensor.Tensor, v []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Tanh(ops.Mul(ops.MaxPool2D(v[0], o), in[1]))}
		}, []*tensor.Tensor{in[0]}, control.WhileOptions{})
		return []*tensor.Tensor{out[0], tp.Gradient(ops.Sum(ops.Square(out[0])), in[0])[0]}
	}
	want := run([]*tensor.Tensor{x, w})
	gx, gw := onGPU(t, d, x), onGPU(t, d, w)
	agree(t, "eager values", run([]*tensor.Tensor{gx, gw})[0], want[0])
	agree(t, "eager gradient", run([]*tensor.Tensor{gx, gw})[1], want[1])
	for _, record := range []bool{false, true} {
		f := trace.NewFunction(run)
		f.Record = record
		for call := range 3 { // the trace, then the graph (recorded on its first run)
			got, err := f.Call(gx, gw)
			if err != nil {
				t.Fatal(err)
			}
			agree(t, fmt.Sprintf("record %v call %d values", record, call), got[0], want[0])
			agree(t, fmt.Sprintf("record %v call %d gradient", record, call), got[1], want[1])
		}
	}
	mustHaveRun(t, d, launched, "pool2d_argmax_nhwc_f32", "pool2d_select_scatter_nhwc_f32")
}
