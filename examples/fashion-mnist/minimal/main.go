// Command minimal is examples/fashion-mnist cut to what a user writes
// first: load, scale, a CNN, Fit with validation, test accuracy. It is the
// program a PyTorch user would write in about 45 lines (twin.py beside it).
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/data/idx"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	acc, err := train("/usr/share/datasets/fashion-mnist", 60000, 5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("test accuracy %.2f%%\n", 100*acc)
}

// load returns a dataset of (uint8 [n 28 28 1] images, int32 labels).
func load(dir, prefix string, n int) (*data.Dataset, error) {
	images, err := idx.ReadFile(dir + "/" + prefix + "-images-idx3-ubyte.gz")
	if err != nil {
		return nil, err
	}
	labels, err := idx.ReadFile(dir + "/" + prefix + "-labels-idx1-ubyte.gz")
	if err != nil {
		return nil, err
	}
	return data.FromSlices(ops.Index(images, ops.Until(n), ops.Ellipsis, ops.NewAxis), ops.Cast(ops.Index(labels, ops.Until(n)), tensor.Int32))
}

func scale(b data.Element) (data.Element, error) {
	return data.Element{ops.Div(ops.Cast(b[0], tensor.Float32), tensor.Scalar(255.0)), b[1]}, nil
}

func train(dir string, n, epochs int) (float64, error) {
	all, err := load(dir, "train", n)
	if err != nil {
		return 0, err
	}
	test, err := load(dir, "t10k", n/6)
	if err != nil {
		return 0, err
	}
	rng := tensor.NewRNG(1)
	conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}
	pool := nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}}}
	model := nn.NewSequential(
		nn.NewConv2D("conv1", rng, 3, 3, 1, 32, conv), pool,
		nn.NewConv2D("conv2", rng, 3, 3, 32, 64, conv), pool,
		nn.Flatten{},
		nn.NewDense("dense", rng, 7*7*64, 128, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("logits", rng, 128, 10, nn.DenseOpts{}))
	opt := nn.NewAdam(nn.Constant(1e-3))
	eval := nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, map[string]nn.Metric{"accuracy": nn.Accuracy})
	_, err = nn.Fit(context.Background(), all.Skip(n/12).Shuffle(n, 1, true).Batch(128, false).Map(scale),
		nn.AllVariables(model), opt, nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt),
		nn.FitConfig{Epochs: epochs, Progress: os.Stderr, Validation: all.Take(n/12).Batch(500, false).Map(scale), Evaluate: eval})
	if err != nil {
		return 0, err
	}
	scores, err := nn.Evaluate(context.Background(), test.Batch(500, false).Map(scale), eval)
	return scores["accuracy"], err
}
