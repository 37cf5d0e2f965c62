package nn

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Loss is a loss function of a model's output and the labels, returning a
// scalar (SparseSoftmaxCrossEntropy, MeanSquaredError...).
type Loss func(pred, labels *tensor.Tensor) *tensor.Tensor

// Metric measures a model's output against the labels as the mean over
// the batch's examples (Accuracy).
type Metric func(pred, labels *tensor.Tensor) float64

// TrainStep is the usual supervised Step for batches (inputs, labels):
// loss(model(inputs), labels) differentiated with a one-shot tape that
// releases the activations as soon as the gradient is done, and opt
// applied to model's variables. A shape error inside the step comes back
// as its error, naming the op.
func TrainStep(model Module, loss Loss, opt Optimizer) Step {
	mustArgs("TrainStep", arg{"the model", model}, arg{"the loss", loss}, arg{"the optimizer", opt})
	return func(b data.Element) (l float64, n int, err error) {
		if len(b) < 2 {
			return 0, 0, fmt.Errorf("nn: TrainStep: a batch of (inputs, labels), got %d components", len(b))
		}
		var applied error
		err = tensor.Catch(func() {
			tp := tape.New(tape.Options{ReleaseIntermediates: true, HalfGradients: takesHalf(opt)})
			defer tp.Stop() // where the model panics, no tape records on
			value := loss(model.Forward(b[0]), b[1])
			vars := model.Variables()
			n = b[0].Dim(0)
			target, scale := value, 1.0
			if s, ok := opt.(lossScaler); ok {
				// The tape releases value with the other intermediates:
				// the loss is read back from the target.
				scale = s.Scale()
				target = ops.Mul(value, ops.ScalarLike(value, scale))
			}
			grads := tp.Gradient(target, Values(vars)...)
			applied = opt.Apply(vars, grads)
			releaseAll(grads)
			// The loss is read last: on a device that queues its work (a
			// GPU) the forward pass, the backward and the update are all
			// queued before the host waits for one value.
			l = target.Float() / scale
			target.Release() // the tape keeps its target; a GPU's scalar is device memory
		})
		if err == nil {
			err = applied
		}
		return l, n, err
	}
}

// EvalStepOf measures model on batches (inputs, labels) in inference mode
// (SetTraining false while it runs, true again after): "loss" and each
// named metric.
func EvalStepOf(model Module, loss Loss, metrics map[string]Metric) EvalStep {
	mustArgs("EvalStepOf", arg{"the model", model}, arg{"the loss", loss})
	for name, m := range metrics {
		mustArgs("EvalStepOf", arg{"metric " + name, m})
	}
	return func(b data.Element) (out map[string]float64, n int, err error) {
		if len(b) < 2 {
			return nil, 0, fmt.Errorf("nn: EvalStepOf: a batch of (inputs, labels), got %d components", len(b))
		}
		defer inference(model)()
		err = tensor.Catch(func() {
			pred := model.Forward(b[0])
			out = map[string]float64{"loss": loss(pred, b[1]).Float()}
			for name, m := range metrics {
				out[name] = m(pred, b[1])
			}
			n = b[0].Dim(0)
		})
		return out, n, err
	}
}

// TracedTrainStep is TrainStep with the forward and backward pass traced
// into a graph (control/trace) on the first batch of each shape and run
// from that graph afterwards; the optimizer's update runs eagerly after
// it. It computes what TrainStep computes (the tests compare them step by
// step). A last, shorter batch is traced once more.
//
// Tracing pays where a step is many small ops: per-op dispatch, shape
// checks and taping are done once, elementwise chains are fused, and loops
// (an RNN's While) become frames. A CNN step whose time is in a few large
// convolutions and GEMMs gains little (bench/README.md has the figures).
//
// BatchNorm's running statistics (in a Container: Sequential, or any
// module listing its Modules) move as in TrainStep: their new values are
// results of the graph, assigned after each call (or, recorded, copied by
// the recording). Dropout's masks (Dropout, MultiHeadAttention's and
// TransformerBlock's dropout) are drawn by the graph at every call from
// where their RNGs stand, an argument of the graph (draws.go): the masks
// TrainStep's layers would draw, the RNGs moved on as TrainStep moves
// them. A dropout layer or BatchNorm the step cannot reach (inside a
// module that is no Container) makes the step return an error.
func TracedTrainStep(model Module, loss Loss, opt Optimizer) Step {
	return tracedStep("TracedTrainStep", model, loss, opt, 1, nil, false, nil)
}

// RecordedTrainStep is TracedTrainStep whose graph, where the batch's
// device records its work (a GPU: CUDA graphs), is replayed from its
// second batch of a shape on as one recording (trace.Function.Record):
// one launch for the forward and backward pass instead of a few hundred,
// which is most of a small model's step on a GPU. The batch is copied
// into the recording's buffers. Where the optimizer's update is a
// device's (Adam, AdamW, RMSProp, SGD with momentum on a GPU), the
// recording holds it too (tape.StepRecord): the gradients never leave
// the recording, and before each replay one small kernel writes the
// step's constants (the rate, the bias corrections), so a step queues
// its batch's copies, that kernel, the replay and the loss's read; other
// optimizers update after the replay from the gradients copied out. It
// computes what TracedTrainStep computes, to the bit. Loops are traced
// unrolled first, so that an RNN layer's steps (fixed by the batch's
// shape) record too (there the gradient of a weight the steps share,
// their products summed, is one product of the steps' operands side by
// side, as the graph optimizes such sums: equal to rounding, not to the
// bit, where TracedTrainStep's loop sums step by step); a loop whose trip count the batch decides records
// as a loop the device runs, its gradient's stacks as deep as its
// MaxIterations, or else as the trace saw, checked after each replay (a
// step whose loop goes deeper updates nothing from the replay and runs
// as TracedTrainStep's does; the next records again with room for it);
// a graph that cannot be recorded runs as TracedTrainStep's does. While the
// second step of a batch shape runs, the device records all the work
// queued on it: nothing else (another goroutine's ops or copies, a data
// pipeline moving batches) may queue work on that device meanwhile. On
// the host it is TracedTrainStep.
func RecordedTrainStep(model Module, loss Loss, opt Optimizer) Step {
	return tracedStep("RecordedTrainStep", model, loss, opt, 1, nil, true, nil)
}

// tracedStep is TracedTrainStep (named name in errors) whose graph takes
// the gradients of the loss times scale and passes them through reduce,
// when not nil, before returning them; record sets the traced function's
// Record; apply, when not nil, takes opt.Apply's place after each call.
func tracedStep(name string, model Module, loss Loss, opt Optimizer, scale float64, reduce func(grads []*tensor.Tensor) []*tensor.Tensor, record bool,
	apply func(vars []*tape.Variable, grads []*tensor.Tensor) error) Step {
	mustArgs(name, arg{"the model", model}, arg{"the loss", loss}, arg{"the optimizer", opt})
	vars := model.Variables()
	scaler, dynamic := opt.(lossScaler)
	// The model's state (BatchNorm's running statistics) moves through the
	// graph's last results, which each call assigns (state.vars, the same
	// at every trace).
	state := &stateUpdates{}
	// Dropout's masks are drawn by the graph from a last argument, where
	// the model's RNGs stand at each call (draws.go).
	draws := newTraceDraws(model)
	half := takesHalf(opt) && reduce == nil // the gradients all-reduced stay float32
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New(tape.Options{HalfGradients: half})
		defer tp.Stop() // where the model panics, no tape records on
		state.vars, state.vals = nil, nil
		collectState(model, state)
		defer collectState(model, nil)
		if len(draws.rngs) > 0 {
			draws.begin(a[len(a)-1])
			attach(model, draws)
			defer attach(model, nil)
			defer draws.end(batchSignature(a[:2]))
		}
		value := loss(model.Forward(a[0]), a[1])
		target := value
		if scale != 1 {
			target = ops.Mul(value, tensor.Scalar(scale))
		}
		if dynamic { // the loss scale, an argument: it changes from step to step
			target = ops.Mul(target, ops.Cast(a[2], value.DType()))
		}
		grads := tp.Gradient(target, Values(vars)...)
		if reduce != nil {
			grads = reduce(grads)
		}
		return slices.Concat([]*tensor.Tensor{value}, grads, state.vals)
	})
	f.Record = record
	if record {
		f.Tail = recordedUpdate(vars, opt, state)
	}
	return func(b data.Element) (float64, int, error) {
		if len(b) < 2 {
			return 0, 0, fmt.Errorf("nn: %s: a batch of (inputs, labels), got %d components", name, len(b))
		}
		args := []*tensor.Tensor{b[0], b[1]}
		if dynamic {
			args = append(args, tensor.FullOn(b[0].Device(), tensor.Float32, scaler.Scale()))
		}
		if len(draws.rngs) > 0 {
			args = append(args, draws.startsOn(b[0].Device()))
			defer draws.advance(batchSignature(b[:2]))
		}
		var out []*tensor.Tensor
		var owned []bool
		var err error
		if caught := tensor.Catch(func() { out, owned, err = f.CallOwned(args...) }); caught != nil {
			return 0, 0, caught // an op's error inside the model, as TrainStep's
		}
		if err != nil {
			return 0, 0, err
		}
		if f.Tail == nil {
			if apply == nil {
				apply = opt.Apply
			}
			err = apply(vars, out[1:1+len(vars)])
			state.assign(out[1+len(vars):])
		} // else the call applied it, or its recording did
		l := out[0].Float() // read after the update is queued, as TrainStep reads it
		// The results this run made go back to the buffer cache for the
		// next step, as TrainStep's do; one may also be a graph constant
		// (the gradient of a variable the loss does not reach), kept.
		for i, t := range out {
			if owned[i] {
				t.Release()
			}
		}
		return l, b[0].Dim(0), err
	}
}

// stepRecordable is an optimizer whose update a device recording can hold
// with the step's graph (tape.StepRecord): Adam, RMSProp, SGD with
// momentum.
type stepRecordable interface {
	recordable() bool
	scaledStep
}

// recordedUpdate is the tail of a recorded step's graph (results: the
// loss, the gradients of vars, then the new values of state's variables)
// that updates vars by opt and assigns the state, held by the recording
// where opt's steps are a device's (a GPU's); nil where opt's
// update cannot be recorded, the step then applying it after the call.
// The steps' constants buffers (tape.NewStepRecord) are allocated at the
// first call, which runs unrecorded (it traces): before any recording.
func recordedUpdate(vars []*tape.Variable, opt Optimizer, state *stateUpdates) *graph.Tail {
	o, ok := opt.(stepRecordable)
	if !ok || !o.recordable() {
		return nil
	}
	for _, v := range vars {
		_, steps := v.Value().Device().(device.StepRecorder)
		_, records := v.Value().Device().(device.Capturer)
		if !steps || !records {
			return nil
		}
	}
	var consts []*tensor.Tensor
	return &graph.Tail{
		Keep: 1,
		Lend: true, // the loss, read at once: no copy out of the recording
		Run: func(out []*tensor.Tensor) error {
			if consts == nil {
				var err error
				if consts, err = stepConstants(vars); err != nil {
					return err
				}
			}
			err := opt.Apply(vars, out[1:1+len(vars)])
			state.assign(out[1+len(vars):])
			return err
		},
		Record: func(out []*tensor.Tensor) (func() error, error) {
			if consts == nil {
				return nil, fmt.Errorf("%w: nn: the optimizer's constants are not allocated yet", device.ErrCapture)
			}
			rec := tape.NewStepRecord(consts)
			through := func() (err error) {
				if caught := tensor.Catch(func() { err = o.applyThrough(rec, vars, out[1:1+len(vars)], unscaledGrads) }); caught != nil {
					return caught
				}
				return err
			}
			if err := rec.Capture(through); err != nil {
				return nil, err
			}
			// The state's copies, recorded once (not in through, which
			// runs again before every replay).
			if err := tensor.Catch(func() { state.assign(out[1+len(vars):]) }); err != nil {
				return nil, err
			}
			return func() error {
				for _, v := range state.vars { // the replay's copies assign them
					v.MarkChanged()
				}
				return rec.Refresh(through)
			}, nil
		},
	}
}

// stepConstants allocates the constants buffers of recorded optimizer
// steps over vars: on each of their devices, one for each dtype and each
// of Adam's two weight-decay groups.
func stepConstants(vars []*tape.Variable) ([]*tensor.Tensor, error) {
	var devs []device.Device
	for _, v := range vars {
		if d := v.Value().Device(); !slices.Contains(devs, d) {
			devs = append(devs, d)
		}
	}
	var all []*tensor.Tensor
	for _, d := range devs {
		consts, err := tape.StepConstants(d, 4)
		if err != nil {
			return nil, err
		}
		all = append(all, consts...)
	}
	return all, nil
}

// releaseAll hands back the buffers of tensors a step made and no one else
// holds (nil entries are skipped).
func releaseAll(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}
