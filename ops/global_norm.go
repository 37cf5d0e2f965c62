package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// A model's gradients clipped by their global norm (nn.ClipByGlobalNorm)
// as two ops over all of them at once, where one op a gradient launched
// a kernel each on a GPU (a concatenation copied every gradient first):
// SumOfSquares reads every tensor once, ScaleEach writes every product in
// one pass. On a GPU each is a multi-tensor kernel over a table of the
// tensors, as the optimizers' steps are.

var sumOfSquaresOp, scaleEachOp *eager.Op

func init() {
	sumOfSquaresOp = eager.Register(&eager.Op{
		// Row-major inputs (a view copied first): a sum in the buffers'
		// order depended on the layout, so that a transposed view and its
		// copy (an eager call and its trace) differed in the last bit.
		Name: "SumOfSquares", Inputs: -1, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			dt := c.Inputs[0].DType()
			if a, ok := c.Attrs.(sumAsAttrs); ok {
				if !wideEnough(a.To, dt) {
					c.Fail(tensor.ErrDType, "cannot sum %v squares as %v: the sum's dtype is theirs, float32 (for the half types) or float64", dt, a.To)
				}
				dt = a.To
			}
			return c.Out1(dt, tensor.Shape{})
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			out := make([]*tensor.Tensor, len(g.Inputs))
			for i, x := range g.Inputs {
				if g.Needs[i] {
					dy := g.OutGrads[0]
					if dy.DType() != x.DType() {
						dy = Cast(dy, x.DType())
					}
					two := ScalarLike(x, 2)
					out[i] = chain(step(mulOp, x, dy), step(mulOp, nil, two))
					releaseTemp(two)
				}
			}
			return out
		},
	})
	// Inputs: the scale (a scalar), then the tensors; an output each.
	scaleEachOp = eager.Register(&eager.Op{
		Name: "ScaleEach", Inputs: -1, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			if len(c.Inputs) < 2 {
				c.Fail(tensor.ErrArity, "takes a scale and one or more tensors, got %d inputs", len(c.Inputs))
			}
			if s := c.Inputs[0]; s.Rank() != 0 {
				c.Fail(tensor.ErrRank, "the scale must be a scalar, got %v", s.Shape())
			}
			outs := make([]eager.Out, len(c.Inputs)-1)
			for i, x := range c.Inputs[1:] {
				outs[i] = eager.Out{DType: x.DType(), Shape: x.Shape().Clone()}
			}
			return outs
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			s, xs := g.Inputs[0], g.Inputs[1:]
			out := make([]*tensor.Tensor, len(g.Inputs))
			if g.Needs[0] {
				for i, x := range xs {
					if term := Sum(Mul(g.OutGrads[i], x)); out[0] == nil {
						out[0] = term
					} else {
						out[0] = Add(out[0], term)
					}
				}
			}
			for i := range xs {
				if g.Needs[i+1] {
					out[i+1] = Mul(g.OutGrads[i], s)
				}
			}
			return out
		},
	})
}

// SumOfSquares returns Σ x² over every element of every x: a scalar of
// their float dtype (one for all), on their device. Float32 sums
// accumulate in float64 and round once; the half types compute through
// float32, the sum rounded once to their dtype (nn.ClipByGlobalNorm casts
// half gradients to float32 first, for a float32 norm, as PyTorch's
// clip_grad_norm_ sums them). Differentiable: 2·x·dy. It panics with a
// *tensor.Error for no tensors, a nil one, mixed dtypes or devices, or a
// dtype that is not float.
func SumOfSquares(xs ...*tensor.Tensor) *tensor.Tensor {
	if len(xs) == 0 {
		fail("SumOfSquares", tensor.ErrArity, nil, "needs one or more tensors")
	}
	needInputs("SumOfSquares", xs...)
	return eager.Run1(sumOfSquaresOp, nil, xs...)
}

// SumOfSquaresAs is SumOfSquares with the sum rounded to dt: the
// inputs' dtype, Float32 for half inputs (the sum as PyTorch's
// clip_grad_norm_ takes it of half gradients, with no float32 copy of
// each: on a GPU the kernel widens as it reads) or Float64 for any. The
// gradient is SumOfSquares', dy rounded to each input's dtype first. It
// panics as SumOfSquares does, and with a *tensor.Error naming the
// dtypes for another dt.
func SumOfSquaresAs(dt tensor.DType, xs ...*tensor.Tensor) *tensor.Tensor {
	if len(xs) == 0 {
		fail("SumOfSquaresAs", tensor.ErrArity, nil, "needs one or more tensors")
	}
	needInputs("SumOfSquaresAs", xs...)
	return eager.Run1(sumOfSquaresOp, sumAsAttrs{To: dt}, xs...)
}

// sumAsAttrs are SumOfSquaresAs's attributes: the sum's dtype.
type sumAsAttrs struct{ To tensor.DType }

func (a sumAsAttrs) String() string { return "as=" + a.To.String() }

// wideEnough reports whether a sum of squares of dtype from may be
// rounded to dt: from itself, float32 for the half types, float64.
func wideEnough(dt, from tensor.DType) bool {
	return dt == from || dt == tensor.Float64 || dt == tensor.Float32 && from.IsHalf()
}

// ScaleEach returns scale·x for each x, scale a scalar of their float
// dtype (one for all) on their device: each product rounded as Mul rounds
// it (a half type's computed in float32, rounded once), every tensor in
// one pass (the half types through float32). Differentiable in the scale
// (Σ sum(dy·x)) and each x (dy·scale). It panics with a *tensor.Error for
// no tensors, a nil one, a scale that is not a scalar, mixed dtypes or
// devices, or a dtype that is not float.
func ScaleEach(scale *tensor.Tensor, xs ...*tensor.Tensor) []*tensor.Tensor {
	if len(xs) == 0 {
		fail("ScaleEach", tensor.ErrArity, nil, "needs one or more tensors to scale")
	}
	needInputs("ScaleEach", append([]*tensor.Tensor{scale}, xs...)...)
	return eager.Run(scaleEachOp, nil, append([]*tensor.Tensor{scale}, xs...)...)
}
