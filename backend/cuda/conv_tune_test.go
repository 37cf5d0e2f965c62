package cuda

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A convolution's filter gradient agrees with the CPU's both ways (cuDNN,
// a patch matrix and a GEMM), in both layouts; unforced, the first call
// of a shape times both ways and decides (a cuDNN filter pass then, and
// one a call after only where cuDNN won), and a first call inside a
// capture decides nothing.
func TestConvFilterGradientWays(t *testing.T) {
	d := testGPU(t)
	if _, ok := d.dnn(); !ok {
		t.Skip("no cuDNN: the GEMM is the only way")
	}
	ctx, emulated := d.ctx.(*emu.Context)
	defer d.forceFilter.Store(0)
	r := tensor.NewRNG(31)
	grad := func(x, f, seed *tensor.Tensor, o ops.Conv2DOpts) *tensor.Tensor {
		tp := tape.New()
		tp.Watch(f)
		return tp.GradientSeeded(ops.Conv2D(x, f, o), seed, f)[0]
	}
	for i, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		xs := []int{4, 10, 9, 3 + i} // a shape of its own per layout: undecided
		if format == ops.NCHW {
			xs = []int{4, 3 + i, 10, 9}
		}
		o := ops.Conv2DOpts{Padding: ops.Same, Format: format}
		x, f := tensor.RandNormal(r, tensor.Float64, xs...), tensor.RandNormal(r, tensor.Float64, 3, 3, 3+i, 6)
		seed := tensor.RandNormal(r, tensor.Float64, ops.Conv2D(x, f, o).Shape()...)
		want := grad(x, f, seed, o)
		gx, gf, gseed := onGPU(t, d, x), onGPU(t, d, f), onGPU(t, d, seed)
		cv := cu.Conv{Type: cu.Float64, NHWC: format == ops.NHWC, N: 4, C: 3 + i, H: 10, W: 9, K: 6, R: 3, S: 3,
			PadH: 1, PadW: 1, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1}
		filterPasses := func(fn func()) int {
			if !emulated {
				fn()
				return -1
			}
			before := ctx.DNNCalls
			fn()
			if err := d.Synchronize(); err != nil {
				t.Fatal(err)
			}
			return ctx.DNNCalls - before - 1 // less the forward (only f is watched)
		}
		for _, way := range []filterWay{filterByDNN, filterByGEMM} {
			d.forceFilter.Store(uint32(way))
			what := fmt.Sprintf("%v forced %d", format, way)
			var got *tensor.Tensor
			passes := filterPasses(func() { got = grad(gx, gf, gseed, o) })
			agree(t, what, got, want)
			if emulated && passes != map[filterWay]int{filterByDNN: 1, filterByGEMM: 0}[way] {
				t.Errorf("%s: %d cuDNN filter passes", what, passes)
			}
		}
		d.forceFilter.Store(0)
		if d.filterWayOf(cv) != filterUndecided {
			t.Fatalf("%v: decided by forced calls", format)
		}
		// Inside a capture: computed, not decided.
		rec, err := d.Capture(func() error { grad(gx, gf, gseed, o).Release(); return nil })
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if d.filterWayOf(cv) != filterUndecided {
			t.Errorf("%v: decided inside a capture", format)
		}
		var got *tensor.Tensor
		if passes := filterPasses(func() { got = grad(gx, gf, gseed, o) }); emulated && passes != 1 {
			t.Errorf("%v: the timing call made %d cuDNN filter passes, want 1", format, passes)
		}
		agree(t, format.String()+" timed", got, want)
		way := d.filterWayOf(cv)
		if way == filterUndecided {
			t.Fatalf("%v: undecided after a call outside a capture", format)
		}
		passes := filterPasses(func() { got = grad(gx, gf, gseed, o) })
		agree(t, format.String()+" decided", got, want)
		if emulated && passes != map[filterWay]int{filterByDNN: 1, filterByGEMM: 0}[way] {
			t.Errorf("%v: decided %d, then %d cuDNN filter passes", format, way, passes)
		}
	}
}
