package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// MatMulAttrs says whether to transpose the last two dimensions of each
// operand before multiplying.
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type MatMulAttrs = opattr.MatMulAttrs

var matmulOp *eager.Op

func init() {
	matmulOp = eager.Register(&eager.Op{
		Name: "MatMul", Inputs: 2, DTypes: numericTypes, SameDTypes: true, GradReads: eager.ReadsInputs,
		Infer: func(c *eager.Call) []eager.Out {
			a, b, at := c.Inputs[0], c.Inputs[1], c.Attrs.(opattr.MatMulAttrs)
			if a.Rank() < 2 || b.Rank() < 2 {
				c.Fail(tensor.ErrRank, "operands need rank 2 or more")
			}
			m, k := opattr.MatrixDims(a.Shape(), at.TransposeA)
			k2, n := opattr.MatrixDims(b.Shape(), at.TransposeB)
			if k != k2 {
				c.Fail(tensor.ErrShape, "contracting dimensions differ: %d and %d", k, k2)
			}
			batchA, batchB := a.Shape()[:a.Rank()-2], b.Shape()[:b.Rank()-2]
			batch := batchA
			switch {
			case len(batchB) == 0:
			case len(batchA) == 0:
				batch = batchB
			case !batchA.Equal(batchB):
				c.Fail(tensor.ErrShape, "batch dimensions differ: %v and %v", batchA, batchB)
			}
			shape := append(slices.Clone(batch), m, n)
			return c.Out1(a.DType(), shape)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			a, b, dy, at := g.Inputs[0], g.Inputs[1], g.OutGrads[0], g.Attrs.(opattr.MatMulAttrs)
			var da, db *tensor.Tensor
			switch {
			case !at.TransposeA && !at.TransposeB:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(dy, b, false, true) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(a, dy, true, false) })
			case !at.TransposeA && at.TransposeB:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(dy, b, false, false) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(dy, a, true, false) })
			case at.TransposeA && !at.TransposeB:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(b, dy, false, true) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(a, dy, false, false) })
			default:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(b, dy, true, true) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(dy, a, true, true) })
			}
			return []*tensor.Tensor{da, db}
		},
	})
}

// MatMul returns a·b over the last two dimensions, as NumPy's matmul: a:
// [..., m, k], b: [..., k, n] -> [..., m, n], the leading (batch)
// dimensions broadcast against each other (a rank-2 operand is shared by
// every batch of the other without a copy). A rank-1 a is a row [1, k] and
// a rank-1 b a column [k, 1], their dimension of 1 dropped from the result
// (two vectors give a scalar). Same numeric dtype. Panics with a
// *tensor.Error on a shape mismatch.
func MatMul(a, b *tensor.Tensor) *tensor.Tensor {
	defer asOp("MatMul")
	for _, x := range []*tensor.Tensor{a, b} {
		if x != nil && x.Rank() == 0 {
			fail("MatMul", tensor.ErrRank, []*tensor.Tensor{a, b}, "operands need rank 1 or more (for a scalar factor use Mul)")
		}
	}
	if a == nil || b == nil || (a.Rank() != 1 && b.Rank() != 1) {
		return MatMulT(a, b, false, false)
	}
	vecA, vecB := a.Rank() == 1, b.Rank() == 1
	if vecA {
		a = ExpandDims(a, 0)
	}
	if vecB {
		b = ExpandDims(b, -1)
	}
	y := MatMulT(a, b, false, false)
	shape := slices.Clone(y.Shape())
	if vecB {
		shape = shape[:len(shape)-1]
	}
	if vecA { // a's row, now the last dimension but one, or the last
		i := len(shape) - 2
		if vecB {
			i = len(shape) - 1
		}
		shape = slices.Delete(shape, i, i+1)
	}
	return Reshape(y, shape...)
}

// MatMulT is MatMul with the last two dimensions of a and/or b transposed
// first (without a copy of the caller's data). Both operands have rank 2
// or more; their batch dimensions broadcast as MatMul's.
func MatMulT(a, b *tensor.Tensor, transposeA, transposeB bool) *tensor.Tensor {
	attrs := opattr.MatMulAttrs{TransposeA: transposeA, TransposeB: transposeB}
	if a == nil || b == nil || a.Rank() < 2 || b.Rank() < 2 {
		return eager.Run1(matmulOp, attrs, a, b) // which says what is wrong
	}
	batchA, batchB := a.Shape()[:a.Rank()-2], b.Shape()[:b.Rank()-2]
	if batchA.Equal(batchB) || len(batchA) == 0 || len(batchB) == 0 {
		return eager.Run1(matmulOp, attrs, a, b)
	}
	defer asOp("MatMul")
	batch, ok := broadcastAll(batchA, batchB)
	if !ok {
		fail("MatMul", tensor.ErrShape, []*tensor.Tensor{a, b}, "batch dimensions %v and %v do not broadcast", batchA, batchB)
	}
	// An operand whose batch is all ones is shared as rank 2; another
	// that differs from the broadcast batch is broadcast to it.
	fit := func(x *tensor.Tensor, own tensor.Shape) *tensor.Tensor {
		last := x.Shape()[x.Rank()-2:]
		switch {
		case own.Equal(batch):
			return x
		case own.NumElements() == 1:
			return Reshape(x, last...)
		}
		return BroadcastTo(x, append(slices.Clone(batch), last...)...)
	}
	y := eager.Run1(matmulOp, attrs, fit(a, batchA), fit(b, batchB))
	if y.Rank() == 2 { // both operands were shared
		return Reshape(y, append(slices.Clone(batch), y.Shape()...)...)
	}
	return y
}
