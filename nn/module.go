package nn

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Module is a layer or a model: a forward computation and the variables it
// trains. Layers are plain structs; build them with their New functions.
type Module interface {
	// Forward computes the layer's output. Shapes are in each layer's doc.
	Forward(x *tensor.Tensor) *tensor.Tensor
	// Variables lists the trainable variables, in a fixed order.
	Variables() []*tape.Variable
}

// Stateful modules keep variables that are saved in checkpoints but not
// trained (BatchNorm's running statistics).
type Stateful interface {
	State() []*tape.Variable
}

// Trainable modules behave differently in training and in inference
// (Dropout, BatchNorm); SetTraining switches them. One that also reports
// its mode (a method Training() bool, as Dropout, BatchNorm and
// MultiHeadAttention have) is put back in it by what switches a model to
// inference for a while (EvalStepOf's steps, Summarize); one that does
// not is put back in training mode.
type Trainable interface {
	SetTraining(training bool)
}

// modal is a Trainable that reports its mode.
type modal interface {
	Trainable
	Training() bool
}

// Container is a module made of other modules (a user's model holding
// blocks, as Sequential holds layers): Modules lists them, so that
// SetTraining and the traced steps' check for state kept in Go (Dropout's
// masks, BatchNorm's statistics) reach inside.
type Container interface {
	Modules() []Module
}

// SetTraining switches m and every module inside it to training or
// inference mode: m's own SetTraining where it has one (it then switches
// what it holds), else each of a Container's modules.
func SetTraining(m Module, training bool) {
	switch t := m.(type) {
	case Trainable:
		t.SetTraining(training)
	case Container:
		for _, inner := range t.Modules() {
			SetTraining(inner, training)
		}
	}
}

// Predict returns m's output for x in inference mode (no dropout,
// BatchNorm's running statistics, as Keras's predict), putting every layer
// back in the mode it was in after: the way to predict after training,
// where m.Forward would still drop (layers start in training mode, as
// PyTorch's do). Outside a tape, the model's layers hand each
// intermediate's buffer back as they go. A nil m or x panics with a
// *tensor.Error.
func Predict(m Module, x *tensor.Tensor) *tensor.Tensor {
	mustArgs("Predict", arg{"the model", m}, arg{"the input", x})
	defer inference(m)()
	return m.Forward(x)
}

// inference switches m and every module inside it to inference mode, as
// SetTraining(m, false) does, and returns a function that puts each back
// in the mode it was in (training, where a Trainable does not say).
func inference(m Module) (restore func()) {
	var undo []func()
	// walk notes how to put m's modules back, and switches them where set
	// (a Trainable's own SetTraining switches what it holds).
	var walk func(m Module, set bool)
	walk = func(m Module, set bool) {
		switch t := m.(type) {
		case modal:
			was := t.Training()
			undo = append(undo, func() { t.SetTraining(was) })
			if set {
				t.SetTraining(false)
			}
		case Trainable:
			undo = append(undo, func() { t.SetTraining(true) }) // before what it holds is put back
			if c, ok := m.(Container); ok {
				for _, inner := range c.Modules() {
					walk(inner, false)
				}
			}
			if set {
				t.SetTraining(false)
			}
		case Container:
			for _, inner := range t.Modules() {
				walk(inner, set)
			}
		}
	}
	walk(m, true)
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// AllVariables returns m's trainable variables followed by its state, the
// set a checkpoint holds.
func AllVariables(m Module) []*tape.Variable {
	mustArgs("AllVariables", arg{"the module", m})
	vars := m.Variables()
	if s, ok := m.(Stateful); ok {
		vars = append(vars, s.State()...)
	}
	return vars
}

// Values returns the variables' tensors, for tape.Gradient.
func Values(vars []*tape.Variable) []*tensor.Tensor {
	mustArgs("Values", arg{"vars", vars})
	out := make([]*tensor.Tensor, len(vars))
	for i, v := range vars {
		out[i] = v.Value()
	}
	return out
}

// Sequential applies its layers in order.
type Sequential struct {
	Layers []Module
	// Policy, when set, casts each layer's float input to its compute
	// dtype and the model's output to float32 (policy.go).
	Policy Policy
}

// NewSequential returns the layers as one model.
func NewSequential(layers ...Module) *Sequential { return &Sequential{Layers: layers} }

// Forward runs x through every layer. A *tensor.Error raised inside a
// layer names it: "ops: dense1: MatMul: contracting dimensions differ"
// (the layer's variable prefix, or "layer 3 (Flatten)" for one without
// variables).
//
// When no tape or trace observes ops (inference, evaluation), the output
// of every layer but the last is released as soon as the next layer has
// returned, so its buffer goes back to the device's cache at once rather
// than when the garbage collector finds it. A layer of your own that keeps
// its input past Forward must therefore keep a copy.
func (s *Sequential) Forward(x *tensor.Tensor) *tensor.Tensor {
	compute := s.Policy.Compute
	for i, l := range s.Layers {
		if i == 0 {
			in := castFloat(x, compute)
			if in == x {
				x = forwardNamed(l, i, x)
				continue
			}
			// The cast of the caller's input is the model's own: back to
			// the cache once read (under a releasing tape, with its
			// intermediates; plumb.FlagScratch).
			x = then(plumb.Tensor.MarkScratch(in).(*tensor.Tensor), func(in *tensor.Tensor) *tensor.Tensor { return forwardNamed(l, i, in) })
			continue
		}
		x = then(x, func(x *tensor.Tensor) *tensor.Tensor { return forwardNamed(l, i, castFloat(x, compute)) })
	}
	if compute != tensor.Invalid {
		x = then(x, func(x *tensor.Tensor) *tensor.Tensor { return castFloat(x, tensor.Float32) })
	}
	return x
}

// then returns f(y), releasing y when nothing else can read it: no tape or
// trace observes ops, and f returned a tensor of its own (a view of y
// holds a reference to the buffer, so it stays valid). y must be an
// intermediate of the caller's, never a tensor someone else passed in.
func then(y *tensor.Tensor, f func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	out := f(y)
	if out != y && !eager.Observing() {
		y.Release()
	}
	return out
}

// Variables lists every layer's trainable variables, layer by layer.
func (s *Sequential) Variables() []*tape.Variable {
	var out []*tape.Variable
	for _, l := range s.Layers {
		out = append(out, l.Variables()...)
	}
	return out
}

// State lists every layer's non-trainable variables.
func (s *Sequential) State() []*tape.Variable {
	var out []*tape.Variable
	for _, l := range s.Layers {
		if st, ok := l.(Stateful); ok {
			out = append(out, st.State()...)
		}
	}
	return out
}

// Modules returns the layers.
func (s *Sequential) Modules() []Module { return s.Layers }

// SetTraining switches every layer.
func (s *Sequential) SetTraining(training bool) {
	for _, l := range s.Layers {
		SetTraining(l, training)
	}
}

// Flatten reshapes [N, d1, d2, ...] to [N, d1*d2*...].
type Flatten struct{}

// Forward flattens all but the first dimension.
func (Flatten) Forward(x *tensor.Tensor) *tensor.Tensor { return ops.Reshape(x, x.Dim(0), -1) }

// Variables returns none.
func (Flatten) Variables() []*tape.Variable { return nil }

// Activation applies an elementwise function (ops.Relu, ops.Tanh, ...) as a
// layer.
type Activation func(*tensor.Tensor) *tensor.Tensor

// Forward applies the function.
func (a Activation) Forward(x *tensor.Tensor) *tensor.Tensor { return a(x) }

// Variables returns none.
func (Activation) Variables() []*tape.Variable { return nil }
