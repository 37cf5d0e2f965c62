package nn_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Mixed precision: the model computes in bfloat16 while its variables and
// its output stay float32; for float16, a LossScaleOptimizer scales the
// loss so that small gradients survive.
func ExampleSequential_policy() {
	rng := tensor.NewRNG(1)
	model := nn.NewSequential(
		nn.NewDense("hidden", rng, 4, 16, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("out", rng, 16, 2, nn.DenseOpts{}),
	)
	model.Policy = nn.MixedBFloat16
	x := tensor.RandUniform(rng, tensor.Float32, -1, 1, 8, 4)
	y := tensor.FromSlice([]int64{0, 1, 0, 1, 1, 0, 1, 0})
	step := nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, nn.NewLossScaleOptimizer(nn.NewAdam(nn.Constant(0.01))))
	if _, _, err := step(data.Element{x, y}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(model.Policy, model.Forward(x).DType(), model.Variables()[0].Value().DType())
	// Output:
	// mixed_bfloat16 float32 float32
}
