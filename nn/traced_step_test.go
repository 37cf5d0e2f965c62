package nn_test

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func smallCNN(seed uint64) *nn.Sequential {
	rng := tensor.NewRNG(seed)
	conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}
	return nn.NewSequential(
		nn.NewConv2D("conv", rng, 3, 3, 1, 4, conv),
		nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}}},
		nn.Flatten{},
		nn.NewDense("logits", rng, 4*4*4, 3, nn.DenseOpts{}))
}

// The traced step (and the recorded one, which on the host is the traced
// one) follows the eager one step by step: same losses, same variables
// after, including a short last batch (a second trace).
func TestTracedTrainStepFollowsTrainStep(t *testing.T) {
	for name, traced := range map[string]func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{
		"TracedTrainStep": nn.TracedTrainStep, "RecordedTrainStep": nn.RecordedTrainStep,
	} {
		eagerModel, tracedModel := smallCNN(1), smallCNN(1)
		eagerOpt, tracedOpt := nn.NewAdam(nn.Constant(0.01)), nn.NewAdam(nn.Constant(0.01))
		eagerStep := nn.TrainStep(eagerModel, nn.SparseSoftmaxCrossEntropy, eagerOpt)
		tracedStep := traced(tracedModel, nn.SparseSoftmaxCrossEntropy, tracedOpt)
		rng := tensor.NewRNG(2)
		for i, n := range []int{6, 6, 6, 4, 6} {
			b := data.Element{tensor.RandNormal(rng, tensor.Float32, n, 8, 8, 1), tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2}[:n])}
			le, ne, err := eagerStep(b)
			if err != nil {
				t.Fatal(err)
			}
			lt, nt, err := tracedStep(b)
			if err != nil {
				t.Fatal(err)
			}
			if ne != nt || abs(le-lt) > 1e-5*max(1, abs(le)) {
				t.Errorf("%s, step %d: loss %v (%d examples), eager %v (%d)", name, i, lt, nt, le, ne)
			}
		}
		ev, tv := eagerModel.Variables(), tracedModel.Variables()
		for i := range ev {
			d := ops.Amax(ops.Abs(ops.Sub(ev[i].Value(), tv[i].Value()))).Float()
			if d > 1e-5 {
				t.Errorf("%s: %s differs by %g after five steps", name, ev[i].Name(), d)
			}
		}
	}
}

func abs(x float64) float64 { return max(x, -x) }

// A traced step draws its dropout masks in the graph at every call, where
// TrainStep's layers draw them from the same RNGs: two Dropout layers
// sharing an RNG and a third with its own follow the eager step in losses
// and variables over batches of two shapes, the RNGs left where the eager
// step leaves them; in inference nothing is drawn.
func TestTracedTrainStepDrawsDropout(t *testing.T) {
	model := func() (nn.Module, []*tensor.RNG) {
		rng, shared, own := tensor.NewRNG(1), tensor.NewRNG(2), tensor.NewRNG(3)
		return nn.NewSequential(
			nn.NewDense("d1", rng, 5, 8, nn.DenseOpts{Activation: ops.Relu}), nn.NewDropout(0.4, shared),
			nn.NewDense("d2", rng, 8, 8, nn.DenseOpts{Activation: ops.Tanh}), nn.NewDropout(0.2, shared),
			nn.NewDropout(0.3, own), nn.NewDense("out", rng, 8, 3, nn.DenseOpts{})), []*tensor.RNG{shared, own}
	}
	for name, traced := range map[string]func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{
		"TracedTrainStep": nn.TracedTrainStep, "RecordedTrainStep": nn.RecordedTrainStep,
	} {
		eagerModel, eagerRNGs := model()
		tracedModel, tracedRNGs := model()
		eagerStep := nn.TrainStep(eagerModel, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
		tracedStep := traced(tracedModel, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
		rng := tensor.NewRNG(4)
		x := tensor.RandNormal(rng, tensor.Float32, 6, 5)
		for i, n := range []int{6, 6, 4, 6, 6} {
			b := data.Element{ops.Slice(x, []int{0, 0}, []int{n, 5}, []int{1, 1}), tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2}[:n])}
			le, _, err := eagerStep(b)
			if err != nil {
				t.Fatal(err)
			}
			lt, _, err := tracedStep(b)
			if err != nil {
				t.Fatal(err)
			}
			if abs(le-lt) > 1e-5*max(1, abs(le)) {
				t.Errorf("%s, step %d: loss %v, eager %v", name, i, lt, le)
			}
		}
		ev, tv := eagerModel.Variables(), tracedModel.Variables()
		for i := range ev {
			if d := ops.Amax(ops.Abs(ops.Sub(ev[i].Value(), tv[i].Value()))).Float(); d > 1e-5 {
				t.Errorf("%s: %s differs by %g after five steps", name, ev[i].Name(), d)
			}
		}
		for i := range eagerRNGs {
			if e, g := eagerRNGs[i].Reserve(0), tracedRNGs[i].Reserve(0); e != g {
				t.Errorf("%s: RNG %d stands at block %d, the eager step's at %d", name, i, g, e)
			}
		}
		unreached := nn.NewSequential(nn.NewDense("d", rng, 5, 3, nn.DenseOpts{}), hidden{nn.NewDropout(0.5, rng)})
		if _, _, err := traced(unreached, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))(data.Element{x, tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2})}); err == nil || !strings.Contains(err.Error(), "frozen") {
			t.Errorf("%s over a Dropout it cannot reach: %v", name, err)
		}
		nn.SetTraining(tracedModel, false)
		if _, _, err := traced(tracedModel, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))(data.Element{x, tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2})}); err != nil {
			t.Errorf("%s in inference: %v", name, err)
		}
	}
}

// toNCHW transposes NHWC activations to NCHW.
type toNCHW struct{}

func (toNCHW) Forward(x *tensor.Tensor) *tensor.Tensor { return ops.Transpose(x, 0, 3, 1, 2) }
func (toNCHW) Variables() []*tape.Variable             { return nil }

// hidden holds a layer that no Container walk finds.
type hidden struct{ inner nn.Module }

func (h hidden) Forward(x *tensor.Tensor) *tensor.Tensor { return h.inner.Forward(x) }
func (h hidden) Variables() []*tape.Variable             { return h.inner.Variables() }

// BatchNorm's running statistics move in a traced step (and a recorded
// one, which on the host is the traced one) as in the eager step: they
// are results of the graph, assigned after each call. The losses, the
// variables and the running statistics follow TrainStep's over batches
// of two shapes (NHWC, and an Axis of 1 after a transpose to NCHW). A
// training BatchNorm the step cannot reach (in a module that is no
// Container) fails the step, not frozen.
func TestTracedTrainStepMovesBatchNormState(t *testing.T) {
	model := func(axis int) (*nn.Sequential, *nn.BatchNorm) {
		rng := tensor.NewRNG(4)
		bn := nn.NewBatchNorm("bn", 4, tensor.Float32)
		bn.Axis, bn.Momentum = axis, 0.8
		conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}}
		layers := []nn.Module{nn.NewConv2D("conv", rng, 3, 3, 1, 4, conv)}
		if axis == 1 {
			layers = append(layers, toNCHW{})
		}
		layers = append(layers, bn, nn.Flatten{}, nn.NewDense("logits", rng, 4*8*8, 3, nn.DenseOpts{}))
		return nn.NewSequential(layers...), bn
	}
	for name, traced := range map[string]func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{
		"TracedTrainStep": nn.TracedTrainStep, "RecordedTrainStep": nn.RecordedTrainStep,
	} {
		for _, axis := range []int{-1, 1} {
			eagerModel, eagerBN := model(axis)
			tracedModel, tracedBN := model(axis)
			eagerStep := nn.TrainStep(eagerModel, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
			tracedStep := traced(tracedModel, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
			rng := tensor.NewRNG(5)
			for i, n := range []int{6, 6, 6, 4, 6} {
				b := data.Element{tensor.RandNormal(rng, tensor.Float32, n, 8, 8, 1), tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2}[:n])}
				le, _, err := eagerStep(b)
				if err != nil {
					t.Fatal(err)
				}
				lt, _, err := tracedStep(b)
				if err != nil {
					t.Fatalf("%s, axis %d, step %d: %v", name, axis, i, err)
				}
				if abs(le-lt) > 1e-5*max(1, abs(le)) {
					t.Errorf("%s, axis %d, step %d: loss %v, eager %v", name, axis, i, lt, le)
				}
			}
			ev, tv := nn.AllVariables(eagerModel), nn.AllVariables(tracedModel)
			ev = append(ev, eagerBN.State()...)
			tv = append(tv, tracedBN.State()...)
			for i := range ev {
				if d := ops.Amax(ops.Abs(ops.Sub(ev[i].Value(), tv[i].Value()))).Float(); d > 1e-5 {
					t.Errorf("%s, axis %d: %s differs by %g after five steps", name, axis, ev[i].Name(), d)
				}
			}
			if d := ops.Amax(ops.Abs(ops.Sub(tracedBN.RunningMean.Value(), tensor.Zeros(tensor.Float32, 4)))).Float(); d == 0 {
				t.Errorf("%s, axis %d: the running mean never moved", name, axis)
			}
		}
	}
	rng := tensor.NewRNG(6)
	b := data.Element{tensor.RandNormal(rng, tensor.Float32, 2, 3), tensor.RandNormal(rng, tensor.Float32, 2, 3)}
	unreached := nn.NewSequential(nn.NewDense("d", rng, 3, 3, nn.DenseOpts{}), hidden{nn.NewBatchNorm("bn", 3, tensor.Float32)})
	if _, _, err := nn.TracedTrainStep(unreached, nn.MeanSquaredError, &nn.SGD{LR: nn.Constant(0.1)})(b); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("a BatchNorm the step cannot reach: %v", err)
	}
}

// A trace of one's own that runs a training-mode Dropout or BatchNorm
// panics, naming the layer, rather than freezing a mask or running
// statistics into its graph; the values a finished trace handed back
// are no trace's, and go through both layers eagerly.
func TestTrainingLayersRefuseTheirOwnTrace(t *testing.T) {
	rng := tensor.NewRNG(7)
	x := tensor.RandNormal(rng, tensor.Float32, 4, 3)
	for _, layer := range []nn.Module{nn.NewDropout(0.5, rng), nn.NewBatchNorm("bn", 3, tensor.Float32)} {
		f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{layer.Forward(a[0])} })
		err := tensor.Catch(func() {
			if _, err := f.Call(x); err != nil {
				panic(err)
			}
		})
		if err == nil || !strings.Contains(err.Error(), "frozen") {
			t.Errorf("%T in a trace: %v", layer, err)
		}
	}
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Tanh(a[0])} })
	for call := range 2 {
		out, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		for _, layer := range []nn.Module{nn.NewDropout(0.5, rng), nn.NewBatchNorm("bn", 3, tensor.Float32)} {
			if err := tensor.Catch(func() { layer.Forward(out[0]) }); err != nil {
				t.Errorf("call %d: %T on a traced call's result: %v", call, layer, err)
			}
		}
	}
}
