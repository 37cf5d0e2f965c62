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

// A GRU over a whole sequence likewise (GRUSequence).

var gruSequenceOp, gruSequenceBackpropOp *eager.Op

func init() {
	// Inputs xp [n t 3h], u [h 3h], b [3h], h0 [n h]; outputs ys [n t h],
	// hT [n h], and what the backward reads: hps [n t 3h] (each step's
	// h·u + b, as rounded) and hp [n t h] (each step's incoming state).
	gruSequenceOp = eager.Register(&eager.Op{
		Name: "GRUSequence", Inputs: 4, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			n, t, h := gruSequenceShapes(c.Fail, c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3])
			dt := c.Inputs[0].DType()
			seq := eager.Out{DType: dt, Shape: tensor.Shape{n, t, h}}
			return []eager.Out{seq, {DType: dt, Shape: tensor.Shape{n, h}}, {DType: dt, Shape: tensor.Shape{n, t, 3 * h}}, seq}
		},
		// The backward op gives the input terms' gradients dxp, the
		// recurrent terms' dhps and the initial state's; u's is the steps'
		// incoming states against dhps, one product over every step, and
		// b's the sum of dhps's rows.
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			u, hp := g.Inputs[1], g.Outputs[3]
			ut := Transpose(u, 1, 0)
			in := append([]*tensor.Tensor{g.Inputs[0], ut, g.Outputs[2], hp}, g.OutGrads...)
			d := eager.Run(gruSequenceBackpropOp, nil, in...)
			releaseTemp(ut)
			n, t, h := hp.Dim(0), hp.Dim(1), hp.Dim(2)
			rows := Reshape(d[1], n*t, 3*h)
			var du, db *tensor.Tensor
			if g.Needs[1] {
				a := Reshape(hp, n*t, h)
				du = MatMulT(a, rows, true, false)
				releaseTemp(a)
			}
			if g.Needs[2] {
				db = Reduce(rows, Reduction{Kind: ReduceSum, Dims: []int{0}})
			}
			releaseTemp(rows)
			releaseTemp(d[1])
			return []*tensor.Tensor{d[0], du, db, d[2]} // the tape releases those not wanted
		},
	})
	// Inputs xp, uᵀ [3h h], hps, hp, then the gradients of the forward's
	// four outputs (dys, dhT, dhps, dhp); outputs dxp and dhps' [n t 3h]
	// (the recurrent terms' whole gradients) and dh0 [n h].
	// Differentiable as its mathematics written out (again.go).
	gruSequenceBackpropOp = eager.Register(&eager.Op{
		Name: "GRUSequenceBackprop", Inputs: 8, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			hp := c.Inputs[3]
			if hp.Rank() != 3 {
				c.Fail(tensor.ErrRank, "the incoming states hp must be [n t h], got %v", hp.Shape())
			}
			n, t, h := hp.Dim(0), hp.Dim(1), hp.Dim(2)
			seq, state, gates := tensor.Shape{n, t, h}, tensor.Shape{n, h}, tensor.Shape{n, t, 3 * h}
			for i, want := range []tensor.Shape{gates, {3 * h, h}, gates, seq, seq, state, gates, seq} {
				if x := c.Inputs[i]; !x.Shape().Equal(want) {
					c.Fail(tensor.ErrShape, "input %d must be %v for states %v, got %v", i, want, hp.Shape(), x.Shape())
				}
			}
			dt := hp.DType()
			return []eager.Out{{DType: dt, Shape: gates}, {DType: dt, Shape: gates}, {DType: dt, Shape: state}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor { return backpropGrad(g, composedGRUSequenceBackprop) },
	})
}

// gruSequenceShapes checks xp [n t 3h], u [h 3h], b [3h] and h0 [n h]
// through fail and returns n, t and h.
func gruSequenceShapes(fail func(error, string, ...any), xp, u, b, h0 *tensor.Tensor) (n, t, h int) {
	if xp.Rank() != 3 || u.Rank() != 2 || b.Rank() != 1 || h0.Rank() != 2 {
		fail(tensor.ErrRank, "xp must be [n t 3h], u [h 3h], b [3h] and h0 [n h]; got %v, %v, %v and %v", xp.Shape(), u.Shape(), b.Shape(), h0.Shape())
	}
	n, t, h = xp.Dim(0), xp.Dim(1), u.Dim(0)
	if !u.Shape().Equal(tensor.Shape{h, 3 * h}) {
		fail(tensor.ErrShape, "the recurrent kernel u must be [h 3h] (three gates of the state's h), got %v", u.Shape())
	}
	if xp.Dim(2) != 3*h || b.Dim(0) != 3*h {
		fail(tensor.ErrShape, "the input's gate terms xp must be [n t %d] and the recurrent bias b [%d] for u %v, got %v and %v", 3*h, 3*h, u.Shape(), xp.Shape(), b.Shape())
	}
	if !h0.Shape().Equal(tensor.Shape{n, h}) {
		fail(tensor.ErrShape, "the initial state must be [%d %d] for xp %v, got %v", n, h, xp.Shape(), h0.Shape())
	}
	return n, t, h
}

// GRUSequence runs a GRU over a sequence from the input's terms of its
// gates, xp = x·W + b_x [n, t, 3h] (batch-major, the update, reset and
// candidate gates side by side as GRUCell takes them), the recurrent
// kernel u [h, 3h] and bias b [3h], and the initial state h0 [n, h]: at
// each step s, hp = h·u + b, then GRUCell's h' = c + z·(h − c) with z =
// σ(xp_z + hp_z), r = σ(xp_r + hp_r) and c = tanh(xp_c + r·hp_c). It
// returns every step's output ys [n, t, h] and the final state hT [n, h]
// (h0 copied where t is 0). One launch each way on a GPU for states of
// up to 256 (GRUSequenceFused), as LSTMSequence.
//
// The product is computed in float64 from b's term by fused
// multiply-adds in k's order, each step's hp and h' rounded to the
// dtype, as a loop of GRUCell steps rounds its tensors; the half types
// through float32 (their states rounded to float32 between steps).
// Float dtypes, all alike. Differentiable, to any order.
//
// Panics with a *tensor.Error for shapes that do not fit or dtypes that
// differ or are not float.
func GRUSequence(xp, u, b, h0 *tensor.Tensor) (ys, hT *tensor.Tensor) {
	needInputs("GRUSequence", xp, u, b, h0)
	defer asOp("GRUSequence")
	if s, ok := xp.Device().(gruSequencer); ok && !s.RunsGRUSequence(xp, u) {
		gruSequenceShapes(func(err error, format string, args ...any) {
			fail("GRUSequence", err, []*tensor.Tensor{xp, u, b, h0}, format, args...)
		}, xp, u, b, h0)
		return gruSteps(xp, u, b, h0)
	}
	outs := eager.Run(gruSequenceOp, nil, xp, u, b, h0)
	return outs[0], outs[1]
}

// gruSequencer is a device whose kernels run GRUSequence as one kernel
// each way for some calls (backend/cuda's Device).
type gruSequencer interface {
	RunsGRUSequence(xp, u *tensor.Tensor) bool
}

// GRUSequenceFused reports whether GRUSequence on xp's device runs its
// steps in one kernel each way for xp and u (a GPU's, for states of up to
// 256), where it is faster than a loop of GRUCell steps and their
// products; elsewhere a layer loops (nn.RNN does).
func GRUSequenceFused(xp, u *tensor.Tensor) bool {
	if xp == nil || u == nil {
		return false
	}
	s, ok := xp.Device().(gruSequencer)
	return ok && fusedOn(gruSequenceOp, xp) && s.RunsGRUSequence(xp, u)
}

// gruSteps is GRUSequence as a loop of GRUCell steps and their products
// (lstmSteps' twin).
func gruSteps(xp, u, b, h *tensor.Tensor) (ys, hT *tensor.Tensor) {
	n, t, w := xp.Dim(0), xp.Dim(1), u.Dim(0)
	if t == 0 {
		return tensor.FullOn(xp.Device(), xp.DType(), 0, n, 0, w), Identity(h)
	}
	steps := make([]*tensor.Tensor, t)
	for s := range t {
		x := Reshape(Slice(xp, []int{0, s, 0}, []int{n, s + 1, 3 * w}, nil), n, 3*w)
		h = GRUCell(x, FusedMatMul(h, u, b, NoActivation), h)
		steps[s] = h
	}
	return Stack(1, steps...), h
}

// composedGRUSequenceBackprop is GRUSequenceBackprop written in ops: from
// the last step back, with dH the gradient carried into a step's output
// (dhT at the end),
//
//	dxp_s, dhp_s, dh = GRUCellBackprop(xp_s, hps_s, hp_s, dys_s + dH)
//	dhp_s += dhps_s, dH = dh + dhp_s·uᵀ + dhp_s(ext),
//
// and dxp and dhp stacked, dh0 = dH.
func composedGRUSequenceBackprop(in []*tensor.Tensor) []*tensor.Tensor {
	xp, ut, hps, hp, dys, dH, dhps, dhp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
	n, t := hp.Dim(0), hp.Dim(1)
	at := func(x *tensor.Tensor, s int) *tensor.Tensor {
		w := x.Dim(2)
		return Reshape(Slice(x, []int{0, s, 0}, []int{n, s + 1, w}, nil), n, w)
	}
	if t == 0 {
		return []*tensor.Tensor{ZerosLike(xp), ZerosLike(hps), dH}
	}
	dx, dr := make([]*tensor.Tensor, t), make([]*tensor.Tensor, t)
	for s := t - 1; s >= 0; s-- {
		d := composedGRUCellBackprop([]*tensor.Tensor{at(xp, s), at(hps, s), at(hp, s), Add(at(dys, s), dH)})
		dx[s] = d[0]
		dr[s] = Add(d[1], at(dhps, s))
		dH = Add(Add(d[2], MatMul(dr[s], ut)), at(dhp, s))
	}
	return []*tensor.Tensor{Stack(1, dx...), Stack(1, dr...), dH}
}
