package nn_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Layers compose into a model; Summarize runs an input through it and
// lists each layer's output shape and parameters.
func ExampleSummarize() {
	rng := tensor.NewRNG(1)
	model := nn.NewSequential(
		nn.NewConv2D("conv", rng, 3, 3, 1, 8, nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}),
		nn.Flatten{},
		nn.NewDense("out", rng, 28*28*8, 10, nn.DenseOpts{}),
	)
	s, err := nn.Summarize(model, tensor.Zeros(tensor.Float32, 1, 28, 28, 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Trainable, len(s.Layers), s.Layers[2].Output)
	// Output:
	// 62810 3 [1 10]
}

// An optimizer updates variables in place from their gradients: here Adam
// minimises (w - 3)² from w = 0.
func ExampleAdam() {
	w := tape.NewVariable("w", tensor.Scalar(0.0))
	opt := nn.NewAdam(nn.Constant(0.1))
	for range 200 {
		tp := tape.New()
		loss := ops.Square(ops.Sub(w.Value(), tensor.Scalar(3.0)))
		if err := opt.Apply([]*tape.Variable{w}, tp.Gradient(loss, w.Value())); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("%.2f after %d steps\n", w.Value().Float(), opt.Steps())
	// Output:
	// 3.00 after 200 steps
}

// Schedules give the learning rate of each step: a warm-up, then a cosine
// decay.
func ExampleWarmup() {
	lr := nn.Warmup(nn.Cosine(0.1, 100, 0.001), 10)
	for _, step := range []int{0, 9, 10, 60, 110, 500} {
		fmt.Printf("%d: %.4f\n", step, lr(step))
	}
	// Output:
	// 0: 0.0100
	// 9: 0.1000
	// 10: 0.1000
	// 60: 0.0505
	// 110: 0.0010
	// 500: 0.0010
}

// Losses and metrics take a model's output and the labels.
func ExampleSparseSoftmaxCrossEntropy() {
	logits := tensor.FromSlice([]float32{2, 0, 0, 0, 3, 0}, 2, 3)
	labels := tensor.FromSlice([]int32{0, 2})
	fmt.Printf("%.4v\n", nn.SparseSoftmaxCrossEntropy(logits, labels))
	fmt.Println(nn.Accuracy(logits, labels))
	// Output:
	// 1.6672 float32[]
	// 0.5
}

// A language model's logits [N, T, C] against its next tokens [N, T],
// the padding (token 0) left out of the loss and the mean's count, the
// targets smoothed by 0.1 as a transformer's training often does
// (PyTorch's F.cross_entropy(ignore_index=0, label_smoothing=0.1) gives
// 0.9235 too).
func ExampleSparseSoftmaxCrossEntropyWith() {
	logits := tensor.FromSlice([]float32{
		2, 0, 0, 0, 3, 0, 1, 1, 1, // sequence 1: three positions of 3 classes
		0, 0, 4, 5, 0, 0, 0, 0, 0, // sequence 2
	}, 2, 3, 3)
	next := tensor.FromSlice([]int32{1, 1, 0, 2, 0, 0}, 2, 3) // 0: padding
	loss := nn.SparseSoftmaxCrossEntropyWith(nn.CrossEntropyOpts{Ignore: []int{0}, LabelSmoothing: 0.1})
	fmt.Printf("%.4v\n", loss(logits, next))
	// Output:
	// 0.9235 float32[]
}

// A batch of sequences padded to one length (token 0 is padding) goes
// through a TransformerBlock whose attention leaves the padding out: the
// keep mask comes from the tokens, and a sequence's real positions come
// out as they would unpadded.
func ExampleTransformerBlock_ForwardMasked() {
	rng := tensor.NewRNG(1)
	emb := nn.NewEmbedding("tok", rng, 10, 16, tensor.Float32)
	block := nn.NewTransformerBlock("h0", rng, 16, 2, nn.MultiHeadAttentionOpts{})
	ids := tensor.FromSlice([]int32{
		3, 1, 4, 1, 5,
		9, 2, 6, 0, 0, // two positions of padding
	}, 2, 5)
	keep := ops.Ne(ids, tensor.Scalar(int32(0)))
	y := block.ForwardMasked(emb.Forward(ids), keep) // [2 5 16]
	// The second sequence alone, unpadded, gives its first three
	// positions the same outputs.
	alone := block.Forward(emb.Forward(tensor.FromSlice([]int32{9, 2, 6}, 1, 3)))
	got := ops.Slice(y, []int{1, 0, 0}, []int{2, 3, 16}, nil)
	fmt.Println(y.Shape(), ops.Amax(ops.Abs(ops.Sub(got, alone))).Float() < 1e-5)
	// Output:
	// [2 5 16] true
}

// A convolutional autoencoder's halves: strided Conv2D layers take a
// 16x16 image down to 4x4, Conv2DTranspose layers take it back up (Same
// padding: each doubles the size).
func ExampleConv2DTranspose() {
	rng := tensor.NewRNG(1)
	same := func(stride int) ops.Conv2DOpts {
		return ops.Conv2DOpts{Strides: [2]int{stride, stride}, Padding: ops.Same}
	}
	encoder := nn.NewSequential(
		nn.NewConv2D("enc1", rng, 3, 3, 1, 8, nn.Conv2DOpts{Conv2DOpts: same(2), Activation: ops.Relu}),
		nn.NewConv2D("enc2", rng, 3, 3, 8, 16, nn.Conv2DOpts{Conv2DOpts: same(2), Activation: ops.Relu}))
	decoder := nn.NewSequential(
		nn.NewConv2DTranspose("dec1", rng, 3, 3, 16, 8, nn.Conv2DTransposeOpts{Conv2DOpts: nn.Conv2DOpts{Conv2DOpts: same(2), Activation: ops.Relu}}),
		nn.NewConv2DTranspose("dec2", rng, 3, 3, 8, 1, nn.Conv2DTransposeOpts{Conv2DOpts: nn.Conv2DOpts{Conv2DOpts: same(2), Activation: ops.Sigmoid}}))
	x := tensor.RandUniform(rng, tensor.Float32, 0, 1, 2, 16, 16, 1)
	code := encoder.Forward(x)
	fmt.Println(code.Shape(), decoder.Forward(code).Shape())
	fmt.Println(decoder.Layers[0])
	// Output:
	// [2 4 4 16] [2 16 16 1]
	// Conv2DTranspose dec1: 3x3, 16 -> 8, stride 2x2, same, relu
}

// A causal Conv1D over a sequence: each output step sees its own input
// and the ones before it, (kernel-1)·dilation of them, and none after,
// as a WaveNet's or temporal convolutional network's layers do.
func ExampleConv1D() {
	rng := tensor.NewRNG(1)
	conv := nn.NewConv1D("tcn", rng, 2, 3, 4, nn.Conv1DOpts{Causal: true, Dilation: 4, Activation: ops.Relu})
	x := tensor.RandNormal(rng, tensor.Float32, 8, 50, 3) // [N L C]
	fmt.Println(conv.Forward(x).Shape(), conv)
	// Output:
	// [8 50 4] Conv1D tcn: 2, 3 -> 4, causal, relu
}
