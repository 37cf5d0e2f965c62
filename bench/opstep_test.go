package bench

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/benchmodels"
)

// BenchmarkOpStep is one op's training step (forward, the output summed,
// gradients of the float inputs, intermediates released as nn's steps
// release them; internal/benchmodels.OpSteps at CPUOpSizes) for ops a
// sweep of common layers found behind PyTorch or near it, beside
// BenchmarkTorchOpStep (bench/peers/torch_bench.py): Sort, TopK of 5,
// Cumsum, LogSoftmax, GeluTanh, Dropout, Norm, Var, Pow, Where and
// MaskedSelect over [4096 1000] float32 (Softmax along its first axis);
// an embedding's lookup of [64 256] ids in a [30000 256] table; a Conv1D
// of kernel 5 from 64 to 64 channels over [32 256 64] ([N L C]; PyTorch's
// [N C L]), same padding; a batch of 64 products [128 64]·[64 128], by
// MatMul and by Einsum; two [4096 500] concatenated.
func BenchmarkOpStep(b *testing.B) {
	for _, s := range benchmodels.OpSteps(benchmodels.CPUOpSizes) {
		b.Run(s.Name, func(b *testing.B) {
			for b.Loop() {
				s.Run()
			}
		})
	}
}
