package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// SizesAttrs carries slice sizes (DynamicSlice).
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type SizesAttrs = opattr.SizesAttrs

func checkStarts(c *eager.Call, i int, rank int) {
	checkIndexTensor(c, i)
	if s := c.Inputs[i].Shape(); s.Rank() != 1 || s[0] != rank {
		c.Fail(tensor.ErrShape, "start indices must have shape [%d], got %v", rank, s)
	}
}

var dynamicSliceOp, dynamicUpdateSliceOp *eager.Op

func init() {
	dynamicSliceOp = eager.Register(&eager.Op{
		Name: "DynamicSlice", Inputs: 2,
		GradReads: eager.ReadsInputs, GradIgnores: []int{0}, // the starts, and x's shape
		Infer: func(c *eager.Call) []eager.Out {
			x, sizes := c.Inputs[0], c.Attrs.(opattr.SizesAttrs).Sizes
			checkStarts(c, 1, x.Rank())
			if len(sizes) != x.Rank() {
				c.Fail(tensor.ErrRank, "%d sizes for rank %d", len(sizes), x.Rank())
			}
			for d, s := range sizes {
				if s < 0 || s > x.Dim(d) {
					c.Fail(tensor.ErrShape, "size %d of dimension %d is outside [0, %d]", s, d, x.Dim(d))
				}
			}
			return c.Out1(x.DType(), tensor.Shape(sizes).Clone())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x := g.Inputs[0]
			return []*tensor.Tensor{DynamicUpdateSlice(ZerosLike(x), g.OutGrads[0], g.Inputs[1]), nil}
		},
	})

	dynamicUpdateSliceOp = eager.Register(&eager.Op{
		Name: "DynamicUpdateSlice", Inputs: 3,
		Infer: func(c *eager.Call) []eager.Out {
			x, u := c.Inputs[0], c.Inputs[1]
			if x.DType() != u.DType() {
				c.Fail(tensor.ErrDType, "operand is %v, update is %v", x.DType(), u.DType())
			}
			if u.Rank() != x.Rank() {
				c.Fail(tensor.ErrRank, "update has rank %d, operand %d", u.Rank(), x.Rank())
			}
			for d := range u.Shape() {
				if u.Dim(d) > x.Dim(d) {
					c.Fail(tensor.ErrShape, "update %v does not fit in operand %v", u.Shape(), x.Shape())
				}
			}
			checkStarts(c, 2, x.Rank())
			return c.Out1(x.DType(), x.Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			u, starts, dy := g.Inputs[1], g.Inputs[2], g.OutGrads[0]
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor { return DynamicUpdateSlice(dy, ZerosLike(u), starts) }),
				when(g.Needs[1], func() *tensor.Tensor { return DynamicSlice(dy, starts, u.Shape()...) }),
				nil,
			}
		},
	})
}

// DynamicSlice is XLA's DynamicSlice: the box of the given sizes starting at
// starts (an Int32 or Int64 vector, one entry per dimension, read when the
// op runs). A start that would put the box outside x is clamped to the
// nearest start that fits (XLA's rule), never read out of bounds.
func DynamicSlice(x, starts *tensor.Tensor, sizes ...int) *tensor.Tensor {
	return eager.Run1(dynamicSliceOp, opattr.SizesAttrs{Sizes: sizes}, x, starts)
}

// DynamicUpdateSlice is XLA's DynamicUpdateSlice: x with the box at starts
// replaced by update (same dtype and rank, no larger than x). Starts are
// clamped as in DynamicSlice.
func DynamicUpdateSlice(x, update, starts *tensor.Tensor) *tensor.Tensor {
	return eager.Run1(dynamicUpdateSliceOp, nil, x, update, starts)
}
