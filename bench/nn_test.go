package bench

import (
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// BenchmarkCNNTrainStep is examples/cnn's training step (the same model:
// conv 3x3x8 SAME relu, max-pool 2, conv 3x3x16 SAME relu, max-pool 2,
// dense to 3 classes; Adam) on a batch of 32 1x28x28 NCHW images.
func BenchmarkCNNTrainStep(b *testing.B) {
	rng := tensor.NewRNG(3)
	same := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW}, Activation: ops.Relu}
	pool := nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Format: ops.NCHW}}
	model := nn.NewSequential(
		nn.NewConv2D("conv1", rng, 3, 3, 1, 8, same), pool,
		nn.NewConv2D("conv2", rng, 3, 3, 8, 16, same), pool,
		nn.Flatten{},
		nn.NewDense("logits", rng, 7*7*16, 3, nn.DenseOpts{}))
	opt := nn.NewAdam(nn.Constant(0.003))
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float32, 32, 1, 28, 28)
	labels := make([]int32, 32)
	for i := range labels {
		labels[i] = int32(i % 3)
	}
	y := tensor.FromSlice(labels)
	step := func() { // examples/cnn's trainStep
		tp := tape.New(tape.Options{ReleaseIntermediates: true})
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(x), y)
		vars := model.Variables()
		if err := opt.Apply(vars, tp.Gradient(loss, nn.Values(vars)...)); err != nil {
			b.Fatal(err)
		}
	}
	step()
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
