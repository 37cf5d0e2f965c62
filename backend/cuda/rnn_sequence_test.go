package cuda

import (
	"bytes"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// sequenceOp is a recurrent sequence op under test: its gates a state
// element, its outputs' count, its inputs for a batch of n rows of s
// steps of width w (the input's terms, the recurrent kernel, then the
// rest), its outputs.
type sequenceOp struct {
	name   string
	gates  int
	outs   int
	inputs func(r *tensor.RNG, dt tensor.DType, n, s, w int) []*tensor.Tensor
	run    func(in []*tensor.Tensor) []*tensor.Tensor
	fused  func(x, u *tensor.Tensor) bool
}

var sequenceOps = []sequenceOp{
	{"lstm", 4, 3, func(r *tensor.RNG, dt tensor.DType, n, s, w int) []*tensor.Tensor {
		return []*tensor.Tensor{uniform(r, dt, -2, 2, n, s, 4*w), uniform(r, dt, -0.7, 0.7, w, 4*w), uniform(r, dt, -1, 1, n, w), uniform(r, dt, -1, 1, n, w)}
	}, func(in []*tensor.Tensor) []*tensor.Tensor {
		ys, h, c := ops.LSTMSequence(in[0], in[1], in[2], in[3])
		return []*tensor.Tensor{ys, h, c}
	}, ops.LSTMSequenceFused},
	{"gru", 3, 2, func(r *tensor.RNG, dt tensor.DType, n, s, w int) []*tensor.Tensor {
		return []*tensor.Tensor{uniform(r, dt, -2, 2, n, s, 3*w), uniform(r, dt, -0.7, 0.7, w, 3*w), uniform(r, dt, -0.5, 0.5, 3*w), uniform(r, dt, -1, 1, n, w)}
	}, func(in []*tensor.Tensor) []*tensor.Tensor {
		ys, h := ops.GRUSequence(in[0], in[1], in[2], in[3])
		return []*tensor.Tensor{ys, h}
	}, ops.GRUSequenceFused},
}

// uniform is a dt tensor of shape, uniform in [lo, hi) (drawn in float64).
func uniform(r *tensor.RNG, dt tensor.DType, lo, hi float64, shape ...int) *tensor.Tensor {
	return ops.Cast(tensor.RandUniform(r, tensor.Float64, lo, hi, shape...), dt)
}

// The GPU's sequence kernels follow the CPU's, for the LSTM and the GRU:
// outputs, first and second derivatives (the second order hands the
// backward kernel gradients for every saved output), over a batch of two
// blocks' rows, the last one short, odd widths and no steps; to the
// dtype's rounding (the same sums in the same order, the transcendental
// functions apart). One launch each way.
func TestSequencesOnGPU(t *testing.T) {
	d := testGPU(t)
	ran := watchKernels(t, d)
	defer ran("lstm_seq_f32", "lstm_seq_grad_f32", "lstm_seq_f64", "lstm_seq_grad_f64", "lstm_seq_bf16", "lstm_seq_grad_bf16",
		"gru_seq_f32", "gru_seq_grad_f32", "gru_seq_f64", "gru_seq_grad_f64", "gru_seq_bf16", "gru_seq_grad_bf16")
	r := tensor.NewRNG(21)
	for _, op := range sequenceOps {
		for _, c := range []struct {
			dt      tensor.DType
			n, s, w int
			tol     float64
			// tol2 bounds the second derivatives, which GEMMs of the
			// width's terms compute in different orders on each device;
			// 0 leaves them out (the emulator's seconds).
			tol2 float64
		}{
			{tensor.Float64, 5, 6, 5, 1e-12, 1e-12},
			{tensor.Float32, 7, 9, 12, 2e-6, 1e-4},
			{tensor.Float32, 3, 0, 4, 0, 0},
			{tensor.BFloat16, 4, 5, 8, 1e-2, 1e-2},
			{tensor.Float64, 1, 2, 256, 1e-12, 0}, // blocks of 1024, the widest
			// Wider than the kernels hold: cell steps, whose products
			// round before the cells add them.
			{tensor.Float32, 2, 2, 257, 1e-4, 0},
		} {
			in := op.inputs(r, c.dt, c.n, c.s, c.w)
			run := func(in []*tensor.Tensor) []*tensor.Tensor {
				outer, inner := tape.New(), tape.New()
				outer.Watch(in...)
				inner.Watch(in...)
				outs := op.run(in)
				loss := ops.Sum(ops.Mul(outs[0], outs[0]))
				for _, o := range outs[1:] {
					loss = ops.Add(loss, ops.Sum(ops.Mul(outs[1], ops.Sin(o))))
				}
				g := inner.Gradient(loss, in...)
				if c.tol2 == 0 {
					return append(outs, g...)
				}
				second := ops.Add(ops.Sum(ops.Square(g[0])), ops.Add(ops.Sum(ops.Square(g[1])), ops.Sum(ops.Mul(g[2], g[2]))))
				second = ops.Cast(ops.Add(second, ops.Sum(g[3])), tensor.Float64)
				return append(append(outs, g...), outer.Gradient(second, in...)...)
			}
			gpuIn := make([]*tensor.Tensor, len(in))
			for i, x := range in {
				gpuIn[i] = onGPU(t, d, x)
			}
			want, got := run(in), run(gpuIn)
			firstOrder := op.outs + len(in) // outputs, then first derivatives
			for i := range want {
				g := tensor.ToSlice[float64](ops.Cast(onHost(t, got[i]), tensor.Float64))
				w := tensor.ToSlice[float64](ops.Cast(want[i], tensor.Float64))
				tol := c.tol
				if i >= firstOrder {
					tol = c.tol2
				}
				if diff := approx.Diff(g, w, tol); diff != "" {
					t.Errorf("%s %v [%d %d %d] output %d: %s", op.name, c.dt, c.n, c.s, c.w, i, diff)
				}
			}
		}
		// The half types' kernels give what the float32 kernel gives on
		// the inputs widened, each output rounded once: to the bit.
		half := op.inputs(r, tensor.BFloat16, 5, 3, 7)
		wide := make([]*tensor.Tensor, len(half))
		for i, x := range half {
			half[i] = onGPU(t, d, x)
			wide[i] = ops.Cast(half[i], tensor.Float32)
		}
		narrowed := op.run(wide)
		for i, o := range op.run(half) {
			if !bytes.Equal(onHost(t, o).HostBytes(), onHost(t, ops.Cast(narrowed[i], tensor.BFloat16)).HostBytes()) {
				t.Errorf("%s: bfloat16 output %d differs from the float32 kernel's rounded", op.name, i)
			}
		}
		// One launch forward, whatever the batch.
		in := op.inputs(r, tensor.Float32, 9, 4, 6)
		for i, x := range in {
			in[i] = onGPU(t, d, x)
		}
		if !op.fused(in[0], in[1]) {
			t.Fatalf("%s: fused on the GPU: false for a state of 6", op.name)
		}
		if big := onGPU(t, d, tensor.Zeros(tensor.Float32, 257, op.gates*257)); op.fused(in[0], big) {
			t.Errorf("%s: fused for a state of 257, past the kernels' widest", op.name)
		}
		if ctx, ok := d.ctx.(*emu.Context); ok {
			waitGPU(t, d)
			before := ctx.Queued
			op.run(in)
			if n := ctx.Queued - before; n != 1 {
				t.Errorf("%s: a sequence of 4 steps for 9 rows queued %d calls, want 1", op.name, n)
			}
		}
	}
}

// nn.RNN over an LSTM or a GRU cell runs its sequence op on the GPU and
// gives what its loop of cell steps gives on the CPU: from a state of the
// caller's, every step's outputs or the last, the final state, and the
// gradients through them; in float32 and under mixed bfloat16 (the
// input cast, the half kernels).
func TestRecurrentLayersOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, c := range []struct {
		name   string
		cell   func(r *tensor.RNG) nn.Cell
		states int
	}{
		{"lstm", func(r *tensor.RNG) nn.Cell { return nn.NewLSTMCell("l", r, 3, 5, tensor.Float32) }, 2},
		{"gru", func(r *tensor.RNG) nn.Cell { return nn.NewGRUCell("g", r, 3, 5, tensor.Float32) }, 1},
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16} {
			for _, seqs := range []bool{false, true} {
				run := func(dev device.Device) []*tensor.Tensor {
					var out []*tensor.Tensor
					onDevice(dev, func() {
						r := tensor.NewRNG(4)
						layer := &nn.RNN{Cell: c.cell(r), ReturnSequences: seqs}
						x := ops.Cast(tensor.RandNormal(r, tensor.Float32, 6, 7, 3), dt)
						state := make([]*tensor.Tensor, c.states)
						for i := range state {
							state[i] = ops.Cast(tensor.RandNormal(r, tensor.Float32, 6, 5), dt)
						}
						if dev != device.Host() {
							x = onGPU(t, d, x)
							for i := range state {
								state[i] = onGPU(t, d, state[i])
							}
						}
						vars := nn.AllVariables(layer)
						tp := tape.New()
						tp.Watch(x)
						tp.Watch(state...)
						y, final := layer.Run(x, state)
						loss := ops.Sum(ops.Cast(ops.Mul(y, y), tensor.Float32))
						for _, f := range final {
							loss = ops.Add(loss, ops.Sum(ops.Cast(ops.Sin(f), tensor.Float32)))
						}
						grads := tp.Gradient(loss, append(append([]*tensor.Tensor{x}, state...), nn.Values(vars)...)...)
						out = append(append([]*tensor.Tensor{y}, final...), grads...)
						for i, o := range out {
							if o.Device() != device.Host() {
								out[i] = onHost(t, o)
							}
						}
					})
					return out
				}
				want, got := run(device.Host()), run(d)
				tol := map[tensor.DType]float64{tensor.Float32: 1e-5, tensor.BFloat16: 3e-2}[dt]
				for i := range want {
					g := tensor.ToSlice[float64](ops.Cast(got[i], tensor.Float64))
					w := tensor.ToSlice[float64](ops.Cast(want[i], tensor.Float64))
					if diff := approx.Diff(g, w, tol); diff != "" {
						t.Errorf("%s %v (sequences %v) output %d: %s", c.name, dt, seqs, i, diff)
					}
				}
			}
		}
	}
}
