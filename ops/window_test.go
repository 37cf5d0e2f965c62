package ops_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func TestReduceWindowXLAStyle(t *testing.T) {
	// A 4x6 input reduced by max over 2x3 windows with stride 2x3 (VALID),
	// as in the XLA document's ReduceWindow example.
	x := tensor.FromSlice(f32(
		10, 12, 8, 7, 5, 6,
		3, 4, 11, 9, 1, 2,
		0, 5, 2, 13, 6, 3,
		1, 14, 7, 4, 8, 9), 4, 6)
	minF := tensor.Scalar(float32(-3.4e38))
	w := ops.Window{Dims: []int{2, 3}, Strides: []int{2, 3}}
	check(t, "max 2x3", ops.ReduceWindow(x, minF, ops.ReduceMax, w), tensor.Shape{2, 2}, f32(12, 9, 14, 13))
	// Stride 1 along columns: windows overlap.
	w1 := ops.Window{Dims: []int{2, 3}, Strides: []int{2, 1}}
	check(t, "max stride 1", ops.ReduceWindow(x, minF, ops.ReduceMax, w1), tensor.Shape{2, 4},
		f32(12, 12, 11, 9, 14, 14, 13, 13))
	check(t, "user max", ops.ReduceWindowWith(x, minF, ops.Max, w), tensor.Shape{2, 2}, f32(12, 9, 14, 13))
	// SAME-style padding with a sum: a 3-wide window over a row of 4.
	row := tensor.FromSlice(f32(1, 2, 3, 4), 1, 4)
	ws := ops.Window{Dims: []int{1, 3}, Padding: [][2]int{{0, 0}, {1, 1}}}
	check(t, "sum padded", ops.ReduceWindow(row, tensor.Scalar(float32(0)), ops.ReduceSum, ws), tensor.Shape{1, 4}, f32(3, 6, 9, 7))
	// Base dilation puts holes between elements; window dilation between taps.
	wd := ops.Window{Dims: []int{1, 2}, BaseDilation: []int{1, 2}}
	check(t, "base dilation", ops.ReduceWindow(row, tensor.Scalar(float32(0)), ops.ReduceSum, wd), tensor.Shape{1, 6}, f32(1, 2, 2, 3, 3, 4))
	wr := ops.Window{Dims: []int{1, 2}, WindowDilation: []int{1, 2}}
	check(t, "window dilation", ops.ReduceWindow(row, tensor.Scalar(float32(0)), ops.ReduceSum, wr), tensor.Shape{1, 2}, f32(4, 6))
}

func TestSelectAndScatterOverlap(t *testing.T) {
	// The 9 is the maximum of both top windows (columns 0-2 and 2-4), so it
	// receives 2 + 6 = 8 under Add, as the XLA document's figure describes.
	x := tensor.FromSlice(f32(
		7, 2, 9, 3, 1,
		3, 8, 4, 3, 4,
		1, 5, 7, 5, 6,
		0, 6, 2, 10, 2), 4, 5)
	src := tensor.FromSlice(f32(2, 6, 3, 1), 2, 2)
	w := ops.Window{Dims: []int{2, 3}, Strides: []int{2, 2}}
	got := ops.SelectAndScatter(x, src, tensor.Scalar(float32(0)), ops.SelectGE, w)
	check(t, "overlap", got, tensor.Shape{4, 5}, f32(
		0, 0, 8, 0, 0,
		0, 0, 0, 0, 0,
		0, 0, 3, 0, 0,
		0, 0, 0, 1, 0))
	// Non-overlapping 2x2 windows, min selection, init 1.
	m := tensor.FromSlice(f32(4, 2, 3, 5), 2, 2)
	check(t, "min", ops.SelectAndScatter(m, tensor.FromSlice(f32(7), 1, 1), tensor.Scalar(float32(1)), ops.SelectLE,
		ops.Window{Dims: []int{2, 2}, Strides: []int{2, 2}}), tensor.Shape{2, 2}, f32(1, 8, 1, 1))
}

// naiveConv2D is a direct NHWC convolution, written independently of the
// library: lhs dilation ld, padding pad (negative crops), stride s, rhs
// dilation rd, kernel HWIO.
func naiveConv2D(x []float64, n, h, w, c int, k []float64, kh, kw, o int, s, ld, rd [2]int, pad [2][2]int) ([]float64, [2]int) {
	dh, dw := (h-1)*ld[0]+1, (w-1)*ld[1]+1
	ph, pw := dh+pad[0][0]+pad[0][1], dw+pad[1][0]+pad[1][1]
	sh, sw := (kh-1)*rd[0]+1, (kw-1)*rd[1]+1
	oh, ow := 0, 0
	if ph >= sh {
		oh = (ph-sh)/s[0] + 1
	}
	if pw >= sw {
		ow = (pw-sw)/s[1] + 1
	}
	at := func(b, i, j, ch int) float64 { // padded, dilated coordinates
		i -= pad[0][0]
		j -= pad[1][0]
		if i < 0 || j < 0 || i%ld[0] != 0 || j%ld[1] != 0 || i/ld[0] >= h || j/ld[1] >= w {
			return 0
		}
		return x[((b*h+i/ld[0])*w+j/ld[1])*c+ch]
	}
	out := make([]float64, n*oh*ow*o)
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for oc := 0; oc < o; oc++ {
					sum := 0.0
					for a := 0; a < kh; a++ {
						for bb := 0; bb < kw; bb++ {
							for ch := 0; ch < c; ch++ {
								sum += at(b, i*s[0]+a*rd[0], j*s[1]+bb*rd[1], ch) * k[((a*kw+bb)*c+ch)*o+oc]
							}
						}
					}
					out[((b*oh+i)*ow+j)*o+oc] = sum
				}
			}
		}
	}
	return out, [2]int{oh, ow}
}

func TestConvAgainstDirect(t *testing.T) {
	type cfg struct {
		name       string
		s, ld, rd  [2]int
		pad        [2][2]int
		h, w, c, o int
	}
	for _, c := range []cfg{
		{"plain", [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{}, 5, 6, 3, 4},
		{"stride", [2]int{2, 3}, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{}, 7, 8, 2, 3},
		{"padding", [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{{1, 2}, {2, 0}}, 4, 4, 2, 2},
		{"negative padding", [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}, [2][2]int{{-1, 1}, {0, -1}}, 6, 6, 1, 2},
		{"rhs dilation", [2]int{1, 2}, [2]int{1, 1}, [2]int{2, 2}, [2][2]int{{1, 1}, {1, 1}}, 7, 7, 2, 2},
		{"lhs dilation", [2]int{1, 1}, [2]int{2, 2}, [2]int{1, 1}, [2][2]int{{1, 1}, {0, 0}}, 4, 3, 2, 3},
		{"everything", [2]int{2, 1}, [2]int{2, 1}, [2]int{1, 2}, [2][2]int{{2, -1}, {1, 2}}, 5, 6, 3, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, kh, kw := 2, 2, 3
			x := rnd(1, -1, 1, n, c.h, c.w, c.c)
			k := rnd(2, -1, 1, kh, kw, c.c, c.o)
			want, out := naiveConv2D(tensor.ToSlice[float64](x), n, c.h, c.w, c.c, tensor.ToSlice[float64](k), kh, kw, c.o, c.s, c.ld, c.rd, c.pad)
			opts := ops.ConvOpts{Strides: c.s[:], LhsDilation: c.ld[:], RhsDilation: c.rd[:],
				Padding: [][2]int{c.pad[0], c.pad[1]}, Dims: ops.NHWCDims(2)}
			got := ops.Conv(x, k, opts)
			if !got.Shape().Equal(tensor.Shape{n, out[0], out[1], c.o}) {
				t.Fatalf("shape %v, want %v", got.Shape(), []int{n, out[0], out[1], c.o})
			}
			if d := approx.Diff(tensor.ToSlice[float64](got), want, 1e-12); d != "" {
				t.Error(d)
			}
			// The same convolution in NCHW with an OIHW kernel.
			nchw := ops.Conv(ops.Transpose(x, 0, 3, 1, 2), ops.Transpose(k, 3, 2, 0, 1),
				ops.ConvOpts{Strides: opts.Strides, LhsDilation: opts.LhsDilation, RhsDilation: opts.RhsDilation,
					Padding: opts.Padding, Dims: ops.NCHWDims(2)})
			if d := approx.Diff(tensor.ToSlice[float64](ops.Transpose(nchw, 0, 2, 3, 1)), want, 1e-12); d != "" {
				t.Error("NCHW:", d)
			}
		})
	}
}

func TestConv2DWrappersAndGroups(t *testing.T) {
	x := rnd(1, -1, 1, 2, 5, 5, 4)
	f := rnd(2, -1, 1, 3, 3, 4, 6)
	same := ops.Conv2D(x, f, ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 2}})
	if !same.Shape().Equal(tensor.Shape{2, 3, 3, 6}) {
		t.Errorf("SAME stride 2 shape %v", same.Shape())
	}
	valid := ops.Conv2D(x, f, ops.Conv2DOpts{})
	if !valid.Shape().Equal(tensor.Shape{2, 3, 3, 6}) {
		t.Errorf("VALID shape %v", valid.Shape())
	}
	nchw := ops.Conv2D(ops.Transpose(x, 0, 3, 1, 2), f, ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 2}, Format: ops.NCHW})
	if d := approx.Diff(tensor.ToSlice[float64](ops.Transpose(nchw, 0, 2, 3, 1)), tensor.ToSlice[float64](same), 1e-12); d != "" {
		t.Error("NCHW vs NHWC:", d)
	}
	// Two groups equal two half-convolutions side by side.
	g := rnd(3, -1, 1, 3, 3, 2, 6)
	grouped := ops.Conv(x, g, ops.ConvOpts{FeatureGroups: 2, Dims: ops.NHWCDims(2)})
	halves := ops.Split(x, 3, []int{2, 2})
	ks := ops.Split(g, 3, []int{3, 3})
	want := ops.Concatenate(3, ops.Conv2D(halves[0], ks[0], ops.Conv2DOpts{}), ops.Conv2D(halves[1], ks[1], ops.Conv2DOpts{}))
	if d := approx.Diff(tensor.ToSlice[float64](grouped), tensor.ToSlice[float64](want), 1e-12); d != "" {
		t.Error("groups:", d)
	}
}

func TestDepthwiseConv2D(t *testing.T) {
	x := rnd(1, -1, 1, 2, 5, 5, 3)
	f := rnd(2, -1, 1, 3, 3, 3, 2)
	got := ops.DepthwiseConv2D(x, f, ops.Conv2DOpts{Padding: ops.Same})
	// Channel c*2+m is input channel c convolved with f[:, :, c, m].
	for c := 0; c < 3; c++ {
		xc := ops.Slice(x, []int{0, 0, 0, c}, []int{2, 5, 5, c + 1}, nil)
		for m := 0; m < 2; m++ {
			fc := ops.Slice(f, []int{0, 0, c, m}, []int{3, 3, c + 1, m + 1}, nil)
			want := ops.Conv2D(xc, fc, ops.Conv2DOpts{Padding: ops.Same})
			ch := ops.Slice(got, []int{0, 0, 0, c*2 + m}, []int{2, 5, 5, c*2 + m + 1}, nil)
			if d := approx.Diff(tensor.ToSlice[float64](ch), tensor.ToSlice[float64](want), 1e-12); d != "" {
				t.Errorf("channel %d: %s", c*2+m, d)
			}
		}
	}
	if r := tape.CheckGradient(func(in []T) T { return ops.DepthwiseConv2D(in[0], in[1], ops.Conv2DOpts{Strides: [2]int{2, 1}}) },
		[]T{rnd(3, -1, 1, 1, 4, 4, 2), rnd(4, -1, 1, 2, 2, 2, 2)}, 0); r.MaxError > 1e-6 {
		t.Error(r)
	}
}

// The GEMM convolution (both layouts) and its two backprop ops, each
// differentiated in every input (so second derivatives through a
// convolution are right).
func TestConv2DGemmGradients(t *testing.T) {
	for _, format := range []ops.DataFormat{ops.NCHW, ops.NHWC} {
		o := ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 1}, Dilations: [2]int{1, 2}, Format: format}
		x, f := rnd(1, -1, 1, 2, 3, 5, 6), rnd(2, -1, 1, 3, 2, 3, 4)
		if format == ops.NHWC {
			x = rnd(1, -1, 1, 2, 5, 6, 3)
		}
		dy := rnd(3, -1, 1, ops.Conv2D(x, f, o).Shape()...)
		for name, c := range map[string]struct {
			f  func([]T) T
			in []T
		}{
			"forward":         {func(in []T) T { return ops.Conv2D(in[0], in[1], o) }, []T{x, f}},
			"backprop input":  {func(in []T) T { return ops.Conv2DBackpropInput(x.Shape(), in[0], in[1], o) }, []T{f, dy}},
			"backprop filter": {func(in []T) T { return ops.Conv2DBackpropFilter(in[0], f.Shape(), in[1], o) }, []T{x, dy}},
		} {
			if r := tape.CheckGradient(c.f, c.in, 0); r.MaxError > 1e-6 {
				t.Errorf("%v %s: %v", format, name, r)
			}
		}
	}
}

func TestConv2DBackpropsMatchTheTape(t *testing.T) {
	for _, o := range []ops.Conv2DOpts{
		{Padding: ops.Same, Strides: [2]int{2, 1}, Dilations: [2]int{1, 2}},
		{Padding: ops.Valid, Format: ops.NCHW},
		{Padding: ops.Explicit, Explicit: [2][2]int{{1, 0}, {2, 1}}, Strides: [2]int{1, 2}},
	} {
		x := rnd(1, -1, 1, 2, 6, 7, 3)
		if o.Format == ops.NCHW {
			x = rnd(1, -1, 1, 2, 3, 6, 7)
		}
		f := rnd(2, -1, 1, 3, 2, 3, 4)
		tp := tape.New()
		tp.Watch(x, f)
		y := ops.Conv2D(x, f, o)
		dy := rnd(3, -1, 1, y.Shape()...)
		g := tp.GradientSeeded(y, dy, x, f)
		dx := ops.Conv2DBackpropInput(x.Shape(), f, dy, o)
		df := ops.Conv2DBackpropFilter(x, f.Shape(), dy, o)
		if d := approx.Diff(tensor.ToSlice[float64](dx), tensor.ToSlice[float64](g[0]), 1e-12); d != "" {
			t.Errorf("%v input: %s", o, d)
		}
		if d := approx.Diff(tensor.ToSlice[float64](df), tensor.ToSlice[float64](g[1]), 1e-12); d != "" {
			t.Errorf("%v filter: %s", o, d)
		}
	}
}

func TestPooling(t *testing.T) {
	x := tensor.FromSlice(f32(1, 2, 3, 4, 5, 6, 7, 8, 9), 1, 3, 3, 1)
	check(t, "max valid", ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{1, 1}}), tensor.Shape{1, 2, 2, 1}, f32(5, 6, 8, 9))
	check(t, "max same", ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Same}), tensor.Shape{1, 2, 2, 1}, f32(5, 6, 8, 9))
	check(t, "avg same", ops.AvgPool2D(x, ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Same}), tensor.Shape{1, 2, 2, 1}, f32(3, 4.5, 7.5, 9))
	check(t, "avg nchw", ops.AvgPool2D(ops.Reshape(x, 1, 1, 3, 3), ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{1, 1}, Format: ops.NCHW}),
		tensor.Shape{1, 1, 2, 2}, f32(3, 4, 6, 7))
}

// The compositions of window ops (XLA's Conv, the pools), against finite
// differences; the window ops themselves are in the conformance table.
func TestWindowGradients(t *testing.T) {
	cases := []gradCase{
		{"Conv stride dilation padding", func(x []T) T {
			return ops.Conv(x[0], x[1], ops.ConvOpts{Strides: []int{2, 1}, RhsDilation: []int{1, 2}, Padding: [][2]int{{1, 1}, {2, -1}},
				Dims: ops.NHWCDims(2)})
		}, []T{rnd(1, -1, 1, 2, 5, 6, 2), rnd(2, -1, 1, 2, 2, 2, 3)}},
		{"Conv lhs dilation NCHW", func(x []T) T {
			return ops.Conv(x[0], x[1], ops.ConvOpts{LhsDilation: []int{2, 1}, Dims: ops.NCHWDims(2)})
		}, []T{rnd(1, -1, 1, 1, 2, 3, 4), rnd(2, -1, 1, 3, 2, 2, 2)}},
		{"Conv 1-d grouped", func(x []T) T {
			return ops.Conv(x[0], x[1], ops.ConvOpts{FeatureGroups: 2, Dims: ops.NHWCDims(1)})
		}, []T{rnd(1, -1, 1, 2, 6, 4), rnd(2, -1, 1, 3, 2, 4)}},
		{"Conv 3-d", func(x []T) T {
			return ops.Conv(x[0], x[1], ops.ConvOpts{Strides: []int{1, 2, 1}, Dims: ops.NHWCDims(3)})
		}, []T{rnd(1, -1, 1, 1, 3, 4, 3, 2), rnd(2, -1, 1, 2, 2, 2, 2, 2)}},
		{"MaxPool2D", func(x []T) T { return ops.MaxPool2D(x[0], ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Same}) }, []T{rnd(1, -1, 1, 2, 3, 5, 2)}},
		{"AvgPool2D", func(x []T) T {
			return ops.AvgPool2D(x[0], ops.PoolOpts{Size: [2]int{3, 2}, Strides: [2]int{1, 1}, Padding: ops.Same, Format: ops.NCHW})
		}, []T{rnd(1, -1, 1, 1, 2, 4, 4)}},
		// Windows side by side: the gradient copies each window's over its
		// block, cut where windows end short of the input, padded with
		// zeros where they start before it.
		{"AvgPool2D side by side", func(x []T) T {
			return ops.AvgPool2D(x[0], ops.PoolOpts{Size: [2]int{2, 3}, Format: ops.NHWC})
		}, []T{rnd(1, -1, 1, 2, 5, 7, 3)}},
		{"AvgPool2D side by side padded", func(x []T) T {
			return ops.AvgPool2D(x[0], ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Explicit, Explicit: [2][2]int{{1, 0}, {1, 2}}, Format: ops.NCHW})
		}, []T{rnd(1, -1, 1, 1, 2, 5, 4)}},
		{"ReduceWindow sum side by side, negative padding", func(x []T) T {
			return ops.ReduceWindow(x[0], tensor.Scalar(0.0), ops.ReduceSum, ops.Window{Dims: []int{2, 2}, Strides: []int{2, 2}, Padding: [][2]int{{-1, 0}, {0, -1}}})
		}, []T{rnd(1, -1, 1, 6, 7)}},
	}
	runGradients(t, cases, nil, nil)
}

func TestWindowBadInput(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 5, 5, 3)
	f := tensor.Zeros(tensor.Float32, 3, 3, 3, 4)
	nchw := ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW}
	runBadInput(t, []badInput{
		{"window rank", func() { ops.ReduceWindow(x, tensor.Scalar(float32(0)), ops.ReduceSum, ops.Window{Dims: []int{2, 2}}) }, tensor.ErrRank, "2 window dimensions for rank 4"},
		{"zero stride", func() {
			ops.ReduceWindow(x, tensor.Scalar(float32(0)), ops.ReduceSum, ops.Window{Dims: []int{1, 2, 2, 1}, Strides: []int{1, 0, 1, 1}})
		}, tensor.ErrAttr, "must be at least 1"},
		{"reduce kind", func() {
			ops.ReduceWindow(x, tensor.Scalar(float32(0)), ops.ReduceProd, ops.Window{Dims: []int{1, 1, 1, 1}})
		}, tensor.ErrAttr, "supports Sum, Max and Min"},
		{"source shape", func() {
			ops.SelectAndScatter(x, x, tensor.Scalar(float32(0)), ops.SelectGE, ops.Window{Dims: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}})
		}, tensor.ErrShape, "the window gives [2 2 2 3]"},
		{"conv features", func() { ops.Conv2D(x, tensor.Zeros(tensor.Float32, 3, 3, 2, 4), ops.Conv2DOpts{}) }, tensor.ErrShape, "filter [3 3 2 4] expects 2 input channels, the input [2 5 5 3] has 3"},
		{"conv rank", func() { ops.Conv2D(tensor.Zeros(tensor.Float32, 5, 5, 3), f, ops.Conv2DOpts{}) }, tensor.ErrRank, "rank-4"},
		{"conv dims", func() {
			d := ops.NHWCDims(2)
			d.InFeature = 0
			ops.Conv(x, f, ops.ConvOpts{Dims: d})
		}, tensor.ErrAttr, "not a permutation"},
		{"nchw conv channels", func() {
			ops.Conv2D(tensor.Zeros(tensor.Float32, 2, 3, 5, 5), tensor.Zeros(tensor.Float32, 3, 3, 2, 4), nchw)
		}, tensor.ErrShape, "expects 2 input channels"},
		{"nchw conv too small", func() {
			ops.Conv2D(tensor.Zeros(tensor.Float32, 2, 3, 2, 5), f, ops.Conv2DOpts{Format: ops.NCHW})
		}, tensor.ErrShape, "does not fit the padded 2x5 input"},
		{"nchw backprop input dy", func() {
			ops.Conv2DBackpropInput(tensor.Shape{2, 3, 5, 5}, f, tensor.Zeros(tensor.Float32, 2, 4, 4, 5), nchw)
		}, tensor.ErrShape, "the convolution's output is [2 4 5 5]"},
		{"nchw backprop input shape", func() {
			ops.Conv2DBackpropInput(tensor.Shape{2, 1, 5, 5}, f, tensor.Zeros(tensor.Float32, 2, 4, 5, 5), nchw)
		}, tensor.ErrShape, "does not match filter"},
		{"nchw backprop filter dy", func() {
			ops.Conv2DBackpropFilter(tensor.Zeros(tensor.Float32, 2, 3, 5, 5), f.Shape(), tensor.Zeros(tensor.Float32, 1, 4, 5, 5), nchw)
		}, tensor.ErrShape, "dy is [1 4 5 5]"},
		{"pool size", func() { ops.MaxPool2D(x, ops.PoolOpts{}) }, tensor.ErrAttr, "must be positive"},
		{"patches pad", func() { ops.ExtractPatches(x, tensor.Zeros(tensor.Float32, 1), ops.Window{Dims: []int{1, 1, 1, 1}}) }, tensor.ErrRank, "must be a scalar"},
	})
}

// The depthwise convolution computed directly (its own ops) agrees with
// it as Conv2D channel by channel, in both layouts, with strides,
// dilations, uneven padding and multipliers, values and gradients (the
// input's and the filter's).
func TestDepthwiseConv2DMatchesPerChannelConv(t *testing.T) {
	opts := []ops.Conv2DOpts{{Padding: ops.Same}, {Strides: [2]int{2, 1}, Dilations: [2]int{1, 2}},
		{Padding: ops.Explicit, Explicit: [2][2]int{{2, 0}, {1, 3}}, Strides: [2]int{1, 3}}}
	for i, o := range opts {
		for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			for _, m := range []int{1, 3} {
				o.Format = format
				x := rnd(uint64(10+i), -1, 1, 2, 7, 6, 3)
				if format == ops.NCHW {
					x = ops.Transpose(x, 0, 3, 1, 2).Contiguous()
				}
				f := rnd(uint64(20+i), -1, 1, 3, 2, 3, m)
				direct := func(in []T) T { return ops.Sum(ops.Square(ops.DepthwiseConv2D(in[0], in[1], o))) }
				// The reference: each channel's Conv2D, concatenated in order.
				perChannel := func(in []T) T {
					axis := 3
					if format == ops.NCHW {
						axis = 1
					}
					var outs []T
					for c := range 3 {
						begin, end := []int{0, 0, 0, c}, []int{2, 7, 6, c + 1}
						if format == ops.NCHW {
							begin, end = []int{0, c, 0, 0}, []int{2, c + 1, 7, 6}
						}
						xc := ops.Slice(in[0], begin, end, nil)
						fc := ops.Slice(in[1], []int{0, 0, c, 0}, []int{3, 2, c + 1, m}, nil)
						outs = append(outs, ops.Conv2D(xc, fc, o))
					}
					return ops.Sum(ops.Square(ops.Concatenate(axis, outs...)))
				}
				what := fmt.Sprintf("case %d %v multiplier %d", i, format, m)
				tp := tape.New()
				tp.Watch(x, f)
				gd := tp.Gradient(direct([]T{x, f}), x, f)
				tp2 := tape.New()
				tp2.Watch(x, f)
				gr := tp2.Gradient(perChannel([]T{x, f}), x, f)
				if d := approx.Diff([]float64{direct([]T{x, f}).Float()}, []float64{perChannel([]T{x, f}).Float()}, 1e-12); d != "" {
					t.Errorf("%s: value %s", what, d)
				}
				for k, name := range []string{"input", "filter"} {
					if d := approx.Diff(tensor.ToSlice[float64](gd[k]), tensor.ToSlice[float64](gr[k]), 1e-12); d != "" {
						t.Errorf("%s: the %s gradient %s", what, name, d)
					}
				}
			}
		}
	}
}

// A half-precision depthwise convolution computes in float32 and rounds
// once (the float32 kernels through casts).
func TestDepthwiseConv2DHalf(t *testing.T) {
	x := ops.Cast(rnd(30, -1, 1, 2, 5, 5, 3), tensor.Float32)
	f := ops.Cast(rnd(31, -1, 1, 3, 3, 3, 2), tensor.Float32)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		xh, fh := ops.Cast(x, dt), ops.Cast(f, dt)
		got := ops.DepthwiseConv2D(xh, fh, ops.Conv2DOpts{Padding: ops.Same})
		want := ops.Cast(ops.DepthwiseConv2D(ops.Cast(xh, tensor.Float32), ops.Cast(fh, tensor.Float32), ops.Conv2DOpts{Padding: ops.Same}), dt)
		if got.DType() != dt || !slices.Equal(tensor.ToSlice[float32](ops.Cast(got, tensor.Float32)), tensor.ToSlice[float32](ops.Cast(want, tensor.Float32))) {
			t.Errorf("%v: not the float32 result rounded once", dt)
		}
	}
}

// Where init wins a window of Max or Min (a padding tap or a value past
// every tap's), the window's gradient goes to init, not to the best tap;
// an init known to be the identity (MaxPool2D's) costs no comparison.
func TestReduceWindowGradientWhereInitWins(t *testing.T) {
	x := tensor.FromSlice([]float64{-1, -0.5, 0.2, -2, 0.9, -0.3}, 1, 6)
	w := ops.Window{Dims: []int{1, 2}, Padding: [][2]int{{0, 0}, {1, 1}}}
	for _, c := range []struct {
		kind  ops.ReduceKind
		init  float64
		dx    []float64
		dinit float64
	}{
		// Max with init 0.5: windows (pad,-1) (-1,-0.5) (-0.5,0.2) (0.2,-2) (-2,0.9) (0.9,-0.3) (-0.3,pad).
		{ops.ReduceMax, 0.5, []float64{0, 0, 0, 0, 2, 0}, 5},
		// Min with init -0.4: -1, -1, -0.5, -2, -2, -0.4 (init), -0.4 (init).
		{ops.ReduceMin, -0.4, []float64{2, 1, 0, 2, 0, 0}, 2},
	} {
		init := tensor.Scalar(c.init)
		tp := tape.New()
		tp.Watch(x, init)
		g := tp.Gradient(ops.Sum(ops.ReduceWindow(x, init, c.kind, w)), x, init)
		if got := tensor.ToSlice[float64](g[0]); fmt.Sprint(got) != fmt.Sprint(c.dx) {
			t.Errorf("kind %d: the operand's gradient is %v, want %v", c.kind, got, c.dx)
		}
		if g[1] == nil || tensor.ToSlice[float64](g[1])[0] != c.dinit {
			t.Errorf("kind %d: init's gradient is %v, want %g", c.kind, g[1], c.dinit)
		}
	}
	img := tensor.RandNormal(tensor.NewRNG(3), tensor.Float64, 1, 4, 4, 2)
	for name, f := range map[string]func(x *tensor.Tensor) *tensor.Tensor{
		"MaxPool2D": func(x *tensor.Tensor) *tensor.Tensor { return ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{2, 2}}) },
		"ReduceWindow with a host -Inf": func(x *tensor.Tensor) *tensor.Tensor {
			return ops.ReduceWindow(x, tensor.Scalar(math.Inf(-1)), ops.ReduceMax, ops.Window{Dims: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}})
		},
	} {
		if n := callsOf("Select", func() {
			tp := tape.New()
			tp.Watch(img)
			tp.Gradient(ops.Sum(f(img)), img)
		}); n != 0 {
			t.Errorf("%s: its gradient compared results with init (%d Selects)", name, n)
		}
	}
}

// The gradient of a scalar an op lays in as padding (Pad's value,
// ExtractPatches' pad, ReduceWindow's init) is the sum of the output
// gradient where the scalar landed: the rules once took all of dy less
// what reached the operand, which in float32 over 2^16 elements left
// rounding noise of 1e-3 where the padding was a small part or none.
func TestPadScalarGradientsDoNotCancel(t *testing.T) {
	n := 1 << 16
	x := tensor.RandUniform(tensor.NewRNG(5), tensor.Float32, -1, 1, n)
	w := tensor.RandUniform(tensor.NewRNG(6), tensor.Float32, -1, 1, n+1)
	ws := tensor.ToSlice[float32](w)
	var sum float64 // of w: ReduceWindow's init enters every window
	for _, f := range ws {
		sum += float64(f)
	}
	v := tensor.Scalar(float32(0.5))
	high := [][2]int{{0, 1}}
	cases := []struct {
		name string
		f    func(v *tensor.Tensor) *tensor.Tensor
		want float64 // where v landed: w's last element, nowhere, or everywhere
		tol  float64
	}{
		{"Pad, one element high", func(v *tensor.Tensor) *tensor.Tensor { return ops.Pad(x, v, ops.PadDim{High: 1}) }, float64(ws[n]), 0},
		{"Pad, one cropped", func(v *tensor.Tensor) *tensor.Tensor { return ops.Pad(x, v, ops.PadDim{High: -1}) }, 0, 0},
		{"ExtractPatches, no padding", func(v *tensor.Tensor) *tensor.Tensor {
			return ops.ExtractPatches(x, v, ops.Window{Dims: []int{1}})
		}, 0, 0},
		{"ExtractPatches, one element high", func(v *tensor.Tensor) *tensor.Tensor {
			return ops.ExtractPatches(x, v, ops.Window{Dims: []int{1}, Padding: high})
		}, float64(ws[n]), 0},
		{"ReduceWindow sum, one element high", func(v *tensor.Tensor) *tensor.Tensor {
			return ops.ReduceWindow(x, v, ops.ReduceSum, ops.Window{Dims: []int{1}, Padding: high})
		}, sum + float64(ws[n]), 1e-4},
	}
	for _, c := range cases {
		tp := tape.New()
		tp.Watch(v)
		y := c.f(v)
		loss := ops.Sum(ops.Mul(y, ops.Reshape(ops.Slice(w, []int{0}, []int{y.Shape().NumElements()}, nil), y.Shape()...)))
		got := float64(tensor.ToSlice[float32](tp.Gradient(loss, v)[0])[0])
		if math.Abs(got-c.want) > c.tol {
			t.Errorf("%s: the gradient of the padding scalar is %v, want %v", c.name, got, c.want)
		}
	}
}
