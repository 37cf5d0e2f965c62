package cuda

import (
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPU's sequence kernels follow the CPU's: outputs, first and second
// derivatives (the second order hands the backward kernel gradients for
// every saved output), over a batch of two blocks' rows, the last one
// short, odd widths and no steps; to the dtype's rounding (the same sums
// in the same order, the transcendental functions apart). One launch
// each way.
func TestLSTMSequenceOnGPU(t *testing.T) {
	d := testGPU(t)
	ran := watchKernels(t, d)
	defer ran("lstm_seq_f32", "lstm_seq_grad_f32", "lstm_seq_f64", "lstm_seq_grad_f64")
	r := tensor.NewRNG(21)
	for _, c := range []struct {
		dt      tensor.DType
		n, s, w int
		tol     float64
		// tol2 bounds the second derivatives, which GEMMs of the
		// width's terms compute in different orders on each device.
		tol2 float64
	}{
		{tensor.Float64, 5, 6, 5, 1e-12, 1e-12},
		{tensor.Float32, 7, 9, 12, 2e-6, 2e-6},
		{tensor.Float32, 3, 0, 4, 0, 0},
		{tensor.BFloat16, 4, 5, 8, 1e-2, 1e-2},
		{tensor.Float64, 3, 2, 256, 1e-12, 1e-10}, // blocks of 1024, the widest
		// Wider than the kernels hold: LSTMCell steps, whose products
		// round before the cells add them.
		{tensor.Float32, 2, 2, 257, 1e-4, 1e-3},
	} {
		in := []*tensor.Tensor{
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -2, 2, c.n, c.s, 4*c.w), c.dt),
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -0.7, 0.7, c.w, 4*c.w), c.dt),
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, c.n, c.w), c.dt),
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, c.n, c.w), c.dt),
		}
		run := func(in []*tensor.Tensor) []*tensor.Tensor {
			outer, inner := tape.New(), tape.New()
			outer.Watch(in...)
			inner.Watch(in...)
			ys, h, cell := ops.LSTMSequence(in[0], in[1], in[2], in[3])
			loss := ops.Add(ops.Sum(ops.Mul(ys, ys)), ops.Sum(ops.Mul(h, ops.Sin(cell))))
			g := inner.Gradient(loss, in...)
			second := ops.Sum(ops.Cast(ops.Add(ops.Sum(ops.Square(g[0])), ops.Add(ops.Sum(ops.Square(g[1])), ops.Sum(ops.Mul(g[2], g[3])))), tensor.Float64))
			return append(append([]*tensor.Tensor{ys, h, cell}, g...), outer.Gradient(second, in...)...)
		}
		gpuIn := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			gpuIn[i] = onGPU(t, d, x)
		}
		want, got := run(in), run(gpuIn)
		for i, name := range []string{"ys", "hT", "cT", "dxz", "du", "dh0", "dc0", "second dxz", "second du", "second dh0", "second dc0"} {
			g := tensor.ToSlice[float64](ops.Cast(onHost(t, got[i]), tensor.Float64))
			w := tensor.ToSlice[float64](ops.Cast(want[i], tensor.Float64))
			tol := c.tol
			if i >= 7 {
				tol = c.tol2
			}
			if diff := approx.Diff(g, w, tol); diff != "" {
				t.Errorf("%v [%d %d %d] %s: %s", c.dt, c.n, c.s, c.w, name, diff)
			}
		}
	}
	// One launch each way, whatever the batch.
	x := onGPU(t, d, tensor.RandUniform(r, tensor.Float32, -1, 1, 9, 4, 24))
	u := onGPU(t, d, tensor.RandUniform(r, tensor.Float32, -1, 1, 6, 24))
	h := onGPU(t, d, tensor.Zeros(tensor.Float32, 9, 6))
	if !ops.LSTMSequenceFused(x, u) {
		t.Fatal("LSTMSequenceFused on the GPU: false for a state of 6")
	}
	if big := onGPU(t, d, tensor.Zeros(tensor.Float32, 257, 4*257)); ops.LSTMSequenceFused(x, big) {
		t.Error("LSTMSequenceFused: true for a state of 257, past the kernels' widest")
	}
	if ctx, ok := d.ctx.(*emu.Context); ok {
		waitGPU(t, d)
		before := ctx.Queued
		ops.LSTMSequence(x, u, h, h)
		if n := ctx.Queued - before; n != 1 {
			t.Errorf("a sequence of 4 steps for 9 rows queued %d calls, want 1", n)
		}
	}
}
