package cuda

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

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
		{"cnn nchw, average pooling, batch norm, dropout", func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m := nn.NewSequential(nn.NewConv2D("c", rng, 3, 3, 2, 8, nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW}, Activation: ops.Relu}),
				nn.AvgPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}, Format: ops.NCHW}}, nn.Flatten{},
				nn.NewBatchNorm("bn", 8*4*4, tensor.Float32), nn.NewDropout(0.2, tensor.NewRNG(5)), nn.NewDense("d", rng, 8*4*4, 10, nn.DenseOpts{}))
			return m, tensor.RandNormal(rng, tensor.Float32, 8, 2, 8, 8), tensor.FromSlice(make([]int32, 8))
		}},
		// (A recurrent layer after one with variables, whose input so has
		// a gradient, still leaves each time step's input gradient to the
		// collector: a loop region's gradients are not the tape's to
		// recycle. Not covered yet.)
		{"embedding, layer norm", func(rng *tensor.RNG) (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m := nn.NewSequential(nn.NewEmbedding("e", rng, 20, 8, tensor.Float32), nn.NewLayerNorm("ln", 8, tensor.Float32),
				nn.Flatten{}, nn.NewDense("o", rng, 5*8, 10, nn.DenseOpts{}))
			return m, tensor.FromSlice(make([]int32, 4*5), 4, 5), tensor.FromSlice(make([]int32, 4))
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
				// What earlier garbage holds goes back first (cleanups
				// run after a collection, on their own goroutine: until
				// the memory in use holds still), then the collector
				// stays off, so that only what the steps keep can grow.
				for last, i := -1, 0; i < 20; i++ {
					runtime.GC()
					time.Sleep(5 * time.Millisecond)
					now := d.MemoryStats().InUse
					if now == last {
						break
					}
					last = now
				}
				defer debug.SetGCPercent(debug.SetGCPercent(-1))
				before := d.MemoryStats().InUse
				for range 5 {
					run()
				}
				if after := d.MemoryStats().InUse; after > before {
					t.Errorf("5 more steps: %d bytes in use, %d before (%+d)", after, before, after-before)
				}
			})
		})
	}
}
