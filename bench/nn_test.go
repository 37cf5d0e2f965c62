package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/examples/gpt/model"
	"github.com/eagerflow/eagerflow/internal/benchmodels"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// BenchmarkCharRNNStep is examples/charrnn's training step
// (internal/benchmodels.CharLSTM: an LSTM of 96 over 32 characters,
// batch 16, vocabulary 65, Adam), eager, beside PyTorch's torch.nn.LSTM
// step (bench/peers/torch_bench.py).
func BenchmarkCharRNNStep(b *testing.B) {
	model, opt, x, y := benchmodels.CharLSTM(65)
	step := nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
	batch := data.Element{x, y}
	steady(b, func() error { _, _, err := step(batch); return err })
}

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

// BenchmarkFashionCNNTrainStep is one training step of the Fashion-MNIST
// CNN, NHWC and NCHW, eager (nn.TrainStep) and traced
// (nn.TracedTrainStep), and eager under nn.MixedBFloat16 (both layouts
// have bfloat16 convolution kernels).
func BenchmarkFashionCNNTrainStep(b *testing.B) {
	for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		for _, mode := range []string{"eager", "traced", "mixed_bfloat16"} {
			b.Run(format.String()+"/"+mode, func(b *testing.B) {
				model, opt, x, y := benchmodels.FashionCNN(format)
				if mode == "mixed_bfloat16" {
					model.Policy = nn.MixedBFloat16
				}
				step := nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
				if mode == "traced" {
					step = nn.TracedTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
				}
				batch := data.Element{x, y}
				steady(b, func() error { _, _, err := step(batch); return err })
			})
		}
	}
}

// BenchmarkFashionConv times the Fashion-MNIST CNN's convolutions one op
// at a time, NHWC and NCHW, batch 128, 3x3 "same": conv1 (1 -> 32 channels
// on 28x28) and conv2 (32 -> 64 on 14x14), each forward, input gradient
// (conv2 only: conv1's input needs none) and filter gradient, with
// GFLOP/s.
func BenchmarkFashionConv(b *testing.B) {
	for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		rng := tensor.NewRNG(7)
		opts := ops.Conv2DOpts{Padding: ops.Same, Format: format}
		for _, l := range []struct {
			name       string
			hw, c, o   int
			inputGrads bool
		}{{"conv1", 28, 1, 32, false}, {"conv2", 14, 32, 64, true}} {
			shape := func(ch int) []int {
				if format == ops.NCHW {
					return []int{128, ch, l.hw, l.hw}
				}
				return []int{128, l.hw, l.hw, ch}
			}
			x := tensor.RandNormal(rng, tensor.Float32, shape(l.c)...)
			f := tensor.RandNormal(rng, tensor.Float32, 3, 3, l.c, l.o)
			dy := tensor.RandNormal(rng, tensor.Float32, shape(l.o)...)
			flops := float64(2 * 128 * l.hw * l.hw * l.o * 9 * l.c)
			run := func(name string, fn func() *tensor.Tensor) {
				b.Run(format.String()+"/"+l.name+"/"+name, func(b *testing.B) {
					for b.Loop() {
						fn().Release()
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
			run("forward", func() *tensor.Tensor { return ops.Conv2D(x, f, opts) })
			if l.inputGrads {
				run("input", func() *tensor.Tensor { return ops.Conv2DBackpropInput(x.Shape(), f, dy, opts) })
			}
			run("filter", func() *tensor.Tensor { return ops.Conv2DBackpropFilter(x, f.Shape(), dy, opts) })
		}
	}
}

// gptShape is issue 34's CPU target model: 4 blocks, 4 heads, width 128,
// context 128 (examples/gpt's default).
var gptShape = model.Config{Layers: 4, Heads: 4, Dim: 128, Context: 128}

// BenchmarkGPTStep times one training step of the GPT (batch 16 of 128
// bytes: forward, backward, AdamW, the gradients clipped to a norm of 1
// as the twin's), as BenchmarkTorchGPTStep: eager (model.TrainStep),
// eager with dropout 0.1 (the twin's /dropout), eager in mixed bfloat16
// (model.Config's Compute) and traced
// (nn.TracedTrainStep through an nn.ClippedOptimizer: one graph, the
// clipping and AdamW after it).
func BenchmarkGPTStep(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	ids := func() *tensor.Tensor {
		v := make([]int32, 16*gptShape.Context)
		for i := range v {
			v[i] = int32(32 + r.IntN(90))
		}
		return tensor.FromSlice(v, 16, gptShape.Context)
	}
	x, y := ids(), ids()
	b.Run("eager", func(b *testing.B) {
		m := model.New(tensor.NewRNG(1), gptShape)
		opt := model.NewOptimizer(1000)
		steady(b, func() error { _, err := m.TrainStep(opt, x, y); return err })
	})
	b.Run("eager/dropout", func(b *testing.B) { // 0.1 everywhere, as the twin's
		c := gptShape
		c.Dropout = 0.1
		m := model.New(tensor.NewRNG(1), c)
		opt := model.NewOptimizer(1000)
		steady(b, func() error { _, err := m.TrainStep(opt, x, y); return err })
	})
	b.Run("eager/mixed_bfloat16", func(b *testing.B) {
		c := gptShape
		c.Compute = tensor.BFloat16
		m := model.New(tensor.NewRNG(1), c)
		opt := model.NewOptimizer(1000)
		steady(b, func() error { _, err := m.TrainStep(opt, x, y); return err })
	})
	b.Run("traced", func(b *testing.B) {
		m := model.New(tensor.NewRNG(1), gptShape)
		step := nn.TracedTrainStep(m, model.Loss, nn.NewClippedOptimizer(model.NewOptimizer(1000), 1))
		batch := data.Element{x, y}
		steady(b, func() error { _, _, err := step(batch); return err })
	})
}

// BenchmarkGPTGenerate times generating the GPT's whole context, one
// byte at a time from a one-byte prompt with the KV cache (the greedy
// choice, so the sampler costs nothing), and reports tokens per second:
// eager (Decode a byte at a time) and traced (model.Generate: one graph,
// a While over the positions).
func BenchmarkGPTGenerate(b *testing.B) {
	m := model.New(tensor.NewRNG(1), gptShape)
	b.Run("eager", func(b *testing.B) {
		steady(b, func() error {
			return tensor.Catch(func() {
				caches := m.NewCaches()
				next := tensor.FromSlice([]int32{'f'}, 1, 1)
				for range gptShape.Context {
					next = ops.Cast(ops.ArgMax(m.Decode(next, caches), -1), tensor.Int32)
				}
			})
		})
		b.ReportMetric(float64(gptShape.Context)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
	b.Run("traced", func(b *testing.B) {
		steady(b, func() error { _, err := m.Generate([]byte("f"), gptShape.Context-1, 0, 0, 1); return err })
		b.ReportMetric(float64(gptShape.Context-1)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}

// BenchmarkBatchNorm times BatchNorm in training, forward and backward,
// over the Fashion CNN's first activations (128 images of 28x28, 32
// features), as one op each way (ops.BatchNorm, what nn.BatchNorm runs)
// and as the ops it replaced (nn's BatchNorm before it: a mean, the
// centred squares' mean, an rsqrt and three broadcast products), in both
// layouts.
func BenchmarkBatchNorm(b *testing.B) {
	rng := tensor.NewRNG(9)
	for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		shape, axis, dims, along := []int{128, 28, 28, 32}, 3, []int{0, 1, 2}, []int{1, 1, 1, 32}
		if format == ops.NCHW {
			shape, axis, dims, along = []int{128, 32, 28, 28}, 1, []int{0, 2, 3}, []int{1, 32, 1, 1}
		}
		x := tensor.RandNormal(rng, tensor.Float32, shape...)
		gamma, beta := tensor.RandNormal(rng, tensor.Float32, 32), tensor.RandNormal(rng, tensor.Float32, 32)
		byOps := func() *tensor.Tensor {
			mean := ops.Mean(x, dims...)
			c := ops.Sub(x, ops.Reshape(mean, along...))
			variance := ops.Mean(ops.Square(c), dims...)
			scale := ops.Mul(ops.Rsqrt(ops.Add(variance, ops.ScalarLike(variance, 1e-3))), gamma)
			return ops.Add(ops.Mul(c, ops.Reshape(scale, along...)), ops.Reshape(beta, along...))
		}
		fused := func() *tensor.Tensor { y, _, _ := ops.BatchNorm(x, gamma, beta, axis, 1e-3); return y }
		for _, c := range []struct {
			name string
			fn   func() *tensor.Tensor
		}{{"fused", fused}, {"ops", byOps}} {
			b.Run(format.String()+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					// The intermediates released, as a training step's tape
					// does, so that buffers come back to the cache.
					tp := tape.New(tape.Options{ReleaseIntermediates: true})
					tp.Watch(x, gamma, beta)
					for _, g := range tp.Gradient(ops.Sum(c.fn()), x, gamma, beta) {
						g.Release()
					}
				}
			})
		}
	}
}

// BenchmarkDepthwiseTrainStep is a depthwise convolution's training step
// (MobileNet's: 3x3 over 64 channels of 56x56, padding 1, one filter a
// channel, batch 32, at strides 1 and 2), the output summed and
// differentiated in the input and the filter, in both layouts, beside
// PyTorch's grouped conv2d (bench/peers/torch_bench.py).
func BenchmarkDepthwiseTrainStep(b *testing.B) {
	rng := tensor.NewRNG(9)
	for _, format := range []ops.DataFormat{ops.NCHW, ops.NHWC} {
		shape := []int{32, 64, 56, 56}
		if format == ops.NHWC {
			shape = []int{32, 56, 56, 64}
		}
		x := tensor.RandNormal(rng, tensor.Float32, shape...)
		f := tensor.RandNormal(rng, tensor.Float32, 3, 3, 64, 1)
		for _, stride := range []int{1, 2} {
			o := ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{1, 1}, {1, 1}}, Strides: [2]int{stride, stride}, Format: format}
			b.Run(fmt.Sprintf("%v/stride%d", format, stride), func(b *testing.B) {
				for b.Loop() {
					tp := tape.New(tape.Options{ReleaseIntermediates: true})
					tp.Watch(x, f)
					for _, g := range tp.Gradient(ops.Sum(ops.DepthwiseConv2D(x, f, o)), x, f) {
						g.Release()
					}
				}
			})
		}
	}
}
