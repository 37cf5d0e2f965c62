package nn

import (
	"slices"
	"sync"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Cell is one step of a recurrent network.
type Cell interface {
	// Step maps an input x: [N, in] and the state to the output [N, hidden]
	// and the new state.
	Step(x *tensor.Tensor, state []*tensor.Tensor) (out *tensor.Tensor, next []*tensor.Tensor)
	// InitialState returns zeros for a batch of n.
	InitialState(n int) []*tensor.Tensor
	Variables() []*tape.Variable
}

// LSTMCell is a long short-term memory cell (Hochreiter & Schmidhuber):
// gates i, f, g, o from x·W + h·U + b; c' = σ(f)c + σ(i)tanh(g);
// h' = σ(o)tanh(c'). State: [h, c].
type LSTMCell struct {
	Kernel, Recurrent, Bias *tape.Variable // [in 4h], [h 4h], [4h]
	hidden                  int
	dt                      tensor.DType
}

// NewLSTMCell makes an LSTM cell (Glorot-uniform kernel, orthogonal
// recurrent kernel, forget-gate bias 1) with variables under name.
func NewLSTMCell(name string, rng *tensor.RNG, in, hidden int, dt tensor.DType) *LSTMCell {
	dt = orFloat32(dt)
	bias := make([]float64, 4*hidden)
	for i := hidden; i < 2*hidden; i++ {
		bias[i] = 1 // forget gate: remember by default
	}
	return &LSTMCell{
		Kernel:    tape.NewVariable(name+"/kernel", GlorotUniform(rng, dt, in, 4*hidden)),
		Recurrent: tape.NewVariable(name+"/recurrent_kernel", Orthogonal(rng, dt, hidden, 4*hidden)),
		Bias:      tape.NewVariable(name+"/bias", ops.Cast(tensor.FromSlice(bias), dt)),
		hidden:    hidden, dt: dt,
	}
}

// Step advances the cell one step.
func (c *LSTMCell) Step(x *tensor.Tensor, state []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
	px := c.project(x)
	return c.stepProjected(px, state, c.recurrent(px.DType()))
}

// recurrent is the recurrent kernel in dtype dt (its kept cast under a
// mixed policy).
func (c *LSTMCell) recurrent(dt tensor.DType) []*tensor.Tensor {
	return []*tensor.Tensor{castFloat(c.Recurrent.Value(), dt)}
}

// project is x's share of the gates, x·W + b (the bias in the GEMM):
// [..., 4h] for x [..., in], a step's [N, in] or a whole sequence's.
func (c *LSTMCell) project(x *tensor.Tensor) *tensor.Tensor {
	return projectGates("LSTMCell", c.Kernel, c.Bias, x)
}

// projectGates is a cell's (named cell in errors) input's share of its
// gates, x·kernel + bias in one GEMM: [..., gates] for x [..., in], a
// step's [N, in] or a whole sequence's.
func projectGates(cell string, kernel, bias *tape.Variable, x *tensor.Tensor) *tensor.Tensor {
	needFeatures(cell, x, -1, kernel.Value().Dim(0), "input features", "")
	w, b := valueAs(kernel, x), valueAs(bias, x)
	if x.Rank() == 2 {
		return ops.FusedMatMul(x, w, b, ops.NoActivation)
	}
	rows := x.Shape()[:x.Rank()-1]
	flat := ops.FusedMatMul(ops.Reshape(x, rows.NumElements(), x.Dim(-1)), w, b, ops.NoActivation)
	return ops.Reshape(flat, append(rows.Clone(), w.Dim(1))...)
}

// stepProjected advances the cell one step from the input's share of the
// gates px (project's) and the recurrent kernel in px's dtype
// (recurrent's).
func (c *LSTMCell) stepProjected(px *tensor.Tensor, state, weights []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
	h, cell := castFloat(state[0], px.DType()), castFloat(state[1], px.DType())
	// The gates' elementwise part, one op each way, the two terms of
	// their pre-activations added inside.
	out, next := ops.LSTMCell(px, ops.MatMul(h, weights[0]), cell)
	return out, []*tensor.Tensor{out, next}
}

// projector is a cell whose input's share of each step is a function of
// the step's input alone: RNN computes it for the whole sequence in one
// product before the steps (and its gradient in one after them), as
// cuDNN's recurrent layers do, where each step would run a GEMM of its
// own each way. Its recurrent weights in the steps' dtype are taken once
// before the steps too, so that the loop captures them as they are and
// its backward takes their products over all the steps at once
// (control's Loop.Backward), under a mixed policy as in float32.
type projector interface {
	project(x *tensor.Tensor) *tensor.Tensor
	recurrent(dt tensor.DType) []*tensor.Tensor
	stepProjected(px *tensor.Tensor, state, weights []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor)
}

// sequencer is a projector that may run all its steps as one op: where
// sequence reports ok, its outputs ys [N, T, h] and final state are the
// steps' (a device's kernel for the whole sequence, one launch each way
// where a loop launches a product and a cell a step).
type sequencer interface {
	sequence(px *tensor.Tensor, state, weights []*tensor.Tensor) (ys *tensor.Tensor, final []*tensor.Tensor, ok bool)
}

// sequence runs the steps as ops.LSTMSequence where px's device runs it
// in one kernel each way (ops.LSTMSequenceFused: a GPU's).
func (c *LSTMCell) sequence(px *tensor.Tensor, state, weights []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor, bool) {
	if !ops.LSTMSequenceFused(px, weights[0]) {
		return nil, nil, false
	}
	h, cell := castFloat(state[0], px.DType()), castFloat(state[1], px.DType())
	ys, hT, cT := ops.LSTMSequence(px, weights[0], h, cell)
	return ys, []*tensor.Tensor{hT, cT}, true
}

// InitialState returns zero h and c.
func (c *LSTMCell) InitialState(n int) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Zeros(c.dt, n, c.hidden), tensor.Zeros(c.dt, n, c.hidden)}
}

// Variables returns the kernels and the bias.
func (c *LSTMCell) Variables() []*tape.Variable {
	return []*tape.Variable{c.Kernel, c.Recurrent, c.Bias}
}

// GRUCell is a gated recurrent unit (Cho et al.), with the reset gate
// applied after the recurrent product: z, r = σ(x·Wzr + h·Uzr + b);
// n = tanh(x·Wn + r(h·Un) + b); h' = (1-z)n + zh. State: [h].
type GRUCell struct {
	Kernel, Recurrent, Bias, RecurrentBias *tape.Variable // [in 3h], [h 3h], [3h], [3h]
	hidden                                 int
	dt                                     tensor.DType
}

// NewGRUCell makes a GRU cell with variables under name.
func NewGRUCell(name string, rng *tensor.RNG, in, hidden int, dt tensor.DType) *GRUCell {
	dt = orFloat32(dt)
	return &GRUCell{
		Kernel:        tape.NewVariable(name+"/kernel", GlorotUniform(rng, dt, in, 3*hidden)),
		Recurrent:     tape.NewVariable(name+"/recurrent_kernel", Orthogonal(rng, dt, hidden, 3*hidden)),
		Bias:          tape.NewVariable(name+"/bias", tensor.Zeros(dt, 3*hidden)),
		RecurrentBias: tape.NewVariable(name+"/recurrent_bias", tensor.Zeros(dt, 3*hidden)),
		hidden:        hidden, dt: dt,
	}
}

// Step advances the cell one step.
func (c *GRUCell) Step(x *tensor.Tensor, state []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
	xs := c.project(x)
	return c.stepProjected(xs, state, c.recurrent(xs.DType()))
}

// recurrent is the recurrent kernel and bias in dtype dt.
func (c *GRUCell) recurrent(dt tensor.DType) []*tensor.Tensor {
	return []*tensor.Tensor{castFloat(c.Recurrent.Value(), dt), castFloat(c.RecurrentBias.Value(), dt)}
}

// project is x's share of the gates, x·W + b (projectGates), for a step
// or a whole sequence.
func (c *GRUCell) project(x *tensor.Tensor) *tensor.Tensor {
	return projectGates("GRUCell", c.Kernel, c.Bias, x)
}

// stepProjected advances the cell one step from the input's share of the
// gates xs (project's) and the recurrent kernel and bias in xs's dtype
// (recurrent's).
func (c *GRUCell) stepProjected(xs *tensor.Tensor, state, weights []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
	h := castFloat(state[0], xs.DType())
	// The recurrent bias in the product; the gates' elementwise part one
	// op each way: (1-z)·n + z·h.
	hs := ops.FusedMatMul(h, weights[0], weights[1], ops.NoActivation)
	out := ops.GRUCell(xs, hs, h)
	return out, []*tensor.Tensor{out}
}

// sequence runs the steps as ops.GRUSequence where xs's device runs it
// in one kernel each way (ops.GRUSequenceFused: a GPU's).
func (c *GRUCell) sequence(xs *tensor.Tensor, state, weights []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor, bool) {
	if !ops.GRUSequenceFused(xs, weights[0]) {
		return nil, nil, false
	}
	ys, hT := ops.GRUSequence(xs, weights[0], weights[1], castFloat(state[0], xs.DType()))
	return ys, []*tensor.Tensor{hT}, true
}

// InitialState returns zero h.
func (c *GRUCell) InitialState(n int) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Zeros(c.dt, n, c.hidden)}
}

// Variables returns the kernels and biases.
func (c *GRUCell) Variables() []*tape.Variable {
	return []*tape.Variable{c.Kernel, c.Recurrent, c.Bias, c.RecurrentBias}
}

// RNN runs a cell over a sequence with control.Scan (so it differentiates
// through the loop as one region): x: [N, T, in] -> [N, T, hidden] with
// ReturnSequences, else the last output [N, hidden]. An LSTMCell's or a
// GRUCell's steps are one op each way where the device runs them so
// (ops.LSTMSequenceFused, ops.GRUSequenceFused: a GPU's, as cuDNN's
// recurrent layers), the same values to the dtype's rounding (their sums
// in float64).
type RNN struct {
	Cell            Cell
	ReturnSequences bool

	// zeros are the cell's zero states by batch size and device, made
	// once: read-only inputs of every call from a zero state, which each
	// call would otherwise make and leave to the collector.
	zeros struct {
		mu sync.Mutex
		m  map[zeroKey][]*tensor.Tensor
	}
}

type zeroKey struct {
	n   int
	dev device.Device
}

// zeroState returns the cell's initial state for a batch of n, made on
// first use for the default device (the cell's InitialState; a state
// made while a trace records is not kept).
func (r *RNN) zeroState(n int) []*tensor.Tensor {
	k := zeroKey{n, device.Default()}
	r.zeros.mu.Lock()
	defer r.zeros.mu.Unlock()
	if s, ok := r.zeros.m[k]; ok {
		return slices.Clone(s) // the caller's slice; the tensors are shared
	}
	s := r.Cell.InitialState(n)
	for _, t := range s {
		if t.Traced() != nil {
			return s // a trace's values: its own
		}
	}
	if r.zeros.m == nil {
		r.zeros.m = map[zeroKey][]*tensor.Tensor{}
	}
	r.zeros.m[k] = s
	return slices.Clone(s)
}

// Forward runs the cell from a zero state.
func (r *RNN) Forward(x *tensor.Tensor) *tensor.Tensor {
	out, _ := r.Run(x, nil)
	return out
}

// Run runs the cell from state (nil: zeros) and also returns the final
// state, for stateful use (generating text step by step).
func (r *RNN) Run(x *tensor.Tensor, state []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
	if x == nil || x.Rank() != 3 {
		panic(tensor.NewError("nn", "RNN", tensor.ErrShape, []*tensor.Tensor{x}, "", "x must be [N, T, in]"))
	}
	if x.Dim(1) == 0 && !r.ReturnSequences {
		panic(tensor.NewError("nn", "RNN", tensor.ErrShape, []*tensor.Tensor{x}, "", "a sequence of no steps has no last output (ReturnSequences gives [N, 0, hidden])"))
	}
	var zeros []*tensor.Tensor // the cached zero state, shared between calls
	if state == nil {
		state = r.zeroState(x.Dim(0))
		zeros = state
	}
	if x.DType().IsHalf() { // the carry keeps one dtype: the input's (mixed precision)
		state = append([]*tensor.Tensor(nil), state...)
		for i, s := range state {
			state[i] = castFloat(s, x.DType())
		}
	}
	step, in := r.Cell.Step, x
	if p, ok := r.Cell.(projector); ok && x.Dim(0) > 0 && x.Dim(1) > 0 {
		in = p.project(x) // the input's share of every step in one product
		weights := p.recurrent(in.DType())
		if s, ok := r.Cell.(sequencer); ok {
			if ys, final, ok := s.sequence(in, state, weights); ok {
				if r.ReturnSequences {
					return ys, final
				}
				return final[0], final
			}
		}
		step = func(px *tensor.Tensor, state []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
			return p.stepProjected(px, state, weights)
		}
	}
	steps := ops.Transpose(in, 1, 0, 2) // [T, N, in or the projection's]
	final, ys := control.Scan(func(carry, in []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
		out, next := step(in[0], carry)
		return next, []*tensor.Tensor{out}
	}, state, []*tensor.Tensor{steps})
	final = slices.Clone(final)
	for i, f := range final {
		if slices.Contains(zeros, f) { // no step ran: the caller's own view, not the shared zeros
			final[i] = ops.Identity(f)
		}
	}
	if r.ReturnSequences {
		if x.Dim(1) == 0 { // no step ran: no output to stack
			return tensor.FullOn(final[0].Device(), final[0].DType(), 0, x.Dim(0), 0, final[0].Dim(-1)), final
		}
		return ops.Transpose(ys[0], 1, 0, 2), final
	}
	t := ys[0].Dim(0)
	last := ops.Slice(ys[0], []int{t - 1, 0, 0}, []int{t, ys[0].Dim(1), ys[0].Dim(2)}, nil)
	return ops.Reshape(last, ys[0].Dim(1), ys[0].Dim(2)), final
}

// Variables returns the cell's variables.
func (r *RNN) Variables() []*tape.Variable { return r.Cell.Variables() }
