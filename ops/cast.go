package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// CastAttrs are Cast's attributes.
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type CastAttrs = opattr.CastAttrs

var castOp *eager.Op

func init() {
	castOp = eager.Register(&eager.Op{
		Name: "Cast", Inputs: 1,
		Infer: func(c *eager.Call) []eager.Out {
			a, ok := c.Attrs.(opattr.CastAttrs)
			if !ok || !a.To.Valid() {
				c.Fail(tensor.ErrAttr, "needs a valid target dtype")
			}
			return c.Out1(a.To, c.Inputs[0].Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			from := g.Inputs[0].DType()
			if !from.IsFloat() || !g.Outputs[0].DType().IsFloat() {
				return []*tensor.Tensor{nil} // no gradient into or out of integers
			}
			return []*tensor.Tensor{Cast(g.OutGrads[0], from)}
		},
	})
	eager.SetConverter(castOp, func(to tensor.DType) any { return opattr.CastAttrs{To: to} })
}

// Cast converts x to dtype to elementwise, as XLA's ConvertElementType (a Go
// conversion: floats to integers truncate toward zero; out-of-range values
// and NaN give an unspecified integer; numbers to Bool are x != 0; Bool to
// numbers is 0 or 1). Only float-to-float casts carry a gradient.
func Cast(x *tensor.Tensor, to tensor.DType) *tensor.Tensor {
	return eager.Run1(castOp, opattr.CastAttrs{To: to}, x)
}
