package bench

import (
	"runtime"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

type rnnSetup struct {
	w  *tape.Variable
	xs *tensor.Tensor // [50 128]
	h0 *tensor.Tensor // [1 128]
}

func newRNN() *rnnSetup {
	rng := tensor.NewRNG(11)
	return &rnnSetup{
		w:  tape.NewVariable("w", ops.Mul(tensor.RandNormal(rng, tensor.Float32, 128, 128), tensor.Scalar(float32(0.08)))),
		xs: tensor.RandNormal(rng, tensor.Float32, 50, 128),
		h0: tensor.Zeros(tensor.Float32, 1, 128),
	}
}

// forward runs h = tanh(h W + x_t) for 50 steps with While from h0 and
// returns h.
func (r *rnnSetup) forward(opts control.WhileOptions) *tensor.Tensor {
	return r.forwardFrom(r.h0, opts)
}

func (r *rnnSetup) forwardFrom(h0 *tensor.Tensor, opts control.WhileOptions) *tensor.Tensor {
	steps := tensor.Scalar(int64(r.xs.Dim(0)))
	out := control.While(
		func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], steps) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			x := ops.Gather(r.xs, v[0], 0) // row t: [128], broadcast over h's [1 128]
			h := ops.Tanh(ops.Add(ops.MatMul(v[1], r.w.Value()), x))
			return []*tensor.Tensor{ops.Add(v[0], tensor.Scalar(int64(1))), h}
		},
		[]*tensor.Tensor{tensor.Scalar(int64(0)), h0}, opts)
	return out[1]
}

// BenchmarkRNNLoopGrad: forward and backward of a 50-step tanh RNN (h:
// [1 128], W: [128 128], float32) through While on a tape.
func BenchmarkRNNLoopGrad(b *testing.B) {
	r := newRNN()
	steady(b, func() error {
		tp := tape.New()
		h := r.forward(control.WhileOptions{})
		tp.Gradient(ops.Sum(h), r.w.Value())
		return nil
	})
}

// BenchmarkRNNLoopGradReleased is BenchmarkRNNLoopGrad on a tape that
// releases its intermediates (as nn.TrainStep's does): the loop's record
// goes back to the buffer cache once the gradient is taken.
func BenchmarkRNNLoopGradReleased(b *testing.B) {
	r := newRNN()
	steady(b, func() error {
		tp := tape.New(tape.Options{ReleaseIntermediates: true})
		h := r.forward(control.WhileOptions{})
		tp.Gradient(ops.Sum(h), r.w.Value())[0].Release()
		return nil
	})
}

// BenchmarkRNNLoopForward is the same loop with no tape.
func BenchmarkRNNLoopForward(b *testing.B) {
	r := newRNN()
	steady(b, func() error { r.forward(control.WhileOptions{}); return nil })
}

// BenchmarkWhileMemory runs a 1000-step loop (h = tanh(h W + c), h [1 256])
// on a tape and reports the heap the backward pass has to keep, with the
// per-iteration records stored and with checkpointing.
func BenchmarkWhileMemory(b *testing.B) {
	rng := tensor.NewRNG(12)
	w := tape.NewVariable("w", ops.Mul(tensor.RandNormal(rng, tensor.Float32, 256, 256), tensor.Scalar(float32(0.05))))
	c := tensor.RandNormal(rng, tensor.Float32, 1, 256)
	for _, mode := range []struct {
		name string
		ck   bool
	}{{"stored", false}, {"checkpoint", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var kept float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				tp := tape.New()
				out := control.Fori(0, 1000, func(i *tensor.Tensor, v []*tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{ops.Tanh(ops.Add(ops.MatMul(v[0], w.Value()), c))}
				}, []*tensor.Tensor{tensor.Zeros(tensor.Float32, 1, 256)}, control.WhileOptions{Checkpoint: mode.ck})
				loss := ops.Sum(out[0])
				runtime.GC()
				runtime.ReadMemStats(&after)
				kept = float64(after.HeapAlloc) - float64(before.HeapAlloc)
				tp.Gradient(loss, w.Value())
			}
			b.ReportMetric(kept/1024, "KiB-kept")
		})
	}
}
