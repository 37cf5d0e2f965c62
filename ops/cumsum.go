package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// CumsumAttrs configure Cumsum: the axis, whether each sum leaves out its
// own element (exclusive), and whether sums run from the end (reverse).
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type CumsumAttrs = opattr.CumsumAttrs

var cumsumOp *eager.Op

func init() {
	cumsumOp = eager.Register(&eager.Op{
		Name: "Cumsum", Inputs: 1, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			x := c.Inputs[0]
			if x.Rank() == 0 {
				c.Fail(tensor.ErrRank, "needs rank 1 or more")
			}
			checkAxis(c, c.Attrs.(opattr.CumsumAttrs).Axis, x.Rank())
			return c.Out1(x.DType(), x.Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			// The adjoint of a running sum is the running sum the other way.
			a := g.Attrs.(opattr.CumsumAttrs)
			a.Reverse = !a.Reverse
			return []*tensor.Tensor{eager.Run1(cumsumOp, a, g.OutGrads[0])}
		},
	})
}

// Cumsum returns running sums of x along axis; exclusive leaves each
// element out of its own sum, reverse sums from the end. Numeric dtypes.
func Cumsum(x *tensor.Tensor, axis int, exclusive, reverse bool) *tensor.Tensor {
	return eager.Run1(cumsumOp, opattr.CumsumAttrs{Axis: axisOf(axis, rankOf(x)), Exclusive: exclusive, Reverse: reverse}, x)
}
