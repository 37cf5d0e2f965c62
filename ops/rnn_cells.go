package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The recurrent cells' elementwise parts as one op each way. The LSTM's:
// from the gates' pre-activations z = [i f g o], the sum of the input's
// terms (x·W + b) and the state's (h·U), and the cell c, the new cell c' =
// σ(f)·c + σ(i)·tanh(g) and output h' = σ(o)·tanh(c'). Written out it is
// the sum, a split (four copies), three sigmoids, two tanhs, three
// multiplications and an addition, and about twice that backward: on a
// GPU each a launch, a charrnn step about 34 launches a time step (an
// H200 ran it at 0.07x PyTorch, whose cell is one kernel each way, as
// here, its two terms added inside as PyTorch's fused cell adds them).

var lstmCellOp, lstmCellBackpropOp, gruCellOp, gruCellBackpropOp *eager.Op

func init() {
	// Inputs xz, hz [n 4h], c [n h]; outputs h' and c', [n h] each.
	lstmCellOp = eager.Register(&eager.Op{
		Name: "LSTMCell", Inputs: 3, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			n, h := lstmShapes(c.Fail, c.Inputs[0], c.Inputs[1], c.Inputs[2])
			out := eager.Out{DType: c.Inputs[0].DType(), Shape: tensor.Shape{n, h}}
			return []eager.Out{out, out}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			d := eager.Run(lstmCellBackpropOp, nil, g.Inputs[0], g.Inputs[1], g.Inputs[2], g.OutGrads[0], g.OutGrads[1])
			return []*tensor.Tensor{d[0], d[0], d[1]} // the sum's terms share dz
		},
	})
	// Inputs xz, hz, c, dh' and dc'; outputs dz [n 4h] (each term's) and
	// dc [n h]. Differentiable as its mathematics written out (again.go).
	lstmCellBackpropOp = eager.Register(&eager.Op{
		Name: "LSTMCellBackprop", Inputs: 5, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			xz, hz, cell, dh, dc := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4]
			n, h := lstmShapes(c.Fail, xz, hz, cell)
			for i, d := range []*tensor.Tensor{dh, dc} {
				if !d.Shape().Equal(tensor.Shape{n, h}) {
					c.Fail(tensor.ErrShape, "output gradient %d must be [%d %d], got %v", i, n, h, d.Shape())
				}
			}
			return []eager.Out{{DType: xz.DType(), Shape: xz.Shape()}, {DType: xz.DType(), Shape: cell.Shape()}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor { return backpropGrad(g, composedLSTMCellBackprop) },
	})
}

func init() {
	// Inputs xp, hp [n 3h], h [n h]; output h' [n h].
	gruCellOp = eager.Register(&eager.Op{
		Name: "GRUCell", Inputs: 3, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			n, h := gruShapes(c.Fail, c.Inputs[0], c.Inputs[1], c.Inputs[2])
			return []eager.Out{{DType: c.Inputs[0].DType(), Shape: tensor.Shape{n, h}}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return eager.Run(gruCellBackpropOp, nil, g.Inputs[0], g.Inputs[1], g.Inputs[2], g.OutGrads[0])
		},
	})
	// Inputs xp, hp, h and dh'; outputs dxp, dhp [n 3h] and dh [n h].
	// Differentiable as its mathematics written out (again.go).
	gruCellBackpropOp = eager.Register(&eager.Op{
		Name: "GRUCellBackprop", Inputs: 4, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			xp, hp, h, dout := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3]
			gruShapes(c.Fail, xp, hp, h)
			if !dout.Shape().Equal(h.Shape()) {
				c.Fail(tensor.ErrShape, "the output's gradient must be %v, got %v", h.Shape(), dout.Shape())
			}
			dt := xp.DType()
			return []eager.Out{{DType: dt, Shape: xp.Shape()}, {DType: dt, Shape: hp.Shape()}, {DType: dt, Shape: h.Shape()}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor { return backpropGrad(g, composedGRUCellBackprop) },
	})
}

// gruShapes checks xp and hp [n 3h] and h [n h] through fail and returns
// n and h.
func gruShapes(fail func(error, string, ...any), xp, hp, h *tensor.Tensor) (n, w int) {
	if xp.Rank() != 2 || hp.Rank() != 2 || h.Rank() != 2 {
		fail(tensor.ErrRank, "the input's and the state's gate terms and the state h must be matrices, got %v, %v and %v", xp.Shape(), hp.Shape(), h.Shape())
	}
	n, w = h.Dim(0), h.Dim(1)
	for i, p := range []*tensor.Tensor{xp, hp} {
		if !p.Shape().Equal(tensor.Shape{n, 3 * w}) {
			fail(tensor.ErrShape, "gate terms %d must be [%d %d] (three gates of the state's %d), got %v", i, n, 3*w, w, p.Shape())
		}
	}
	return n, w
}

// GRUCell is the elementwise part of a gated recurrent unit (Cho et al.,
// the reset gate applied after the state's product, as Keras's
// reset_after and cuDNN do): from the input's gate terms xp = x·W + b and
// the state's hp = h·U + b', each [n, 3h] holding the update, reset and
// candidate gates side by side (z, r, n), and the state h [n, h], it
// returns h' = n + z·(h − n) where z = σ(xp_z + hp_z), r = σ(xp_r +
// hp_r) and n = tanh(xp_n + r·hp_n): [n, h], one kernel each way on every
// device. Float dtypes, all alike (the half types through float32).
// Differentiable, to any order.
//
// Panics with a *tensor.Error for inputs that are not matrices, gate
// terms that are not [n, 3h] for h's [n, h], dtypes that differ or are
// not float.
func GRUCell(xp, hp, h *tensor.Tensor) *tensor.Tensor {
	needInputs("GRUCell", xp, hp, h)
	defer asOp("GRUCell")
	return eager.Run1(gruCellOp, nil, xp, hp, h)
}

// composedGRUCellBackprop is GRUCellBackprop written in ops: from xp, hp,
// h and dh', with the gates recomputed,
//
//	dn = dh'·(1 − z)·(1 − n²), dr = dn·hp_n·σ'(r), dz = dh'·(h − n)·σ'(z)
//	dxp = [dz, dr, dn], dhp = [dz, dr, dn·r], dh = dh'·z.
func composedGRUCellBackprop(in []*tensor.Tensor) []*tensor.Tensor {
	xp, hp, h, dout := widened(in[0]), widened(in[1]), widened(in[2]), widened(in[3])
	w := h.Dim(1)
	xs, hs := Split(xp, 1, []int{w, w, w}), Split(hp, 1, []int{w, w, w})
	one := ScalarLike(h, 1)
	z, r := Sigmoid(Add(xs[0], hs[0])), Sigmoid(Add(xs[1], hs[1]))
	n := Tanh(Add(xs[2], Mul(r, hs[2])))
	dsig := func(s *tensor.Tensor) *tensor.Tensor { return Mul(s, Sub(one, s)) }
	dn := Mul(Mul(dout, Sub(one, z)), Sub(one, Square(n)))
	dr := Mul(Mul(dn, hs[2]), dsig(r))
	dz := Mul(Mul(dout, Sub(h, n)), dsig(z))
	return []*tensor.Tensor{
		narrowedLike(Concatenate(1, dz, dr, dn), in[0]),
		narrowedLike(Concatenate(1, dz, dr, Mul(dn, r)), in[1]),
		narrowedLike(Mul(dout, z), in[2]),
	}
}

// lstmShapes checks the gate terms xz and hz [n 4h] and the cell c [n h]
// through fail and returns n and h.
func lstmShapes(fail func(error, string, ...any), xz, hz, c *tensor.Tensor) (n, h int) {
	if xz.Rank() != 2 || hz.Rank() != 2 || c.Rank() != 2 {
		fail(tensor.ErrRank, "the gate terms xz and hz and the cell c must be matrices, got %v, %v and %v", xz.Shape(), hz.Shape(), c.Shape())
	}
	n, h = c.Dim(0), c.Dim(1)
	for i, z := range []*tensor.Tensor{xz, hz} {
		if !z.Shape().Equal(tensor.Shape{n, 4 * h}) {
			fail(tensor.ErrShape, "gate terms %d must be [%d %d] (four gates of the cell's %d), got %v", i, n, 4*h, h, z.Shape())
		}
	}
	return n, h
}

// LSTMCell is the elementwise part of a long short-term memory cell: from
// the input's and the state's terms of the gates' pre-activations, xz =
// x·W + b and hz = h·U, each [n, 4h] holding the input, forget, cell and
// output gates side by side (i, f, g, o), and the cell c [n, h], with z =
// xz + hz it returns the output h' = σ(o)·tanh(c') and the new cell c' =
// σ(f)·c + σ(i)·tanh(g), each [n, h]: one kernel each way on every device
// where the same written out in ops is about sixteen (PyTorch's fused
// LSTM cell takes its two terms so too). Float dtypes, both alike
// (computed in float64, the half types through float32, rounded once).
// Differentiable, to any order.
//
// Panics with a *tensor.Error for inputs that are not matrices, gate
// terms that are not [n, 4h] for c's [n, h], dtypes that differ or are
// not float.
func LSTMCell(xz, hz, c *tensor.Tensor) (h, next *tensor.Tensor) {
	needInputs("LSTMCell", xz, hz, c)
	defer asOp("LSTMCell")
	outs := eager.Run(lstmCellOp, nil, xz, hz, c)
	return outs[0], outs[1]
}

// lstmGates returns σ(i), σ(f), tanh(g) and σ(o) of z, as ops.
func lstmGates(z *tensor.Tensor) (i, f, g, o *tensor.Tensor) {
	h := z.Dim(1) / 4
	p := Split(z, 1, []int{h, h, h, h})
	return Sigmoid(p[0]), Sigmoid(p[1]), Tanh(p[2]), Sigmoid(p[3])
}

// composedLSTMCellBackprop is LSTMCellBackprop written in ops: from xz,
// hz, c, dh' and dc', with z = xz + hz, c' and t = tanh(c') recomputed,
//
//	dC = dc' + dh'·σ(o)·(1 − t²)
//	dz = [dC·tanh(g)·σ'(i), dC·c·σ'(f), dC·σ(i)·(1 − tanh²(g)), dh'·t·σ'(o)]
//	dc = dC·σ(f),
//
// σ'(x) written σ(x)(1 − σ(x)).
func composedLSTMCellBackprop(in []*tensor.Tensor) []*tensor.Tensor {
	z, c, dh, dc := Add(widened(in[0]), widened(in[1])), widened(in[2]), widened(in[3]), widened(in[4])
	i, f, g, o := lstmGates(z)
	one := ScalarLike(z, 1)
	t := Tanh(Add(Mul(f, c), Mul(i, g)))
	dC := Add(dc, Mul(Mul(dh, o), Sub(one, Square(t))))
	dsig := func(s *tensor.Tensor) *tensor.Tensor { return Mul(s, Sub(one, s)) }
	dz := Concatenate(1, Mul(Mul(dC, g), dsig(i)), Mul(Mul(dC, c), dsig(f)), Mul(Mul(dC, i), Sub(one, Square(g))), Mul(Mul(dh, t), dsig(o)))
	return []*tensor.Tensor{narrowedLike(dz, in[0]), narrowedLike(Mul(dC, f), in[2])}
}
