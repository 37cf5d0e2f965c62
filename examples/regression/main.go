// Command regression fits a two-layer network to a noisy nonlinear curve
// with the gradient tape and plain SGD, printing the loss as it falls.
//
//	go run ./examples/regression [-steps 2000] [-lr 0.05] [-seed 1]
//
// It is eagerflow's main example: every piece of the training loop is
// visible (data, parameters, forward pass, tape, gradient, update).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/plot"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	cfg := config{}
	flag.IntVar(&cfg.steps, "steps", 2000, "training steps")
	flag.Float64Var(&cfg.lr, "lr", 0.05, "learning rate")
	flag.IntVar(&cfg.hidden, "hidden", 32, "hidden units")
	flag.Uint64Var(&cfg.seed, "seed", 1, "random seed")
	flag.StringVar(&cfg.dir, "dir", "", "if set, write loss.png and TensorBoard events (DIR/logs) there")
	flag.Parse()
	res, err := run(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "regression:", err)
		os.Exit(1)
	}
	fmt.Printf("final mse %.5f (started at %.5f)\n", res.final, res.first)
}

type config struct {
	steps, hidden int
	lr            float64
	seed          uint64
	logEvery      int
	dir           string
}

type result struct{ first, final float64 }

// dataset returns n points of y = sin(3x) + 0.3x^2 + noise on x in [-2, 2]:
// x: [n 1], y: [n 1].
func dataset(rng *tensor.RNG, n int) (x, y *tensor.Tensor) {
	xs := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -2, 2, n))
	noise := tensor.ToSlice[float32](tensor.RandNormal(rng, tensor.Float32, n))
	ys := make([]float32, n)
	for i, v := range xs {
		x := float64(v)
		ys[i] = float32(math.Sin(3*x)+0.3*x*x) + 0.05*noise[i]
	}
	return tensor.FromSlice(xs, n, 1), tensor.FromSlice(ys, n, 1)
}

// model is y = tanh(x W1 + b1) W2 + b2.
type model struct{ w1, b1, w2, b2 *tape.Variable }

func newModel(rng *tensor.RNG, hidden int) *model {
	scale := func(t *tensor.Tensor, s float64) *tensor.Tensor { return ops.Mul(t, ops.ScalarLike(t, s)) }
	return &model{
		w1: tape.NewVariable("w1", scale(tensor.RandNormal(rng, tensor.Float32, 1, hidden), 1.5)),
		b1: tape.NewVariable("b1", tensor.RandUniform(rng, tensor.Float32, -2, 2, hidden)),
		w2: tape.NewVariable("w2", scale(tensor.RandNormal(rng, tensor.Float32, hidden, 1), 1/math.Sqrt(float64(hidden)))),
		b2: tape.NewVariable("b2", tensor.Zeros(tensor.Float32, 1)),
	}
}

func (m *model) params() []*tape.Variable { return []*tape.Variable{m.w1, m.b1, m.w2, m.b2} }

func (m *model) forward(x *tensor.Tensor) *tensor.Tensor {
	h := ops.Tanh(ops.Add(ops.MatMul(x, m.w1.Value()), m.b1.Value()))
	return ops.Add(ops.MatMul(h, m.w2.Value()), m.b2.Value())
}

func run(cfg config, out *os.File) (result, error) {
	if cfg.steps <= 0 || cfg.hidden <= 0 || !(cfg.lr > 0) {
		return result{}, fmt.Errorf("steps, hidden and lr must be positive (got %d, %d, %v)", cfg.steps, cfg.hidden, cfg.lr)
	}
	if cfg.logEvery == 0 {
		cfg.logEvery = max(cfg.steps/10, 1)
	}
	rng := tensor.NewRNG(cfg.seed)
	x, y := dataset(rng, 256)
	m := newModel(rng, cfg.hidden)
	var res result
	var sw *nn.SummaryWriter
	var curve plot.Series // the loss every logEvery steps, for the plot
	if cfg.dir != "" {
		var err error
		if sw, err = nn.NewSummaryWriter(filepath.Join(cfg.dir, "logs")); err != nil {
			return res, err
		}
		defer sw.Close()
	}
	for step := 1; step <= cfg.steps; step++ {
		tp := tape.New()
		loss := ops.Mean(ops.Square(ops.Sub(m.forward(x), y)))
		vals := make([]*tensor.Tensor, 0, 4)
		for _, p := range m.params() {
			vals = append(vals, p.Value())
		}
		grads := tp.Gradient(loss, vals...)
		for i, p := range m.params() {
			p.AssignScaled(-cfg.lr, grads[i])
		}
		l := loss.Float()
		if math.IsNaN(l) {
			return res, fmt.Errorf("loss became NaN at step %d", step)
		}
		if step == 1 {
			res.first = l
		}
		res.final = l
		if sw != nil {
			if err := sw.Scalar("mse", int64(step), l); err != nil {
				return res, err
			}
		}
		if step == 1 || step%cfg.logEvery == 0 {
			curve.X, curve.Y = append(curve.X, float64(step)), append(curve.Y, l)
			if out != nil {
				fmt.Fprintf(out, "step %5d  mse %.5f\n", step, l)
			}
		}
	}
	if cfg.dir != "" {
		opts := plot.Options{Title: "regression", XLabel: "step", YLabel: "mse", LogY: true}
		if err := plot.Lines(filepath.Join(cfg.dir, "loss.png"), opts, curve); err != nil {
			return res, err
		}
	}
	return res, nil
}
