package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of SumOfSquares and ScaleEach (ops/global_norm.go): a pass over
// each tensor's elements in row-major order, sums in float64.

func sumOfSquaresKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	sum := 0.0
	for _, x := range c.Inputs {
		for _, v := range data[T](x)[:x.NumElements()] {
			sum += float64(v) * float64(v)
		}
	}
	switch out := outs[0]; out.DType() { // SumOfSquaresAs: float64 for float32
	case tensor.Float64:
		data[float64](out)[0] = sum
	default:
		data[T](out)[0] = T(sum)
	}
}

func scaleEachKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	s := data[T](c.Inputs[0])[0]
	for i, x := range c.Inputs[1:] {
		out := data[T](outs[i])
		for j, v := range data[T](x)[:x.NumElements()] {
			out[j] = v * s
		}
	}
}

func init() {
	kernels{f32: sumOfSquaresKernel[float32], f64: sumOfSquaresKernel[float64]}.register("SumOfSquares")
	kernels{f32: scaleEachKernel[float32], f64: scaleEachKernel[float64]}.register("ScaleEach")
}
