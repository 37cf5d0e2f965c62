package nn

import (
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// BatchNorm normalizes over every dimension but the feature one (the last,
// or Axis), with learned scale Gamma and offset Beta. In training it uses
// the batch's statistics and moves the running ones towards them
// (running = Momentum*running + (1-Momentum)*batch); in inference it uses
// the running statistics. x: [..., C] -> same shape.
//
// Inside a trace (TracedTrainStep, RecordedTrainStep) the new running
// statistics are results of the step's graph, which the step assigns
// after each call (stateUpdates); a trace of training-mode BatchNorm made
// otherwise would freeze them, and panics with a *tensor.Error saying so.
type BatchNorm struct {
	Gamma, Beta             *tape.Variable // [C]
	RunningMean, RunningVar *tape.Variable // [C], not trained
	Axis                    int            // feature dimension (negative counts from the end)
	Momentum, Epsilon       float64
	training                bool
	// updates, where a traced step sets it, takes the running statistics'
	// new values instead of their assignment.
	updates *stateUpdates
}

// stateUpdates collects the new values of the state a traced step's model
// moves (BatchNorm's running statistics): results of the step's graph,
// assigned to their variables after each call, in the order they came.
type stateUpdates struct {
	vars []*tape.Variable
	vals []*tensor.Tensor
}

// collectState makes every BatchNorm in m (through Containers) hand its
// running statistics' new values to u (nil: assign them again).
func collectState(m Module, u *stateUpdates) {
	switch l := m.(type) {
	case *BatchNorm:
		l.updates = u
	case Container:
		for _, inner := range l.Modules() {
			collectState(inner, u)
		}
	}
}

// assign sets each collected variable to its value in vals.
func (u *stateUpdates) assign(vals []*tensor.Tensor) {
	for i, v := range u.vars {
		v.Assign(vals[i])
	}
}

// NewBatchNorm makes a BatchNorm over c features (float32 unless dt says
// otherwise) with momentum 0.99 and epsilon 1e-3 (Keras's defaults), in
// training mode.
func NewBatchNorm(name string, c int, dt tensor.DType) *BatchNorm {
	dt = orFloat32(dt)
	return &BatchNorm{
		Gamma: tape.NewVariable(name+"/gamma", tensor.Ones(dt, c)), Beta: tape.NewVariable(name+"/beta", tensor.Zeros(dt, c)),
		RunningMean: tape.NewVariable(name+"/moving_mean", tensor.Zeros(dt, c)),
		RunningVar:  tape.NewVariable(name+"/moving_variance", tensor.Ones(dt, c)),
		Axis:        -1, Momentum: 0.99, Epsilon: 1e-3, training: true,
	}
}

// SetTraining switches between batch and running statistics.
func (b *BatchNorm) SetTraining(training bool) { b.training = training }

// Training reports whether b normalizes by the batch's statistics.
func (b *BatchNorm) Training() bool { return b.training }

// shape of a [C] vector broadcast along the feature axis of x.
func (b *BatchNorm) along(x, v *tensor.Tensor) *tensor.Tensor {
	axis := b.Axis
	if axis < 0 {
		axis += x.Rank()
	}
	shape := make([]int, x.Rank())
	for i := range shape {
		shape[i] = 1
	}
	shape[axis] = v.Dim(0)
	return ops.Reshape(v, shape...)
}

// Forward normalizes x (a half x in float32, the result in x's dtype; in
// training, float32 parameters read as they are).
func (b *BatchNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if b.training && halfWithFloat32(x, b.Gamma) {
		y, mean, variance := ops.BatchNorm(x, b.Gamma.Value(), b.Beta.Value(), b.Axis, b.Epsilon)
		b.moveStatistics(x, mean, variance)
		return y
	}
	return inFloat32(x, b.forward)
}

func (b *BatchNorm) forward(x *tensor.Tensor) *tensor.Tensor {
	if b.training {
		// One op each way (ops.BatchNorm): the tape keeps x and the
		// statistics, not a dozen full-size temporaries.
		y, mean, variance := ops.BatchNorm(x, valueAs(b.Gamma, x), valueAs(b.Beta, x), b.Axis, b.Epsilon)
		b.moveStatistics(x, mean, variance)
		return y
	}
	mean, variance := ops.StopGradient(valueAs(b.RunningMean, x)), ops.StopGradient(valueAs(b.RunningVar, x))
	inv := ops.Rsqrt(ops.Add(variance, plumb.Tensor.MarkScratch(ops.ScalarLike(variance, b.Epsilon)).(*tensor.Tensor)))
	scale := ops.Mul(inv, valueAs(b.Gamma, x))
	return ops.Add(ops.Mul(ops.Sub(x, b.along(x, mean)), b.along(x, scale)), b.along(x, valueAs(b.Beta, x)))
}

// moveStatistics moves the running statistics towards the batch's mean
// and variance: assigned now, or handed to a traced step's updates (a
// trace of one's own would freeze them, and panics saying so).
func (b *BatchNorm) moveStatistics(x, mean, variance *tensor.Tensor) {
	for i, v := range []*tape.Variable{b.RunningMean, b.RunningVar} {
		stat := []*tensor.Tensor{mean, variance}[i]
		switch {
		case b.updates != nil:
			b.updates.vars = append(b.updates.vars, v)
			b.updates.vals = append(b.updates.vals, movedAverage(v, stat, b.Momentum))
		case trace.Recording(x):
			panic(tensor.NewError("nn", "BatchNorm", tensor.ErrValue, []*tensor.Tensor{x}, "",
				"in training mode inside a trace, its running statistics would be frozen into the graph: train with TrainStep, TracedTrainStep or RecordedTrainStep, or SetTraining(false)"))
		default:
			moved := movedAverage(v, stat, b.Momentum)
			v.Assign(moved)
			if moved.Autodiff() == nil {
				moved.Release()
			}
		}
	}
}

// Variables returns Gamma and Beta.
func (b *BatchNorm) Variables() []*tape.Variable { return []*tape.Variable{b.Gamma, b.Beta} }

// State returns the running mean and variance.
func (b *BatchNorm) State() []*tape.Variable { return []*tape.Variable{b.RunningMean, b.RunningVar} }

// LayerNorm normalizes each example over its last dimension, with learned
// scale and offset: x: [..., C] -> same shape.
type LayerNorm struct {
	Gamma, Beta *tape.Variable
	Epsilon     float64
}

// NewLayerNorm makes a LayerNorm over c features with epsilon 1e-5.
func NewLayerNorm(name string, c int, dt tensor.DType) *LayerNorm {
	dt = orFloat32(dt)
	return &LayerNorm{Gamma: tape.NewVariable(name+"/gamma", tensor.Ones(dt, c)),
		Beta: tape.NewVariable(name+"/beta", tensor.Zeros(dt, c)), Epsilon: 1e-5}
}

// Forward normalizes x over its last dimension (a half x in float32, the
// result in x's dtype; float32 parameters read as they are).
func (l *LayerNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if halfWithFloat32(x, l.Gamma) {
		return ops.LayerNorm(x, l.Gamma.Value(), l.Beta.Value(), l.Epsilon)
	}
	return inFloat32(x, l.forward)
}

func (l *LayerNorm) forward(x *tensor.Tensor) *tensor.Tensor {
	return ops.LayerNorm(x, valueAs(l.Gamma, x), valueAs(l.Beta, x), l.Epsilon)
}

// Variables returns Gamma and Beta.
func (l *LayerNorm) Variables() []*tape.Variable { return []*tape.Variable{l.Gamma, l.Beta} }

// Dropout zeroes each element with probability Rate in training (scaling
// the rest by 1/(1-Rate)) and passes x through in inference.
type Dropout struct {
	Rate     float64
	rng      *tensor.RNG
	training bool
	draws    *traceDraws // where a traced step has it draw (draws.go)
}

// NewDropout makes a Dropout layer drawing its masks from rng, in training
// mode.
func NewDropout(rate float64, rng *tensor.RNG) *Dropout {
	return &Dropout{Rate: rate, rng: rng, training: true}
}

// SetTraining switches dropping on or off.
func (d *Dropout) SetTraining(training bool) { d.training = training }

// Training reports whether d drops.
func (d *Dropout) Training() bool { return d.training }

// Forward drops elements in training. Inside a traced step
// (TracedTrainStep, RecordedTrainStep) its mask is drawn by the graph at
// every call, as TrainStep's would be; inside a trace of one's own it
// panics with a *tensor.Error (its mask, drawn in Go, would be frozen).
func (d *Dropout) Forward(x *tensor.Tensor) *tensor.Tensor {
	if !d.training || d.Rate == 0 {
		return x
	}
	return dropout("Dropout", x, d.Rate, d.rng, d.draws)
}

// Variables returns none.
func (d *Dropout) Variables() []*tape.Variable { return nil }

// Embedding maps integer ids to learned vectors: ids: [...] Int32 or Int64
// -> [..., dim].
type Embedding struct {
	Table *tape.Variable // [vocab dim]
}

// NewEmbedding makes a vocab x dim table (Glorot uniform) named
// name+"/embeddings".
func NewEmbedding(name string, rng *tensor.RNG, vocab, dim int, dt tensor.DType) *Embedding {
	return &Embedding{Table: tape.NewVariable(name+"/embeddings", GlorotUniform(rng, orFloat32(dt), vocab, dim))}
}

// Forward looks the ids up.
func (e *Embedding) Forward(ids *tensor.Tensor) *tensor.Tensor {
	return ops.Gather(e.Table.Value(), ids, 0)
}

// Variables returns the table.
func (e *Embedding) Variables() []*tape.Variable { return []*tape.Variable{e.Table} }

// movedAverage returns v·momentum + stat·(1 - momentum), outside every
// tape (the temporaries no record holds released).
func movedAverage(v *tape.Variable, stat *tensor.Tensor, momentum float64) *tensor.Tensor {
	cast := castFloat(stat, v.Value().DType()) // the statistics of a half or float32 x are float32
	old, s := ops.StopGradient(v.Value()), ops.StopGradient(cast)
	m, k := ops.ScalarLike(s, momentum), ops.ScalarLike(s, 1-momentum)
	a, b := ops.Mul(old, m), ops.Mul(s, k)
	sum := ops.Add(a, b)
	temps := []*tensor.Tensor{old, s, m, k, a, b}
	if cast != stat {
		temps = append(temps, cast)
	}
	for _, t := range temps {
		if t.Autodiff() == nil && t.Traced() == nil { // in no record
			t.Release()
		}
	}
	return sum
}
