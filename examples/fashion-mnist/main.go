// Command fashion-mnist trains a small CNN on Fashion-MNIST (Zalando's
// 28x28 clothing images, 10 classes) from the IDX files Debian's
// dataset-fashion-mnist package installs, validates after every epoch,
// stops early when validation accuracy stalls, and reports its test
// accuracy beside the dataset authors' published baseline for a
// comparable model.
//
//	sudo apt-get install dataset-fashion-mnist
//	go run ./examples/fashion-mnist [-epochs 5] [-train 55000] [-dir runs/fashion] [-policy mixed_bfloat16]
//
// It is the example to read first after the main job: loading (data/idx),
// scaling with a Go number, the model as the layers' tree, Fit with
// validation and callbacks, and evaluation are each a few lines.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/data/idx"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/plot"
	"github.com/eagerflow/eagerflow/tensor"
)

// baseline is the dataset authors' benchmark entry for a comparable model
// (two convolutions with pooling, no augmentation: TensorFlow's layers
// tutorial), from the README of github.com/zalandoresearch/fashion-mnist.
const baseline = 0.916

func main() {
	cfg := config{progress: os.Stderr}
	flag.StringVar(&cfg.dataDir, "data", "/usr/share/datasets/fashion-mnist", "directory of the IDX files")
	flag.IntVar(&cfg.epochs, "epochs", 5, "most training epochs (early stopping may end sooner)")
	flag.IntVar(&cfg.train, "train", 55000, "training images (the rest of the 60000 up to 5000 validate)")
	flag.IntVar(&cfg.test, "test", 10000, "test images")
	flag.StringVar(&cfg.dir, "dir", "", "checkpoints, TensorBoard logs, curves.png and test-images.png (default: none)")
	policy := flag.String("policy", "", "mixed precision: mixed_bfloat16, or mixed_float16 (with loss scaling); default float32")
	flag.Parse()
	switch *policy {
	case "":
	case "mixed_bfloat16":
		cfg.policy = nn.MixedBFloat16
	case "mixed_float16":
		cfg.policy = nn.MixedFloat16
	default:
		fmt.Fprintf(os.Stderr, "fashion-mnist: -policy %q: want mixed_bfloat16 or mixed_float16\n", *policy)
		os.Exit(2)
	}
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fashion-mnist:", err)
		os.Exit(1)
	}
	fmt.Printf("test accuracy %.2f%% on %d images (published baseline for 2 conv + pooling: %.1f%%)\n",
		100*res.accuracy, res.tested, 100*baseline)
}

type config struct {
	dataDir, dir        string
	epochs, train, test int
	progress            io.Writer
	policy              nn.Policy // mixed precision (the zero value: float32)
}

type result struct {
	accuracy float64
	tested   int
	history  nn.History
}

// load reads images as uint8 [n 28 28 1] (a quarter of float32's memory;
// scale makes each batch float32) and labels as int32.
func load(dir, prefix string, n int) (*tensor.Tensor, *tensor.Tensor, error) {
	images, err := idx.ReadFile(filepath.Join(dir, prefix+"-images-idx3-ubyte.gz"))
	if err != nil {
		return nil, nil, fmt.Errorf("%w (install Debian's dataset-fashion-mnist, or pass -data)", err)
	}
	labels, err := idx.ReadFile(filepath.Join(dir, prefix+"-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, nil, err
	}
	n = min(n, images.Dim(0))
	x := ops.Index(images, ops.Until(n), ops.Ellipsis, ops.NewAxis)
	y := ops.Cast(ops.Index(labels, ops.Until(n)), tensor.Int32)
	return x, y, nil
}

// scale maps a batch's uint8 pixels to float32 in [0, 1].
func scale(b data.Element) (data.Element, error) {
	return data.Element{ops.Div(ops.Cast(b[0], tensor.Float32), tensor.Scalar(255.0)), b[1]}, nil
}

func newModel(rng *tensor.RNG) *nn.Sequential {
	conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}
	pool := nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}}}
	return nn.NewSequential(
		nn.NewConv2D("conv1", rng, 3, 3, 1, 32, conv), pool,
		nn.NewConv2D("conv2", rng, 3, 3, 32, 64, conv), pool,
		nn.Flatten{},
		nn.NewDense("dense", rng, 7*7*64, 128, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("logits", rng, 128, 10, nn.DenseOpts{}))
}

func run(cfg config) (result, error) {
	x, y, err := load(cfg.dataDir, "train", 60000)
	if err != nil {
		return result{}, err
	}
	train := min(cfg.train, x.Dim(0)-1)
	val := min(5000, x.Dim(0)-train)
	all, err := data.FromSlices(x, y) // Take, Skip and Shuffle of it copy no images
	if err != nil {
		return result{}, err
	}
	trainDS, valDS := all.Take(train), all.Skip(train).Take(val)

	model := newModel(tensor.NewRNG(1))
	model.Policy = cfg.policy
	fmt.Fprintln(cfg.progress, model)
	lr := &nn.Plateau{Base: nn.Constant(1e-3), Monitor: nn.Monitor{Name: "val_accuracy"}, Factor: 0.3}
	var opt nn.Optimizer = nn.NewAdam(lr.Schedule)
	if cfg.policy == nn.MixedFloat16 { // float16's range needs the loss scaled
		opt = nn.NewLossScaleOptimizer(opt)
	}
	metrics := map[string]nn.Metric{"accuracy": nn.Accuracy}
	h, err := nn.Fit(context.Background(), trainDS.Shuffle(train, 1, true).Batch(128, false).Map(scale).Prefetch(2),
		nn.AllVariables(model), opt, nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt),
		nn.FitConfig{
			Epochs: cfg.epochs, Dir: cfg.dir, Progress: cfg.progress, StepsPerEpoch: (train + 127) / 128,
			Validation: valDS.Batch(500, false).Map(scale),
			Evaluate:   nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, metrics),
			Callbacks:  []nn.Callback{&nn.EarlyStopping{Monitor: nn.Monitor{Name: "val_accuracy"}, Patience: 1, RestoreBest: true}, lr},
		})
	if err != nil {
		return result{}, err
	}

	tx, ty, err := load(cfg.dataDir, "t10k", cfg.test)
	if err != nil {
		return result{}, err
	}
	testDS, err := data.FromSlices(tx, ty)
	if err != nil {
		return result{}, err
	}
	scores, err := nn.Evaluate(context.Background(), testDS.Batch(500, false).Map(scale), nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, metrics))
	if err != nil {
		return result{}, err
	}
	if cfg.dir != "" { // the curves, and the first 32 test images as the model saw them
		if err := plot.History(filepath.Join(cfg.dir, "curves.png"), h, plot.Options{Title: "fashion-mnist"}); err != nil {
			return result{}, err
		}
		if err := plot.Image(filepath.Join(cfg.dir, "test-images.png"), ops.Index(tx, ops.Until(32)), plot.ImageOptions{Cols: 8, Scale: 2, Min: 0, Max: 255}); err != nil {
			return result{}, err
		}
	}
	return result{accuracy: scores["accuracy"], tested: tx.Dim(0), history: h}, nil
}
