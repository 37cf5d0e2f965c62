package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// An LSTM over a whole sequence, one op each way, as cuDNN's recurrent
// layers run one: on a GPU a step of LSTMCell and the recurrent product
// are a launch or two each, a sequence of 32 steps about two hundred
// launches a training step, each a few microseconds of the host's where
// the device's work is less; one kernel each way runs every step,
// holding the state in the block's memory (backend/cuda's, for states of
// up to 256). Where no device says it runs the op so
// (LSTMSequenceFused: the CPU, whose GEMMs a step at a time are faster
// than a loop over the product's elements), a layer runs LSTMCell steps
// in a loop instead (nn.RNN); the CPU's kernels are the reference the
// GPU's are checked against (the conformance table).

var lstmSequenceOp, lstmSequenceBackpropOp *eager.Op

func init() {
	// Inputs xz [n t 4h], u [h 4h], h0 and c0 [n h]; outputs ys [n t h],
	// hT and cT [n h], and what the backward reads: zs [n t 4h] (each
	// step's gate pre-activations, as rounded), hp and cp [n t h] (each
	// step's incoming state).
	lstmSequenceOp = eager.Register(&eager.Op{
		Name: "LSTMSequence", Inputs: 4, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			n, t, h := lstmSequenceShapes(c.Fail, c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3])
			dt := c.Inputs[0].DType()
			seq, state := eager.Out{DType: dt, Shape: tensor.Shape{n, t, h}}, eager.Out{DType: dt, Shape: tensor.Shape{n, h}}
			return []eager.Out{seq, state, state, {DType: dt, Shape: tensor.Shape{n, t, 4 * h}}, seq, seq}
		},
		// The backward op gives the gates' gradients dz (xz's too: z = xz
		// + h·u) and the initial state's; u's is the steps' incoming
		// states against dz, one product over every step.
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			u, hp := g.Inputs[1], g.Outputs[4]
			ut := Transpose(u, 1, 0) // its rows read along the threads of a GPU's warp
			in := append([]*tensor.Tensor{ut, g.Outputs[3], g.Outputs[5]}, g.OutGrads...)
			d := eager.Run(lstmSequenceBackpropOp, nil, in...)
			releaseTemp(ut)
			var du *tensor.Tensor
			if g.Needs[1] {
				n, t, h := hp.Dim(0), hp.Dim(1), hp.Dim(2)
				a, b := Reshape(hp, n*t, h), Reshape(d[0], n*t, 4*h)
				du = MatMulT(a, b, true, false)
				releaseTemp(a)
				releaseTemp(b)
			}
			return []*tensor.Tensor{d[0], du, d[1], d[2]} // the tape releases those not wanted
		},
	})
	// Inputs uᵀ [4h h], zs, cp, then the gradients of the forward's six outputs
	// (dys, dhT, dcT, dzs, dhp, dcp); outputs dz [n t 4h], dh0 and dc0
	// [n h]. Differentiable as its mathematics written out (again.go).
	lstmSequenceBackpropOp = eager.Register(&eager.Op{
		Name: "LSTMSequenceBackprop", Inputs: 9, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			zs, cp := c.Inputs[1], c.Inputs[2]
			if cp.Rank() != 3 {
				c.Fail(tensor.ErrRank, "the incoming cells cp must be [n t h], got %v", cp.Shape())
			}
			n, t, h := cp.Dim(0), cp.Dim(1), cp.Dim(2)
			seq, state, gates := tensor.Shape{n, t, h}, tensor.Shape{n, h}, tensor.Shape{n, t, 4 * h}
			for i, want := range []tensor.Shape{{4 * h, h}, gates, seq, seq, state, state, gates, seq, seq} {
				if x := c.Inputs[i]; !x.Shape().Equal(want) {
					c.Fail(tensor.ErrShape, "input %d must be %v for cells %v, got %v", i, want, cp.Shape(), x.Shape())
				}
			}
			dt := zs.DType()
			return []eager.Out{{DType: dt, Shape: gates}, {DType: dt, Shape: state}, {DType: dt, Shape: state}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor { return backpropGrad(g, composedLSTMSequenceBackprop) },
	})
}

// lstmSequenceShapes checks xz [n t 4h], u [h 4h], h0 and c0 [n h]
// through fail and returns n, t and h.
func lstmSequenceShapes(fail func(error, string, ...any), xz, u, h0, c0 *tensor.Tensor) (n, t, h int) {
	if xz.Rank() != 3 || u.Rank() != 2 || h0.Rank() != 2 || c0.Rank() != 2 {
		fail(tensor.ErrRank, "xz must be [n t 4h], u [h 4h], h0 and c0 [n h]; got %v, %v, %v and %v", xz.Shape(), u.Shape(), h0.Shape(), c0.Shape())
	}
	n, t, h = xz.Dim(0), xz.Dim(1), u.Dim(0)
	if !u.Shape().Equal(tensor.Shape{h, 4 * h}) {
		fail(tensor.ErrShape, "the recurrent kernel u must be [h 4h] (four gates of the state's h), got %v", u.Shape())
	}
	if xz.Dim(2) != 4*h {
		fail(tensor.ErrShape, "the input's gate terms xz must be [n t %d] for u %v, got %v", 4*h, u.Shape(), xz.Shape())
	}
	for i, s := range []*tensor.Tensor{h0, c0} {
		if !s.Shape().Equal(tensor.Shape{n, h}) {
			fail(tensor.ErrShape, "initial state %d must be [%d %d] for xz %v, got %v", i, n, h, xz.Shape(), s.Shape())
		}
	}
	return n, t, h
}

// LSTMSequence runs an LSTM over a sequence from the input's terms of
// its gates' pre-activations, xz = x·W + b [n, t, 4h] (batch-major, the
// four gates i, f, g, o side by side as LSTMCell takes them), the
// recurrent kernel u [h, 4h] and the initial state h0 and c0 [n, h]: at
// each step s, z = xz[:, s] + h·u, then LSTMCell's c' = σ(f)·c +
// σ(i)·tanh(g) and h' = σ(o)·tanh(c'). It returns every step's output ys
// [n, t, h] and the final state hT and cT [n, h] (h0 and c0 copied where
// t is 0).
//
// The product and the cell are computed in float64 (the product's terms
// in order by fused multiply-adds from xz's), each step's z, h' and c'
// rounded to the dtype, as a loop of LSTMCell steps rounds its tensors;
// the half types through float32 (their steps' states rounded to
// float32, the outputs once to the half type). Float dtypes, all alike.
// Differentiable, to any order.
//
// Panics with a *tensor.Error for shapes that do not fit (u not [h,
// 4h], xz not [n, t, 4h], a state not [n, h]) or dtypes that differ or
// are not float.
func LSTMSequence(xz, u, h0, c0 *tensor.Tensor) (ys, hT, cT *tensor.Tensor) {
	needInputs("LSTMSequence", xz, u, h0, c0)
	defer asOp("LSTMSequence")
	if s, ok := xz.Device().(lstmSequencer); ok && !s.RunsLSTMSequence(xz, u) {
		lstmSequenceShapes(func(err error, format string, args ...any) {
			fail("LSTMSequence", err, []*tensor.Tensor{xz, u, h0, c0}, format, args...)
		}, xz, u, h0, c0)
		return lstmSteps(xz, u, h0, c0)
	}
	outs := eager.Run(lstmSequenceOp, nil, xz, u, h0, c0)
	return outs[0], outs[1], outs[2]
}

// lstmSteps is LSTMSequence as a loop of LSTMCell steps and their
// products, where a device's sequence kernels do not take the call (a
// GPU's, for states wider than they hold): the same values but for the
// products' rounding, each rounded to the dtype before its step adds it.
func lstmSteps(xz, u, h, c *tensor.Tensor) (ys, hT, cT *tensor.Tensor) {
	n, t, w := xz.Dim(0), xz.Dim(1), u.Dim(0)
	if t == 0 {
		return tensor.FullOn(xz.Device(), xz.DType(), 0, n, 0, w), Identity(h), Identity(c)
	}
	steps := make([]*tensor.Tensor, t)
	for s := range t {
		x := Reshape(Slice(xz, []int{0, s, 0}, []int{n, s + 1, 4 * w}, nil), n, 4*w)
		h, c = LSTMCell(x, MatMul(h, u), c)
		steps[s] = h
	}
	return Stack(1, steps...), h, c
}

// lstmSequencer is a device whose kernels run LSTMSequence as one kernel
// each way for some calls (backend/cuda's Device).
type lstmSequencer interface {
	RunsLSTMSequence(xz, u *tensor.Tensor) bool
}

// LSTMSequenceFused reports whether LSTMSequence on xz's device runs its
// steps in one kernel each way for xz and u (a GPU's, for states of up to
// 256), where it is faster than a loop of LSTMCell
// steps and their products; elsewhere a layer loops (nn.RNN does).
func LSTMSequenceFused(xz, u *tensor.Tensor) bool {
	if xz == nil || u == nil {
		return false
	}
	s, ok := xz.Device().(lstmSequencer)
	return ok && fusedOn(lstmSequenceOp, xz) && s.RunsLSTMSequence(xz, u)
}

// composedLSTMSequenceBackprop is LSTMSequenceBackprop written in ops:
// from the last step back, with dH and dC the gradients carried into a
// step's outputs (dhT and dcT at the end),
//
//	dz_s = LSTMCellBackprop(zs_s, cp_s, dys_s + dH, dC).dz + dzs_s
//	dC = LSTMCellBackprop(...).dc + dcp_s, dH = dz_s·uᵀ + dhp_s,
//
// and dz stacked, dh0 = dH and dc0 = dC.
func composedLSTMSequenceBackprop(in []*tensor.Tensor) []*tensor.Tensor {
	ut, zs, cp, dys, dH, dC, dzs, dhp, dcp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8]
	n, t := cp.Dim(0), cp.Dim(1)
	at := func(x *tensor.Tensor, s int) *tensor.Tensor {
		w := x.Dim(2)
		return Reshape(Slice(x, []int{0, s, 0}, []int{n, s + 1, w}, nil), n, w)
	}
	if t == 0 {
		return []*tensor.Tensor{ZerosLike(zs), dH, dC}
	}
	dz := make([]*tensor.Tensor, t)
	for s := t - 1; s >= 0; s-- {
		z := at(zs, s)
		d := composedLSTMCellBackprop([]*tensor.Tensor{z, ZerosLike(z), at(cp, s), Add(at(dys, s), dH), dC})
		dz[s] = Add(d[0], at(dzs, s))
		dC = Add(d[1], at(dcp, s))
		dH = Add(MatMul(dz[s], ut), at(dhp, s))
	}
	return []*tensor.Tensor{Stack(1, dz...), dH, dC}
}
