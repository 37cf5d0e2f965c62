package bench

import (
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// elementwiseChain is issue 5's chain: x*1.01, +0.5, tanh three times over,
// then *1.01, on float32.
func elementwiseChain(args []*tensor.Tensor) []*tensor.Tensor {
	x, scale, bias := args[0], tensor.Scalar(float32(1.01)), tensor.Scalar(float32(0.5))
	for range 3 {
		x = ops.Tanh(ops.Add(ops.Mul(x, scale), bias))
	}
	return []*tensor.Tensor{ops.Mul(x, scale)}
}

// BenchmarkTraceElementwiseChain1K runs the chain on 1000 elements eagerly
// and from its traced graph.
func BenchmarkTraceElementwiseChain1K(b *testing.B) {
	x := tensor.RandUniform(tensor.NewRNG(5), tensor.Float32, 0, 1, 1000)
	b.Run("eager", func(b *testing.B) {
		for b.Loop() {
			elementwiseChain([]*tensor.Tensor{x})
		}
	})
	b.Run("traced", func(b *testing.B) {
		f := control.NewFunction(elementwiseChain)
		for b.Loop() {
			if _, err := f.Call(x); err != nil {
				b.Fatal(err)
			}
		}
	})
}
