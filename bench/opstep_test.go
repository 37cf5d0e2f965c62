package bench

import (
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// BenchmarkOpStep is one op's training step (forward, the output summed,
// gradients of the float inputs, intermediates released as nn's steps
// release them) for the ops a sweep of common layers found behind
// PyTorch, beside BenchmarkTorchOpStep (bench/peers/torch_bench.py):
// Sort, TopK of 5, Cumsum and LogSoftmax along the last axis of [4096
// 1000] float32; an embedding's lookup of [64 256] ids in a [30000 256]
// table (the table's gradient); a Conv1D of kernel 5 from 64 to 64
// channels over [32 256 64] ([N L C]; PyTorch's [N C L]), same padding.
func BenchmarkOpStep(b *testing.B) {
	rng := tensor.NewRNG(13)
	rows := tensor.RandNormal(rng, tensor.Float32, 4096, 1000)
	table := tensor.RandNormal(rng, tensor.Float32, 30000, 256)
	ids := ops.Cast(tensor.RandUniform(rng, tensor.Float64, 0, 30000, 64, 256), tensor.Int64)
	seq := tensor.RandNormal(rng, tensor.Float32, 32, 256, 64)
	filter := tensor.RandNormal(rng, tensor.Float32, 1, 5, 64, 64)
	drops := tensor.NewRNG(5)
	left, right := tensor.RandNormal(rng, tensor.Float32, 64, 128, 64), tensor.RandNormal(rng, tensor.Float32, 64, 64, 128)
	half, half2 := tensor.RandNormal(rng, tensor.Float32, 4096, 500), tensor.RandNormal(rng, tensor.Float32, 4096, 500)
	conv1D := func(x, f *tensor.Tensor) *tensor.Tensor {
		y := ops.Conv2D(ops.Reshape(x, 32, 1, 256, 64), f, ops.Conv2DOpts{Padding: ops.Same})
		return ops.Reshape(y, 32, 256, 64)
	}
	for _, c := range []struct {
		name   string
		inputs []*tensor.Tensor
		fn     func(in []*tensor.Tensor) *tensor.Tensor
	}{
		{"Sort", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Sort(in[0], -1, false) }},
		{"TopK5", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { v, _ := ops.TopK(in[0], 5); return v }},
		{"Cumsum", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Cumsum(in[0], -1, false, false) }},
		{"LogSoftmax", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(in[0], -1) }},
		{"Embedding", []*tensor.Tensor{table}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Gather(in[0], ids, 0) }},
		{"Conv1D", []*tensor.Tensor{seq, filter}, func(in []*tensor.Tensor) *tensor.Tensor { return conv1D(in[0], in[1]) }},
		{"GeluTanh", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.GeluTanh(in[0]) }},
		{"Dropout", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Dropout(in[0], 0.1, drops) }},
		{"SoftmaxAxis0", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Softmax(in[0], 0) }},
		{"BatchMatMul", []*tensor.Tensor{left, right}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMul(in[0], in[1]) }},
		{"Einsum", []*tensor.Tensor{left, right}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Einsum("bij,bjk->bik", in[0], in[1]) }},
		{"Concat", []*tensor.Tensor{half, half2}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Concatenate(-1, in[0], in[1]) }},
		{"Norm", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Norm(in[0], 2, -1) }},
		{"Var", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Var(in[0], -1) }},
		{"Pow3", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Pow(in[0], tensor.Scalar(float32(3))) }},
		{"Where", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Where(ops.Gt(in[0], tensor.Scalar(float32(0))), in[0], ops.Mul(in[0], tensor.Scalar(float32(0.1))))
		}},
		{"MaskedSelect", []*tensor.Tensor{rows}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.MaskedSelect(in[0], ops.Gt(in[0], tensor.Scalar(float32(0))))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				tp := tape.New(tape.Options{ReleaseIntermediates: true})
				tp.Watch(c.inputs...)
				for _, g := range tp.Gradient(ops.Sum(c.fn(c.inputs)), c.inputs...) {
					g.Release()
				}
			}
		})
	}
}
