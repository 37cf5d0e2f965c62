// Package benchmodels holds the models the benchmarks of several packages
// train, so that the CPU's and the GPU's figures (and their PyTorch twins
// in bench/peers) are of one model.
package benchmodels

import (
	"slices"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// FashionCNN is the Fashion-MNIST model of examples/fashion-mnist (and
// issues 17 and 32): conv 3x3x32 SAME relu, max-pool 2, conv 3x3x64 SAME
// relu, max-pool 2, dense 128 relu, dense 10, Adam (learning rate 1e-3),
// in the given layout, with a batch x of 128 28x28 one-channel images
// (uniform in [0, 1)) and int32 labels y (i mod 10). The variables and x
// are made on the default device; y on the host.
func FashionCNN(format ops.DataFormat) (model *nn.Sequential, opt nn.Optimizer, x, y *tensor.Tensor) {
	rng := tensor.NewRNG(3)
	conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: format}, Activation: ops.Relu}
	pool := nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Format: format}}
	model = nn.NewSequential(
		nn.NewConv2D("conv1", rng, 3, 3, 1, 32, conv), pool,
		nn.NewConv2D("conv2", rng, 3, 3, 32, 64, conv), pool,
		nn.Flatten{},
		nn.NewDense("dense", rng, 7*7*64, 128, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("logits", rng, 128, 10, nn.DenseOpts{}))
	x, y = fashionBatch(format)
	return model, nn.NewAdam(nn.Constant(1e-3)), x, y
}

// fashionBatch is FashionCNN's batch in the given layout.
func fashionBatch(format ops.DataFormat) (x, y *tensor.Tensor) {
	shape := []int{128, 28, 28, 1}
	if format == ops.NCHW {
		shape = []int{128, 1, 28, 28}
	}
	x = tensor.RandUniform(tensor.NewRNG(4), tensor.Float32, 0, 1, shape...)
	labels := make([]int32, 128)
	for i := range labels {
		labels[i] = int32(i % 10)
	}
	return x, tensor.FromSlice(labels)
}

// FashionCNNNormed is FashionCNN with BatchNorm after each convolution
// (before its ReLU; momentum 0.9, epsilon 1e-5, PyTorch's) and dropout of
// 0.25 after the dense layer: a model whose traced step carries state
// (the running statistics) and draws masks, the shape of the CNNs people
// train. Its batch is FashionCNN's.
func FashionCNNNormed(format ops.DataFormat) (model *nn.Sequential, opt nn.Optimizer, x, y *tensor.Tensor) {
	rng := tensor.NewRNG(3)
	conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: format}}
	pool := nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Format: format}}
	norm := func(name string, c int) *nn.BatchNorm {
		bn := nn.NewBatchNorm(name, c, tensor.Float32)
		bn.Momentum, bn.Epsilon = 0.9, 1e-5
		if format == ops.NCHW {
			bn.Axis = 1
		}
		return bn
	}
	relu := nn.Activation(ops.Relu)
	model = nn.NewSequential(
		nn.NewConv2D("conv1", rng, 3, 3, 1, 32, conv), norm("bn1", 32), relu, pool,
		nn.NewConv2D("conv2", rng, 3, 3, 32, 64, conv), norm("bn2", 64), relu, pool,
		nn.Flatten{},
		nn.NewDense("dense", rng, 7*7*64, 128, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDropout(0.25, tensor.NewRNG(5)),
		nn.NewDense("logits", rng, 128, 10, nn.DenseOpts{}))
	x, y = fashionBatch(format)
	return model, nn.NewAdam(nn.Constant(1e-3)), x, y
}

// CharLSTM is examples/charrnn's model at its sizes: an embedding of 16
// for each of vocab characters, an LSTM of 96 over 32 steps, dense logits
// per step; Adam (learning rate 0.01); a batch x of 16 windows of 32
// character ids (int32) and their next characters y, flattened to [512].
// Forward maps ids [N 32] to logits [N·32 vocab].
func CharLSTM(vocab int) (model nn.Module, opt nn.Optimizer, x, y *tensor.Tensor) {
	const seqLen, batch, embed, hidden = 32, 16, 16, 96
	rng := tensor.NewRNG(7)
	m := &charLSTM{
		emb:    nn.NewEmbedding("embedding", rng, vocab, embed, tensor.Float32),
		rnn:    &nn.RNN{Cell: nn.NewLSTMCell("lstm", rng, embed, hidden, tensor.Float32), ReturnSequences: true},
		out:    nn.NewDense("logits", rng, hidden, vocab, nn.DenseOpts{}),
		hidden: hidden,
	}
	ids := make([]int32, batch*(seqLen+1))
	for i := range ids {
		ids[i] = int32((i*7 + i/5) % vocab)
	}
	xs, ys := make([]int32, 0, batch*seqLen), make([]int32, 0, batch*seqLen)
	for b := range batch {
		w := ids[b*(seqLen+1) : (b+1)*(seqLen+1)]
		xs, ys = append(xs, w[:seqLen]...), append(ys, w[1:]...)
	}
	return m, nn.NewAdam(nn.Constant(0.01)), tensor.FromSlice(xs, batch, seqLen), tensor.FromSlice(ys)
}

type charLSTM struct {
	emb    *nn.Embedding
	rnn    *nn.RNN
	out    *nn.Dense
	hidden int
}

func (m *charLSTM) Forward(ids *tensor.Tensor) *tensor.Tensor {
	return m.out.Forward(ops.Reshape(m.rnn.Forward(m.emb.Forward(ids)), -1, m.hidden))
}

func (m *charLSTM) Variables() []*tape.Variable {
	return slices.Concat(m.emb.Variables(), m.rnn.Variables(), m.out.Variables())
}
