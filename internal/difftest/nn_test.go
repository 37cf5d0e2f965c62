package difftest

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// layerCase is one layer's run for nn_torch.py: its kind and settings,
// the input, the loss weights (the loss is Σ out·w) and its variables by
// name (and, for an optimizer, the gradients of each step).
type layerCase struct {
	ID       int        `json:"id"`
	Kind     string     `json:"kind"`
	Settings []float64  `json:"settings"`
	X        *Array     `json:"x,omitempty"`
	W        *Array     `json:"w,omitempty"`
	Names    []string   `json:"names"`
	Weights  []*Array   `json:"weights"`
	Grads    [][]*Array `json:"grads,omitempty"` // by step, by variable
}

// layerResult is nn_torch.py's answer: the output and the gradients of
// the input and of each variable (a layer), or the variables after each
// step (an optimizer), or the running statistics (BatchNorm).
type layerResult struct {
	ID    int        `json:"id"`
	Out   *Array     `json:"out"`
	Grads []*Array   `json:"grads"`
	Steps [][]*Array `json:"steps"`
	State []*Array   `json:"state"`
}

// layerRun is a layer's run here: its output and the gradients of the
// input and of each variable.
type layerRun struct {
	out   T
	grads []T
}

// runLayer runs m on x under a tape (float64) and returns the output and
// the gradients of Σ out·w, and the case for nn_torch.py.
func runLayer(id int, kind string, settings []float64, m nn.Module, prefix string, x, w T) (layerRun, layerCase) {
	vars := m.Variables()
	tp := tape.New()
	tp.Watch(x)
	out := m.Forward(x)
	grads := tp.Gradient(ops.Sum(ops.Mul(out, w)), append([]T{x}, nn.Values(vars)...)...)
	c := layerCase{ID: id, Kind: kind, Settings: settings, X: encode(x), W: encode(w)}
	for _, v := range vars {
		c.Names = append(c.Names, strings.TrimPrefix(v.Name(), prefix))
		c.Weights = append(c.Weights, encode(v.Value()))
	}
	return layerRun{out, grads}, c
}

// jiggle moves every variable of m by uniform noise in [-0.3, 0.3], so
// that biases and gains away from their zeros and ones show each rule.
func jiggle(m nn.Module, rng *tensor.RNG) {
	for _, v := range m.Variables() {
		v.Assign(ops.Add(v.Value(), tensor.RandUniform(rng, tensor.Float64, -0.3, 0.3, v.Value().Shape()...)))
	}
}

// nn's recurrent layers, one way and Bidirectional, equal PyTorch's own
// torch.nn.LSTM and torch.nn.GRU (bidirectional=True for the second)
// given the same weights (nn_torch.py maps the gate orders:
// LSTM i, f, g, o in both; GRU z, r, n here, r, z, n there; the GRU's
// recurrent bias is PyTorch's b_hh, inside the reset gate's product), in
// the output sequence or last output and in the gradients of the input
// and of every weight: float64, through the Scan's gradient.
func TestRecurrentLayersAgainstTorch(t *testing.T) {
	needTorch(t)
	var runs []layerRun
	var cases []layerCase
	for id, c := range []struct {
		kind              string
		n, steps, in, hid int
		sequences         bool
	}{{"lstm", 2, 5, 3, 4, true}, {"lstm", 3, 3, 2, 5, false}, {"gru", 2, 5, 3, 4, true}, {"gru", 3, 4, 4, 3, false}} {
		rng := tensor.NewRNG(uint64(30 + id))
		var cell nn.Cell
		if c.kind == "lstm" {
			cell = nn.NewLSTMCell("c", rng, c.in, c.hid, tensor.Float64)
		} else {
			cell = nn.NewGRUCell("c", rng, c.in, c.hid, tensor.Float64)
		}
		m := &nn.RNN{Cell: cell, ReturnSequences: c.sequences}
		jiggle(m, rng)
		x := tensor.RandNormal(rng, tensor.Float64, c.n, c.steps, c.in)
		wShape := []int{c.n, c.hid}
		if c.sequences {
			wShape = []int{c.n, c.steps, c.hid}
		}
		w := tensor.RandUniform(rng, tensor.Float64, -1, 1, wShape...)
		r, lc := runLayer(id, c.kind, []float64{float64(c.hid), boolf(c.sequences)}, m, "c/", x, w)
		runs, cases = append(runs, r), append(cases, lc)
	}
	// Bidirectional: PyTorch's bidirectional layers, the cells' variables
	// fwd/... and bwd/....
	for _, c := range []struct {
		kind              string
		n, steps, in, hid int
		sequences         bool
	}{{"lstm", 2, 5, 3, 4, true}, {"lstm", 3, 4, 2, 3, false}, {"gru", 2, 4, 3, 4, true}, {"gru", 2, 5, 2, 3, false}} {
		id := len(cases)
		rng := tensor.NewRNG(uint64(40 + id))
		cell := func(name string) nn.Cell {
			if c.kind == "lstm" {
				return nn.NewLSTMCell(name, rng, c.in, c.hid, tensor.Float64)
			}
			return nn.NewGRUCell(name, rng, c.in, c.hid, tensor.Float64)
		}
		m := &nn.Bidirectional{FromStart: cell("fwd"), FromEnd: cell("bwd"), ReturnSequences: c.sequences}
		jiggle(m, rng)
		x := tensor.RandNormal(rng, tensor.Float64, c.n, c.steps, c.in)
		wShape := []int{c.n, 2 * c.hid}
		if c.sequences {
			wShape = []int{c.n, c.steps, 2 * c.hid}
		}
		w := tensor.RandUniform(rng, tensor.Float64, -1, 1, wShape...)
		r, lc := runLayer(id, c.kind, []float64{float64(c.hid), boolf(c.sequences), 1}, m, "", x, w)
		runs, cases = append(runs, r), append(cases, lc)
	}
	checkLayers(t, runs, cases)
}

// nn.BatchNorm in training equals PyTorch's F.batch_norm in training
// (the batch's mean and biased variance), in the output and in the
// gradients of the input, Gamma and Beta, over features last and over an
// Axis of 1 (NCHW); and its running statistics move as Keras's do
// (running = Momentum·running + (1-Momentum)·batch, the variance biased:
// computed in nn_torch.py from PyTorch's batch statistics, not from its
// running_var, which is Bessel-corrected).
func TestBatchNormAgainstTorch(t *testing.T) {
	needTorch(t)
	var runs []layerRun
	var cases []layerCase
	var states [][]T
	for id, c := range []struct {
		shape []int
		axis  int
	}{{[]int{6, 4}, -1}, {[]int{2, 3, 3, 5}, -1}, {[]int{2, 4, 3, 3}, 1}} {
		rng := tensor.NewRNG(uint64(50 + id))
		ch := c.shape[len(c.shape)-1]
		if c.axis == 1 {
			ch = c.shape[1]
		}
		b := nn.NewBatchNorm("bn", ch, tensor.Float64)
		b.Axis = c.axis
		b.Momentum = 0.9
		jiggle(b, rng)
		for _, v := range b.State() {
			v.Assign(ops.Add(v.Value(), tensor.RandUniform(rng, tensor.Float64, 0, 0.5, ch)))
		}
		before := []*Array{encode(b.RunningMean.Value()), encode(b.RunningVar.Value())}
		x := ops.Add(ops.Mul(tensor.RandNormal(rng, tensor.Float64, c.shape...), tensor.Scalar(2.0)), tensor.Scalar(0.5))
		w := tensor.RandUniform(rng, tensor.Float64, -1, 1, c.shape...)
		r, lc := runLayer(id, "batchnorm", []float64{float64(c.axis), b.Momentum, b.Epsilon}, b, "bn/", x, w)
		lc.Names = append(lc.Names, "moving_mean", "moving_variance")
		lc.Weights = append(lc.Weights, before...)
		runs, cases = append(runs, r), append(cases, lc)
		states = append(states, []T{b.RunningMean.Value(), b.RunningVar.Value()})
	}
	res := checkLayers(t, runs, cases)
	for id, s := range states {
		for i, v := range s {
			if d := compare(v, res[id].State[i]); d != "" {
				t.Errorf("case %d (batchnorm) %s after the step: %s", id, cases[id].Names[2+i], d)
			}
		}
	}
}

// checkLayers runs cases through nn_torch.py and compares each run's
// output and gradients with PyTorch's; it returns PyTorch's results.
func checkLayers(t *testing.T, runs []layerRun, cases []layerCase) map[int]*layerResult {
	t.Helper()
	res := runCases(t, "nn_torch.py", cases, func(r *layerResult) int { return r.ID })
	for id, r := range runs {
		want := res[id]
		if want == nil {
			t.Fatalf("case %d (%s): no result from PyTorch", id, cases[id].Kind)
		}
		if d := compare(r.out, want.Out); d != "" {
			t.Errorf("case %d (%s) output: %s", id, cases[id].Kind, d)
		}
		for i, g := range r.grads {
			what := "x"
			if i > 0 {
				what = cases[id].Names[i-1]
			}
			if d := compare(g, want.Grads[i]); d != "" {
				t.Errorf("case %d (%s) gradient of %s: %s", id, cases[id].Kind, what, d)
			}
		}
	}
	t.Logf("%d layers or losses compared with PyTorch's", len(runs))
	return res
}

// nn's optimizers take the steps torch.optim's do from the same
// variables and gradients, float64, five steps of a cosine schedule:
// SGD (plain, heavy ball, Nesterov), Adam, AdamW with its decay on
// matrices only (PyTorch's two parameter groups) and RMSProp with and
// without momentum; and behind a ClippedOptimizer (the gradients
// scaled by min(1, bound/norm) before the step, TensorFlow's
// clip_by_global_norm: PyTorch's clip_grad_norm_ divides by the norm
// plus 1e-6), itself behind a LossScaleOptimizer or not (GradScaler's
// unscale_ before the clip). Each step's variables are compared.
func TestOptimizersAgainstTorch(t *testing.T) {
	needTorch(t)
	const steps = 5
	lr := nn.Cosine(0.1, 8, 0.01)
	type opt struct {
		kind     string
		settings []float64
		make     func() nn.Optimizer
	}
	opts := []opt{
		{"sgd", []float64{0, 0}, func() nn.Optimizer { return &nn.SGD{LR: lr} }},
		{"sgd", []float64{0.9, 0}, func() nn.Optimizer { return &nn.SGD{LR: lr, Momentum: 0.9} }},
		{"sgd", []float64{0.8, 1}, func() nn.Optimizer { return &nn.SGD{LR: lr, Momentum: 0.8, Nesterov: true} }},
		{"adam", []float64{0.9, 0.999, 1e-7, 0}, func() nn.Optimizer { return nn.NewAdam(lr) }},
		{"adam", []float64{0.8, 0.99, 1e-6, 0.1}, func() nn.Optimizer {
			o := nn.NewAdamW(lr, 0.1)
			o.Beta1, o.Beta2, o.Eps, o.Decays = 0.8, 0.99, 1e-6, nn.DecayMatrices
			return o
		}},
		{"rmsprop", []float64{0.9, 0, 1e-7}, func() nn.Optimizer { return nn.NewRMSProp(lr) }},
		{"rmsprop", []float64{0.8, 0.5, 1e-6}, func() nn.Optimizer {
			o := nn.NewRMSProp(lr)
			o.Rho, o.Momentum, o.Eps = 0.8, 0.5, 1e-6
			return o
		}},
		// Clipped before the step (the first settings the bound and a
		// loss scale, the LossScaleOptimizer's first, whose GradScaler
		// unscales first: the gradients given are scaled), the bound met
		// and not.
		{"adam+clip", []float64{1.5, 1, 0.8, 0.99, 1e-6, 0.1}, func() nn.Optimizer {
			o := nn.NewAdamW(lr, 0.1)
			o.Beta1, o.Beta2, o.Eps, o.Decays = 0.8, 0.99, 1e-6, nn.DecayMatrices
			return nn.NewClippedOptimizer(o, 1.5)
		}},
		{"sgd+clip", []float64{10, 1, 0.9, 1}, func() nn.Optimizer {
			return nn.NewClippedOptimizer(&nn.SGD{LR: lr, Momentum: 0.9, Nesterov: true}, 10)
		}},
		{"adam+clip", []float64{0.5, 1 << 15, 0.9, 0.999, 1e-7, 0}, func() nn.Optimizer {
			return nn.NewLossScaleOptimizer(nn.NewClippedOptimizer(nn.NewAdam(lr), 0.5))
		}},
		{"rmsprop+clip", []float64{0.7, 1 << 15, 0.8, 0.5, 1e-6}, func() nn.Optimizer {
			o := nn.NewRMSProp(lr)
			o.Rho, o.Momentum, o.Eps = 0.8, 0.5, 1e-6
			return nn.NewLossScaleOptimizer(nn.NewClippedOptimizer(o, 0.7))
		}},
	}
	var cases []layerCase
	var got [][][]T // by case, step, variable
	for id, o := range opts {
		rng := tensor.NewRNG(uint64(70 + id))
		vars := []*tape.Variable{
			tape.NewVariable("kernel", tensor.RandNormal(rng, tensor.Float64, 3, 4)),
			tape.NewVariable("bias", tensor.RandNormal(rng, tensor.Float64, 4)),
		}
		c := layerCase{ID: id, Kind: o.kind, Settings: append(append([]float64{}, o.settings...), lrs(lr, steps)...), Names: []string{"kernel", "bias"}}
		for _, v := range vars {
			c.Weights = append(c.Weights, encode(v.Value()))
		}
		optimizer := o.make()
		var after [][]T
		scale := 1.0
		if strings.HasSuffix(o.kind, "+clip") {
			scale = o.settings[1]
		}
		for range steps {
			grads := []T{tensor.RandNormal(rng, tensor.Float64, 3, 4), tensor.RandNormal(rng, tensor.Float64, 4)}
			for i, g := range grads { // a loss-scaled backward's
				grads[i] = ops.Mul(g, tensor.Scalar(scale))
			}
			c.Grads = append(c.Grads, []*Array{encode(grads[0]), encode(grads[1])})
			if err := optimizer.Apply(vars, grads); err != nil {
				t.Fatal(err)
			}
			after = append(after, []T{snapshot(vars[0].Value()), snapshot(vars[1].Value())})
		}
		cases, got = append(cases, c), append(got, after)
	}
	res := runCases(t, "nn_torch.py", cases, func(r *layerResult) int { return r.ID })
	for id, steps := range got {
		want := res[id]
		if want == nil || len(want.Steps) != len(steps) {
			t.Fatalf("case %d (%s): PyTorch took no or other steps", id, cases[id].Kind)
		}
		for k, vs := range steps {
			for i, v := range vs {
				if d := compare(v, want.Steps[k][i]); d != "" {
					t.Errorf("case %d (%s %v), step %d, %s: %s", id, cases[id].Kind, opts[id].settings, k, cases[id].Names[i], d)
				}
			}
		}
	}
	t.Logf("%d optimizers compared with torch.optim over %d steps", len(got), steps)
}

// lrs lists the rates schedule s gives for the first n steps.
func lrs(s nn.Schedule, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = s(i)
	}
	return out
}

// snapshot is a copy of the float64 tensor x's values now.
func snapshot(x T) T { return tensor.FromSlice(tensor.ToSlice[float64](x), x.Shape()...) }

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// nn's losses equal PyTorch's (mean reduction) in value and in the
// gradients of both arguments where PyTorch has them: MSELoss,
// cross_entropy against class indices (rows, and token logits [N, T, C])
// and against label distributions (over the last dimension of rank-3
// logits: PyTorch's class dimension moved), with label smoothing and
// ignored labels (ignore_index: -100, a pad class), and
// binary_cross_entropy_with_logits, logits far from 0 too.
func TestLossesAgainstTorch(t *testing.T) {
	needTorch(t)
	rng := tensor.NewRNG(90)
	type loss struct {
		kind       string
		pred, labs T
		fn         func(pred, labels T) T
		settings   []float64 // the smoothing, then the label sparse_ce ignores (if any)
	}
	// Token labels [2, 7] with padding (-100 and 0) among them.
	tokens := tensor.FromSlice([]int64{3, -100, 0, 4, 1, 0, 2, -100, -100, 4, 0, 1, 3, 2}, 2, 7)
	padded := ops.Maximum(tokens, ops.ZerosLike(tokens)) // the pads class 0
	sparse := func(smoothing float64, ignore ...int) func(pred, labels T) T {
		return nn.SparseSoftmaxCrossEntropyWith(nn.CrossEntropyOpts{LabelSmoothing: smoothing, Ignore: ignore})
	}
	probs := ops.Softmax(tensor.RandNormal(rng, tensor.Float64, 2, 3, 5), -1)
	losses := []loss{
		{"mse", tensor.RandNormal(rng, tensor.Float64, 4, 3), tensor.RandNormal(rng, tensor.Float64, 4, 3), nn.MeanSquaredError, nil},
		{"sparse_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 6, 4), tensor.Scalar(3.0)), tensor.FromSlice([]int32{0, 3, 1, 1, 2, 3}, 6), nn.SparseSoftmaxCrossEntropy, nil},
		{"softmax_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 2, 3, 5), tensor.Scalar(2.0)), probs, nn.SoftmaxCrossEntropy, nil},
		{"bce_logits", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 3, 4), tensor.Scalar(20.0)), tensor.RandUniform(rng, tensor.Float64, 0, 1, 3, 4), nn.BinaryCrossEntropyWithLogits, nil},
		// Token logits [N, T, C] (PyTorch's class dimension moved), label
		// smoothing, ignored labels (a pad class and -100), both.
		{"sparse_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 2, 7, 5), tensor.Scalar(3.0)), padded, nn.SparseSoftmaxCrossEntropy, nil},
		{"sparse_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 6, 4), tensor.Scalar(3.0)), tensor.FromSlice([]int32{0, 3, 1, 1, 2, 3}, 6), sparse(0.1), []float64{0.1}},
		{"sparse_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 2, 7, 5), tensor.Scalar(3.0)), tokens, sparse(0, -100), []float64{0, -100}},
		{"sparse_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 2, 7, 5), tensor.Scalar(3.0)), padded, sparse(0.2, 0), []float64{0.2, 0}},
		{"sparse_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 2, 7, 5), tensor.Scalar(3.0)), tokens, sparse(0.25, -100), []float64{0.25, -100}},
		{"softmax_ce", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 2, 3, 5), tensor.Scalar(2.0)), probs, nn.SoftmaxCrossEntropyWith(nn.CrossEntropyOpts{LabelSmoothing: 0.15}), []float64{0.15}},
	}
	var cases []layerCase
	var runs []layerRun
	for id, l := range losses {
		tp := tape.New()
		watched := []T{l.pred}
		if l.labs.DType().IsFloat() {
			watched = append(watched, l.labs)
		}
		tp.Watch(watched...)
		out := l.fn(l.pred, l.labs)
		runs = append(runs, layerRun{out, tp.Gradient(out, watched...)})
		cases = append(cases, layerCase{ID: id, Kind: l.kind, Settings: l.settings, X: encode(l.pred), W: encode(l.labs), Names: []string{"labels"}})
	}
	checkLayers(t, runs, cases) // "x" the predictions or logits
}
