package cuda

import (
	"bytes"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A concatenation whose inputs each fill one stretch of the output (the
// axis the first, or only ones before it) copies them all in one launch
// for every kernels.OptimSlots of them, of the widest unit their sizes
// allow, equal to the CPU's to the byte, for each element size; one
// along a later axis copies an input at a time, equal too. A Split (an
// Unstack of a sequence's steps) cuts so the other way, as many calls.
func TestConcatenateCopiesSpans(t *testing.T) {
	d := testGPU(t)
	ctx, counting := d.ctx.(*emu.Context)
	r := tensor.NewRNG(6)
	for _, c := range []struct {
		dt    tensor.DType
		n     int // inputs
		axis  int
		calls int // on the emulator, besides the inputs' copies
	}{
		{tensor.Float32, 30, 0, 2}, // 24 a launch
		{tensor.Int64, 5, 0, 1},
		{tensor.BFloat16, 7, 0, 1}, // odd rows of 3: 2-byte units
		{tensor.Uint8, 9, 0, 1},    // bytes
		{tensor.Float32, 4, 1, 4},  // rows interleave: a strided copy each
	} {
		var xs, gs []*tensor.Tensor
		for i := range c.n {
			shape := []int{1 + i%3, 3}
			if c.axis == 1 {
				shape = []int{2, 1 + i%3}
			}
			x := ops.Cast(tensor.RandUniform(r, tensor.Float32, 0, 100, shape...), c.dt)
			xs, gs = append(xs, x), append(gs, onGPU(t, d, x))
		}
		want := ops.Concatenate(c.axis, xs...)
		waitGPU(t, d)
		var before int
		if counting {
			before = ctx.Queued
		}
		got := ops.Concatenate(c.axis, gs...)
		if counting {
			if n := ctx.Queued - before; n != c.calls {
				t.Errorf("%v, %d inputs on axis %d: %d calls queued, want %d", c.dt, c.n, c.axis, n, c.calls)
			}
		}
		if !bytes.Equal(onHost(t, got).HostBytes(), want.HostBytes()) {
			t.Errorf("%v, %d inputs on axis %d: the GPU's concatenation differs from the CPU's", c.dt, c.n, c.axis)
		}
		sizes := make([]int, c.n)
		for i, x := range xs {
			sizes[i] = x.Dim(c.axis)
		}
		waitGPU(t, d)
		if counting {
			before = ctx.Queued
		}
		pieces := ops.Split(got, c.axis, sizes)
		if counting {
			if n := ctx.Queued - before; n != c.calls {
				t.Errorf("%v, split into %d on axis %d: %d calls queued, want %d", c.dt, c.n, c.axis, n, c.calls)
			}
		}
		for i, p := range pieces {
			if !bytes.Equal(onHost(t, p).HostBytes(), xs[i].HostBytes()) {
				t.Errorf("%v, split into %d on axis %d: piece %d differs from the input concatenated", c.dt, c.n, c.axis, i)
			}
		}
	}
	// Empty pieces are left out of the spans.
	x := onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3, 4, 5}, 5))
	pieces := ops.Split(x, 0, []int{2, 0, 3, 0})
	for i, want := range [][]float32{{1, 2}, {}, {3, 4, 5}, {}} {
		if got := tensor.ToSlice[float32](onHost(t, pieces[i])); !slices.Equal(got, want) {
			t.Errorf("Split [2 0 3 0] piece %d: %v, want %v", i, got, want)
		}
	}
	// A span past its buffer, or of the host's, is refused.
	x = onGPU(t, d, tensor.Zeros(tensor.Float32, 4))
	if err := d.CopySpans(spansOf(x, x, 3, 2), 4); err == nil {
		t.Error("a span beyond its buffer: no error")
	}
	if err := d.CopySpans(spansOf(x, tensor.Zeros(tensor.Float32, 4), 0, 2), 4); err == nil {
		t.Error("a span from the host: no error")
	}
}

// spansOf is one span of n elements from src to dst at element off.
func spansOf(dst, src *tensor.Tensor, off, n int) []device.Span {
	return []device.Span{{Dst: dst.Buffer(), Src: src.Buffer(), DOff: off, N: n}}
}
