package cuda

import (
	"runtime/debug"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A warm training step on the GPU gives back every buffer it takes: with
// the collector off, the memory in use after each step is the same (a
// tensor left to the collector would hold its device memory until a
// collection, and a GPU's memory is the scarce kind).
func TestTrainStepMemoryIsFlatOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, c := range []struct {
		name  string
		build func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor)
	}{
		{"mlp", func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m := nn.NewSequential(nn.NewDense("a", rng, 64, 64, nn.DenseOpts{Activation: ops.Relu}), nn.NewDense("b", rng, 64, 10, nn.DenseOpts{}))
			return m, tensor.RandNormal(rng, tensor.Float32, 32, 64), tensor.FromSlice(make([]int32, 32))
		}},
		{"cnn", func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m := nn.NewSequential(nn.NewConv2D("c", rng, 3, 3, 1, 8, nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}),
				nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}}}, nn.Flatten{}, nn.NewDense("d", rng, 8*4*4, 10, nn.DenseOpts{}))
			return m, tensor.RandNormal(rng, tensor.Float32, 8, 8, 8, 1), tensor.FromSlice(make([]int32, 8))
		}},
		{"lstm", func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m := nn.NewSequential(&nn.RNN{Cell: nn.NewLSTMCell("l", rng, 8, 16, tensor.Float32)}, nn.NewDense("o", rng, 16, 10, nn.DenseOpts{}))
			return m, tensor.RandNormal(rng, tensor.Float32, 4, 5, 8), tensor.FromSlice(make([]int32, 4))
		}},
		{"mixed bfloat16", func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m := nn.NewSequential(nn.NewDense("a", rng, 64, 64, nn.DenseOpts{Activation: ops.Relu}), nn.NewDense("b", rng, 64, 10, nn.DenseOpts{}))
			m.Policy = nn.MixedBFloat16
			return m, tensor.RandNormal(rng, tensor.Float32, 32, 64), tensor.FromSlice(make([]int32, 32))
		}},
		{"transformer block", func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m := nn.NewSequential(nn.NewTransformerBlock("t", rng, 32, 4, nn.MultiHeadAttentionOpts{Causal: true}), nn.Flatten{}, nn.NewDense("d", rng, 8*32, 10, nn.DenseOpts{}))
			return m, tensor.RandNormal(rng, tensor.Float32, 4, 8, 32), tensor.FromSlice(make([]int32, 4))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			onDevice(d, func() {
				model, x, y := c.build(tensor.NewRNG(3))
				step := nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(1e-3)))
				run := func() {
					if _, _, err := step([]*tensor.Tensor{x, y}); err != nil {
						t.Fatal(err)
					}
				}
				run()
				run()
				defer debug.SetGCPercent(debug.SetGCPercent(-1))
				before := d.MemoryStats().InUse
				for range 5 {
					run()
				}
				if after := d.MemoryStats().InUse; after != before {
					t.Errorf("5 more steps: %d bytes in use, %d before (%+d)", after, before, after-before)
				}
			})
		})
	}
}
