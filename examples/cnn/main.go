// Command cnn trains a small convolutional network to tell apart rendered
// shapes (filled circles, squares and triangles of random size and place,
// with noise; generated, no download) and prints its accuracy on images it
// did not train on.
//
//	go run ./examples/cnn [-epochs 4] [-dir runs/cnn]
//
// With -dir it keeps a checkpoint, TensorBoard events and curves.png (loss, validation accuracy) there.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/examples/internal/report"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.epochs, "epochs", 4, "training epochs")
	flag.StringVar(&cfg.dir, "dir", "", "output directory (default: a temporary one)")
	flag.Parse()
	cfg.progress = os.Stderr
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cnn:", err)
		os.Exit(1)
	}
	fmt.Printf("final loss %.4f, accuracy %.1f%% on %d held-out images\n", res.loss, 100*res.accuracy, res.heldOut)
}

type config struct {
	epochs   int
	dir      string
	images   int
	progress io.Writer
}

type result struct {
	firstLoss, loss, accuracy float64
	heldOut                   int
}

const size = 28

// shapes renders n images [n 28 28 1] of class i%3 (circle, square,
// triangle) and their labels.
func shapes(n int, seed uint64) (*tensor.Tensor, *tensor.Tensor) {
	rng := tensor.NewRNG(seed)
	u := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, 0, 1, n, 3))
	noise := tensor.ToSlice[float32](tensor.RandNormal(rng, tensor.Float32, n, size, size))
	px := make([]float32, n*size*size)
	labels := make([]int32, n)
	for i := range labels {
		c := i % 3
		labels[i] = int32(c)
		r := 5 + 5*u[3*i]                      // half-size 5..10
		cx := r + (float64(size)-2*r)*u[3*i+1] // keep the shape inside
		cy := r + (float64(size)-2*r)*u[3*i+2]
		for y := range size {
			for x := range size {
				dx, dy := float64(x)+0.5-cx, float64(y)+0.5-cy
				var in bool
				switch c {
				case 0:
					in = dx*dx+dy*dy <= r*r
				case 1:
					in = math.Abs(dx) <= r*0.8 && math.Abs(dy) <= r*0.8
				default: // apex up: |dx| grows with dy
					in = dy >= -r && dy <= r && math.Abs(dx) <= (dy+r)/2
				}
				v := float32(0.15) * noise[(i*size+y)*size+x]
				if in {
					v += 1
				}
				px[(i*size+y)*size+x] = v
			}
		}
	}
	return tensor.FromSlice(px, n, 1, size, size), tensor.FromSlice(labels)
}

// newModel is conv(8) - pool - conv(16) - pool - dense(3) on NCHW batches
// (PyTorch's layout, which eagerflow's convolution runs fastest: each
// image one GEMM; NHWC works too, through the general lowering).
func newModel(seed uint64) *nn.Sequential {
	rng := tensor.NewRNG(seed)
	same := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW}, Activation: ops.Relu}
	pool := nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Format: ops.NCHW}}
	return nn.NewSequential(
		nn.NewConv2D("conv1", rng, 3, 3, 1, 8, same), pool,
		nn.NewConv2D("conv2", rng, 3, 3, 8, 16, same), pool,
		nn.Flatten{},
		nn.NewDense("logits", rng, 7*7*16, 3, nn.DenseOpts{}))
}

// trainStep is one step of the example (BenchmarkCNNTrainStep runs it too).
func trainStep(model *nn.Sequential, opt nn.Optimizer, x, labels *tensor.Tensor) (float64, error) {
	// Nothing but the loss is read after the gradient: the activations'
	// buffers go back to the device's cache for the next step.
	tp := tape.New(tape.Options{ReleaseIntermediates: true})
	loss := nn.SparseSoftmaxCrossEntropy(model.Forward(x), labels)
	vars := model.Variables()
	return loss.Float(), opt.Apply(vars, tp.Gradient(loss, nn.Values(vars)...))
}

func run(cfg config) (result, error) {
	if cfg.epochs <= 0 {
		return result{}, fmt.Errorf("epochs must be positive, got %d", cfg.epochs)
	}
	if cfg.images == 0 {
		cfg.images = 1500
	}
	dir, cleanup, err := report.OutputDir(cfg.dir, "cnn")
	if err != nil {
		return result{}, err
	}
	defer cleanup()
	x, y := shapes(cfg.images, 1)
	ds, err := data.FromSlices(x, y)
	if err != nil {
		return result{}, err
	}
	ds = ds.Cache().Shuffle(cfg.images, 2, true).Batch(32, false).Prefetch(2)
	model := newModel(3)
	opt := nn.NewAdam(nn.Constant(0.003))
	step := func(b data.Element) (float64, int, error) {
		l, err := trainStep(model, opt, b[0], b[1])
		return l, b[0].Dim(0), err
	}
	res := result{heldOut: 300}
	tx, ty := shapes(res.heldOut, 99) // images it never trains on
	val, err := data.FromSlices(tx, ty)
	if err != nil {
		return result{}, err
	}
	h, err := nn.Fit(context.Background(), ds, nn.AllVariables(model), opt, step,
		nn.FitConfig{Epochs: cfg.epochs, Dir: dir, Progress: cfg.progress, StepsPerEpoch: (cfg.images + 31) / 32,
			Validation: val.Batch(100, false),
			Evaluate:   nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, map[string]nn.Metric{"accuracy": nn.Accuracy})})
	if err != nil {
		return result{}, err
	}
	res.firstLoss, res.loss, err = report.Finish(dir, cfg.dir != "", cfg.progress, "cnn: shapes", h)
	if err != nil {
		return res, err
	}
	res.accuracy = nn.Accuracy(nn.Predict(model, tx), ty)
	return res, nil
}
