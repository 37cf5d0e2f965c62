package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/tensor"
)

// Fused ops whose backward is an op of its own with no gradient (the
// norms', attention's, BatchNorm's) still differentiate to any order: where
// a tape records the ops a gradient rule runs (a second derivative is being
// asked for), the rule computes the op again as ops and differentiates
// those (composedGrad), so that every op of the gradient is recorded and
// differentiable in its turn; otherwise the backward kernel runs. The
// value is the same mathematics either way.

// recordedAgain reports whether a recording tape records the ops a rule
// runs on g's values: a tape outside the one taking this gradient tracks
// one of them.
func recordedAgain(g *eager.Grad) bool {
	return regions.Records(g.Inputs...) || regions.Records(g.Outputs...) || regions.Records(g.OutGrads...)
}

// composedGrad returns the gradients of the op g differentiates by way of
// composed, the op as ops (its outputs in order, of the op's dtypes and
// shapes): composed runs on g's inputs under the recording tapes, then
// the ops it recorded are differentiated with g's output gradients as
// seeds, themselves recorded. Nil where an input gets no gradient.
func composedGrad(g *eager.Grad, composed func(in []*tensor.Tensor) []*tensor.Tensor) []*tensor.Tensor {
	from := regions.Mark()
	outs := composed(g.Inputs)
	grads := regions.WindowVJP(outs, g.OutGrads, g.Inputs, from, regions.Mark())
	for i := range grads {
		if i < len(g.Needs) && !g.Needs[i] {
			grads[i] = nil
		}
	}
	return grads
}
