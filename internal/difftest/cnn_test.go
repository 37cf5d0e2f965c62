package difftest

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// cnnCase is a small CNN's training as cnn_torch.py replays it.
type cnnCase struct {
	ID         int      `json:"id"`
	Format     string   `json:"format"`
	Norm       bool     `json:"norm"`
	Images     *Array   `json:"images"`
	Labels     []int    `json:"labels"`
	Names      []string `json:"names"`
	Weights    []*Array `json:"weights"`
	StateNames []string `json:"state_names"`
	State      []*Array `json:"state"`
	BNMomentum float64  `json:"bn_momentum"`
	BNEps      float64  `json:"bn_eps"`
	LR         float64  `json:"lr"`
	Momentum   float64  `json:"momentum"`
	Steps      int      `json:"steps"`
}

// cnnResult is cnn_torch.py's answer: the loss and gradients at the
// case's variables, each step's loss, the variables and running
// statistics after the steps.
type cnnResult struct {
	ID      int       `json:"id"`
	Loss    float64   `json:"loss"`
	Grads   []*Array  `json:"grads"`
	Losses  []float64 `json:"losses"`
	Weights []*Array  `json:"weights"`
	State   []*Array  `json:"state"`
}

// cnnSteps is how many SGD steps each case takes.
const cnnSteps = 4

// newCNN is the Fashion-MNIST CNN cut down (conv 3x3 1->8 [BatchNorm]
// relu, max pool 2, conv 3x3 8->16 [BatchNorm] relu, max pool 2, dense
// 784->32 relu, dense 32->10) in float32, its variables drawn from seed
// and moved off their initial zeros and ones.
func newCNN(seed uint64, format ops.DataFormat, norm bool) *nn.Sequential {
	rng := tensor.NewRNG(seed)
	var layers []nn.Module
	in := 1
	for i, out := range []int{8, 16} {
		name := fmt.Sprint("conv", i+1)
		conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: format}}
		if !norm {
			conv.Activation = ops.Relu
		}
		layers = append(layers, nn.NewConv2D(name, rng, 3, 3, in, out, conv))
		if norm {
			b := nn.NewBatchNorm(fmt.Sprint("bn", i+1), out, tensor.Float32)
			if format == ops.NCHW {
				b.Axis = 1
			}
			layers = append(layers, b, nn.Activation(ops.Relu))
		}
		layers = append(layers, nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Format: format}})
		in = out
	}
	layers = append(layers, nn.Flatten{},
		nn.NewDense("dense", rng, 7*7*16, 32, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("logits", rng, 32, 10, nn.DenseOpts{}))
	m := nn.NewSequential(layers...)
	for _, v := range nn.AllVariables(m) {
		v.Assign(ops.Add(v.Value(), tensor.RandUniform(rng, tensor.Float32, -0.1, 0.1, v.Value().Shape()...)))
	}
	for _, v := range m.State() {
		v.Assign(ops.Abs(v.Value())) // running variances stay positive
	}
	return m
}

// cnnRun is the Go side of a case: the loss and gradients at the initial
// variables, each step's loss, then the variables and state.
type cnnRun struct {
	loss    float64
	grads   []T
	losses  []float64
	weights []T
	state   []T
}

// trainCNN runs a case's model on dev: the gradient at the initial
// variables (a tape), then cnnSteps steps of step (made by newStep: nn's
// TrainStep, TracedTrainStep...) on the same batch.
func trainCNN(t *testing.T, m *nn.Sequential, newStep func(nn.Module, nn.Loss, nn.Optimizer) nn.Step, images, labels T) cnnRun {
	t.Helper()
	var r cnnRun
	err := tensor.Catch(func() {
		state := copies(m.State())
		tp := tape.New()
		loss := nn.SparseSoftmaxCrossEntropy(m.Forward(images), labels)
		r.grads = tp.Gradient(loss, nn.Values(m.Variables())...)
		r.loss = loss.Float()
		for i, v := range m.State() { // the forward moved them: back
			v.Assign(state[i])
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	opt := &nn.SGD{LR: nn.Constant(0.05), Momentum: 0.9}
	step := newStep(m, nn.SparseSoftmaxCrossEntropy, opt)
	for range cnnSteps {
		l, _, err := step(data.Element{images, labels})
		if err != nil {
			t.Fatal(err)
		}
		r.losses = append(r.losses, l)
	}
	r.weights, r.state = copies(m.Variables()), copies(m.State())
	return r
}

// copies copies the variables' values (Value's elements change on
// assignment; Identity's do not).
func copies(vars []*tape.Variable) []T {
	out := make([]T, len(vars))
	for i, v := range vars {
		out[i] = ops.Identity(v.Value())
	}
	return out
}

// cnnCompare compares got with want to rel of want's largest magnitude
// (or of 0.1 below it: a bias before BatchNorm, whose gradient is 0 but
// for rounding).
func cnnCompare(got T, want *Array, rel float64) string {
	return withinLargest(got, want, nil, rel, 0.1)
}

// A small CNN (two convolutions with max pooling, optionally BatchNorm,
// two dense layers) trains in float32 as PyTorch trains it in float64
// from the same variables and batch (cnn_torch.py): the loss and every
// variable's gradient at the start, the loss of each of four steps of SGD
// with momentum, the variables and BatchNorm's running statistics after
// them. NHWC and NCHW (PyTorch's conv in NCHW, its features permuted
// before the flatten as eagerflow flattens NHWC), with nn.TrainStep and
// nn.TracedTrainStep on the CPU and nn.TrainStep on the (emulated) GPU:
// the float32 convolutions, pooling, BatchNorm and dense kernels at a
// real layer's size, through nn's layers, losses and optimizer.
func TestCNNTrainingAgainstTorch(t *testing.T) {
	needTorch(t)
	gpu := testGPU(t)
	const batch = 16
	type run struct {
		name string
		r    cnnRun
		c    int // the case
	}
	var cases []cnnCase
	var runs []run
	for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		for _, norm := range []bool{false, true} {
			id := len(cases)
			rng := tensor.NewRNG(uint64(900 + id))
			shape := []int{batch, 28, 28, 1}
			if format == ops.NCHW {
				shape = []int{batch, 1, 28, 28}
			}
			images := tensor.RandUniform(rng, tensor.Float32, 0, 1, shape...)
			lab := tensor.ToSlice[int32](ops.Cast(ops.Floor(tensor.RandUniform(rng, tensor.Float32, 0, 10, batch)), tensor.Int32))
			labels := tensor.FromSlice(lab, batch)
			m := newCNN(uint64(70+id), format, norm)
			c := cnnCase{ID: id, Format: "NHWC", Norm: norm, Images: encode(images), LR: 0.05, Momentum: 0.9, Steps: cnnSteps}
			if format == ops.NCHW {
				c.Format = "NCHW"
			}
			for _, l := range lab {
				c.Labels = append(c.Labels, int(l))
			}
			for _, v := range m.Variables() {
				c.Names, c.Weights = append(c.Names, v.Name()), append(c.Weights, encode(v.Value()))
			}
			for _, v := range m.State() {
				c.StateNames, c.State = append(c.StateNames, v.Name()), append(c.State, encode(v.Value()))
			}
			if norm {
				b := m.Layers[1].(*nn.BatchNorm)
				c.BNMomentum, c.BNEps = b.Momentum, b.Epsilon
			}
			cases = append(cases, c)
			start := copies(nn.AllVariables(m))
			restore := func() {
				for i, v := range nn.AllVariables(m) {
					v.Assign(start[i])
				}
			}
			runs = append(runs, run{"TrainStep", trainCNN(t, m, nn.TrainStep, images, labels), id})
			restore()
			runs = append(runs, run{"TracedTrainStep", trainCNN(t, m, nn.TracedTrainStep, images, labels), id})
			restore()
			func() {
				prev := device.SetDefault(gpu)
				defer prev()
				m := newCNN(uint64(70+id), format, norm) // the same numbers, drawn there
				runs = append(runs, run{"TrainStep on " + gpu.Name(), trainCNN(t, m, nn.TrainStep, must(images.To(gpu)), must(labels.To(gpu))), id})
			}()
		}
	}
	res := runCases(t, "cnn_torch.py", cases, func(r *cnnResult) int { return r.ID })
	const rel = 1e-4 // of each tensor's largest magnitude: the largest seen is 1e-5
	for _, r := range runs {
		c, want := cases[r.c], res[r.c]
		if want == nil {
			t.Fatalf("case %d: no result from PyTorch", r.c)
		}
		what := fmt.Sprintf("%s, norm %v, %s", c.Format, c.Norm, r.name)
		if math.Abs(r.r.loss-want.Loss) > rel*math.Abs(want.Loss) {
			t.Errorf("%s: loss %.9g, want %.9g", what, r.r.loss, want.Loss)
		}
		for i, g := range r.r.grads {
			if d := cnnCompare(g, want.Grads[i], rel); d != "" {
				t.Errorf("%s: gradient of %s: %s", what, c.Names[i], d)
			}
		}
		for i, l := range r.r.losses {
			if math.Abs(l-want.Losses[i]) > rel*math.Abs(want.Losses[i]) {
				t.Errorf("%s: loss of step %d %.9g, want %.9g", what, i+1, l, want.Losses[i])
			}
		}
		for i, w := range r.r.weights {
			if d := cnnCompare(w, want.Weights[i], rel); d != "" {
				t.Errorf("%s: %s after %d steps: %s", what, c.Names[i], cnnSteps, d)
			}
		}
		for i, s := range r.r.state {
			if d := cnnCompare(s, want.State[i], rel); d != "" {
				t.Errorf("%s: %s after %d steps: %s", what, c.StateNames[i], cnnSteps, d)
			}
		}
	}
	t.Logf("%d runs of %d CNN cases compared with PyTorch's float64", len(runs), len(cases))
}

func must(x T, err error) T {
	if err != nil {
		panic(err)
	}
	return x
}
