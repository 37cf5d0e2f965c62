package ops_test

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GEMM convolution, ops.NCHW and ops.NHWC, against the general lowering
// (ExtractPatches and MatMul, tested against a direct convolution in
// window_test.go): forward and both backprops, over strides, dilations,
// every padding mode, filter shapes, batches below and above the worker
// count, both float dtypes.
func TestConv2DGemmMatchesGeneralLowering(t *testing.T) {
	type cfg struct {
		n, c, h, w, o, kh, kw int
		opts                  ops.Conv2DOpts
	}
	cases := []cfg{
		{1, 3, 8, 9, 4, 3, 3, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{1, 1}, {1, 1}}}},
		{3, 2, 7, 6, 5, 3, 2, ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 1}}},
		{2, 4, 9, 9, 3, 3, 3, ops.Conv2DOpts{Padding: ops.Valid, Strides: [2]int{2, 2}, Dilations: [2]int{1, 2}}},
		{4, 1, 5, 11, 2, 1, 1, ops.Conv2DOpts{}},
		{2, 3, 6, 7, 4, 2, 3, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{0, 2}, {3, 0}}, Strides: [2]int{1, 3}}},
		{5, 2, 4, 4, 16, 5, 5, ops.Conv2DOpts{Padding: ops.Same, Dilations: [2]int{2, 1}}},
		// Dilation with explicit padding where some taps read no input
		// column at all (they crashed the ops.NCHW im2row).
		{1, 1, 1, 3, 1, 1, 3, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{0, 0}, {0, 2}}, Dilations: [2]int{1, 2}}},
		{1, 1, 1, 3, 1, 1, 3, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{0, 0}, {0, 3}}, Dilations: [2]int{1, 2}}},
		{2, 2, 4, 3, 3, 2, 3, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{2, 1}, {2, 0}}, Strides: [2]int{2, 1}, Dilations: [2]int{2, 2}}},
		// Many channels, as real layers have: the NHWC filter gradient takes
		// each of its two orientations (P_nᵀ · dY_n for 288 taps and 64
		// outputs where the kernels are 12 rows tall, dY_nᵀ · P_n for 144
		// and 24).
		{2, 32, 5, 5, 64, 3, 3, ops.Conv2DOpts{Padding: ops.Same}},
		{2, 16, 5, 4, 24, 3, 3, ops.Conv2DOpts{Padding: ops.Same}},
		// Enough output positions for 12-row tiles, with channels in runs
		// of 16 (padding, strides and dilations included).
		{2, 16, 6, 6, 32, 3, 3, ops.Conv2DOpts{Padding: ops.Same}},
		{2, 32, 9, 8, 16, 3, 3, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{2, 1}, {0, 2}}, Strides: [2]int{1, 2}, Dilations: [2]int{2, 1}}},
	}
	// And a seeded sweep of small geometries: strides and dilations 1-3,
	// explicit pads 0-3 on each side, filters up to 3x3.
	sweep := make([]uint32, 60*9)
	tensor.NewRNG(99).Uint32s(sweep)
	for i := 0; i+9 <= len(sweep); i += 9 {
		r := func(j, lo, hi int) int { return lo + int(sweep[i+j]%uint32(hi-lo+1)) }
		c := cfg{n: r(0, 1, 3), c: r(1, 1, 3), h: r(2, 1, 6), w: r(3, 1, 6), o: r(4, 1, 3), kh: r(5, 1, 3), kw: r(6, 1, 3),
			opts: ops.Conv2DOpts{Padding: ops.Explicit, Strides: [2]int{r(7, 1, 3), r(8, 1, 3)}, Dilations: [2]int{r(7, 1, 3), r(8, 1, 2)},
				Explicit: [2][2]int{{r(0, 0, 3), r(1, 0, 3)}, {r(2, 0, 3), r(3, 0, 3)}}}}
		if (c.kh-1)*c.opts.Dilations[0]+1 > c.h+c.opts.Explicit[0][0]+c.opts.Explicit[0][1] ||
			(c.kw-1)*c.opts.Dilations[1]+1 > c.w+c.opts.Explicit[1][0]+c.opts.Explicit[1][1] {
			continue // the filter does not fit: an error, tested elsewhere
		}
		cases = append(cases, c)
	}
	for _, format := range []ops.DataFormat{ops.NCHW, ops.NHWC} {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 2e-5}[dt]
			for i, c := range cases {
				c.opts.Format = format
				name := fmt.Sprintf("%v %v case %d", format, dt, i)
				rng := tensor.NewRNG(uint64(i + 1))
				shape := []int{c.n, c.h, c.w, c.c}
				if format == ops.NCHW {
					shape = []int{c.n, c.c, c.h, c.w}
				}
				x := tensor.RandUniform(rng, dt, -1, 1, shape...)
				f := tensor.RandUniform(rng, dt, -1, 1, c.kh, c.kw, c.c, c.o)
				if !ops.GemmConvApplies(c.opts, c.h, c.w, c.kh, c.kw) {
					t.Fatalf("%s: the fast path does not apply", name)
				}
				general := ops.GeneralConvOpts(c.opts, c.h, c.w, c.kh, c.kw)
				y := ops.Conv2D(x, f, c.opts)
				want := ops.Conv(x, f, general)
				if !y.Shape().Equal(want.Shape()) {
					t.Fatalf("%s: output %v, want %v", name, y.Shape(), want.Shape())
				}
				diff(t, name+" forward", y, want, tol)
				dy := tensor.RandUniform(rng, dt, -1, 1, y.Shape()...)
				diff(t, name+" input", ops.Conv2DBackpropInput(x.Shape(), f, dy, c.opts), ops.GeneralConvBackpropInput(x.Shape(), f, dy, general), tol)
				diff(t, name+" filter", ops.Conv2DBackpropFilter(x, f.Shape(), dy, c.opts), ops.GeneralConvBackpropFilter(x, f.Shape(), dy, general), tol)
			}
		}
	}
}

func diff(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	g := tensor.ToSlice[float64](ops.Cast(got, tensor.Float64))
	w := tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
	if d := approx.Diff(g, w, tol); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}
