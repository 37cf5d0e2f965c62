package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/castcache"
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
		// A float variable cast to a half type (a mixed-precision layer's
		// weight, every step) is served from its kept copy while the
		// variable is unchanged (internal/castcache); the kernel runs
		// where the copy is stale, and its result is kept.
		ViewOwns: true,
		View: func(c *eager.Call, specs []eager.Out) []*tensor.Tensor {
			x, to := c.Inputs[0], specs[0].DType
			if !castcache.Applies(x, to) {
				return nil
			}
			if t := castcache.Get(x, to); t != nil {
				return []*tensor.Tensor{t}
			}
			return []*tensor.Tensor{castcache.Put(x, c.Compute(specs)[0])}
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
//
// A float32 or float64 variable cast to BFloat16 or Float16 (a
// mixed-precision layer's weight, at every step) keeps its cast: later
// casts of the unchanged variable are views of that one copy, launching
// nothing; an assignment makes the next cast compute afresh, and a GPU's
// fused optimizer step given the weight's half gradient writes the copy
// as it updates the variable (tape.Options.HalfGradients). Not while the
// device records (a CUDA graph capture).
func Cast(x *tensor.Tensor, to tensor.DType) *tensor.Tensor {
	return eager.Run1(castOp, opattr.CastAttrs{To: to}, x)
}
