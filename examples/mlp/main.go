// Command mlp trains a classifier on two interleaved spirals (generated, no
// download) with nn layers, Adam and nn.Fit, and prints its accuracy.
//
//	go run ./examples/mlp [-epochs 60] [-dir runs/mlp]
//
// With -dir it keeps a checkpoint (and resumes from it), TensorBoard
// events (tensorboard --logdir DIR/logs) and curves.png (loss, validation accuracy) there; without, it
// uses a temporary directory.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/examples/internal/report"
	"github.com/eagerflow/eagerflow/examples/internal/toydata"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	var cfg config
	flag.IntVar(&cfg.epochs, "epochs", 60, "training epochs")
	flag.StringVar(&cfg.dir, "dir", "", "output directory (default: a temporary one)")
	flag.Parse()
	cfg.progress = os.Stderr
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mlp:", err)
		os.Exit(1)
	}
	fmt.Printf("final loss %.4f, accuracy %.1f%% on %d points\n", res.loss, 100*res.accuracy, res.points)
}

type config struct {
	epochs   int
	dir      string
	points   int
	progress io.Writer
}

type result struct {
	firstLoss, loss, accuracy float64
	points                    int
}

func run(cfg config) (result, error) {
	if cfg.epochs <= 0 {
		return result{}, fmt.Errorf("epochs must be positive, got %d", cfg.epochs)
	}
	if cfg.points == 0 {
		cfg.points = 1000
	}
	dir, cleanup, err := report.OutputDir(cfg.dir, "mlp")
	if err != nil {
		return result{}, err
	}
	defer cleanup()
	x, y := toydata.Spirals(cfg.points, 1)
	ds, err := data.FromSlices(x, y)
	if err != nil {
		return result{}, err
	}
	ds = ds.Cache().Shuffle(cfg.points, 2, true).Batch(50, false)

	rng := tensor.NewRNG(3)
	model := nn.NewSequential(
		nn.NewDense("dense1", rng, 2, 64, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("dense2", rng, 64, 64, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("logits", rng, 64, 2, nn.DenseOpts{}))
	opt := nn.NewAdam(nn.Constant(0.01))
	step := func(b data.Element) (float64, int, error) {
		tp := tape.New(tape.Options{ReleaseIntermediates: true}) // only the loss is read afterwards
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(b[0]), b[1])
		vars := model.Variables()
		return loss.Float(), b[0].Dim(0), opt.Apply(vars, tp.Gradient(loss, nn.Values(vars)...))
	}
	vx, vy := toydata.Spirals(cfg.points/4, 7) // fresh noise: points it never trains on
	val, err := data.FromSlices(vx, vy)
	if err != nil {
		return result{}, err
	}
	h, err := nn.Fit(context.Background(), ds, nn.AllVariables(model), opt, step,
		nn.FitConfig{Epochs: cfg.epochs, Dir: dir, Progress: cfg.progress, StepsPerEpoch: (cfg.points + 49) / 50,
			Validation: val.Batch(250, false),
			Evaluate:   nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, map[string]nn.Metric{"accuracy": nn.Accuracy})})
	if err != nil {
		return result{}, err
	}
	res := result{points: cfg.points}
	res.firstLoss, res.loss, err = report.Finish(dir, cfg.dir != "", cfg.progress, "mlp: two spirals", h)
	if err != nil {
		return res, err
	}
	res.accuracy = nn.Accuracy(nn.Predict(model, x), y)
	return res, nil
}
