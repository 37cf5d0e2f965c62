package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/tensor"
)

// Fused ops whose backward is an op of its own (the norms', attention's,
// BatchNorm's) differentiate to any order: the backward op's gradient
// rule writes the backward kernel's mathematics out as ops of the same
// inputs (composed), records them even where the tapes have paused to
// differentiate (regions.Force), and differentiates those, every op of
// that recorded in its turn. A first-order gradient runs the backward
// kernel alone; only a tape that recorded the backward op, and so asks
// for a second derivative through it, runs its rule.

// backpropGrad is the gradient rule of a fused op's backward op g:
// composed is the backward as ops of g's inputs, its outputs in order;
// the gradients of g's inputs are its vector-Jacobian product with g's
// output gradients. Nil where an input gets none (or g.Needs says no).
func backpropGrad(g *eager.Grad, composed func(in []*tensor.Tensor) []*tensor.Tensor) []*tensor.Tensor {
	var from, to uint64
	var outs []*tensor.Tensor
	regions.Force(func() {
		from = regions.Mark()
		outs = composed(g.Inputs)
		to = regions.Mark()
	})
	grads := regions.WindowVJP(outs, g.OutGrads, g.Inputs, from, to)
	for i := range grads {
		// A tensor given as two inputs (GRUCell(x, x, h)) has its whole
		// gradient at each: the first keeps it, the tape adds the rest.
		if (i < len(g.Needs) && !g.Needs[i]) || slices.Index(g.Inputs, g.Inputs[i]) < i {
			grads[i] = nil
		}
	}
	return grads
}

// sumLeading sums x over every dimension but its last (a row's scale's
// gradient over the rows); x itself where it has no other.
func sumLeading(x *tensor.Tensor) *tensor.Tensor {
	if x.Rank() < 2 {
		return x
	}
	dims := make([]int, x.Rank()-1)
	for i := range dims {
		dims[i] = i
	}
	return Reduce(x, Reduction{Kind: ReduceSum, Dims: dims})
}

// widened is x in float32 where it is of a half type, else x.
func widened(x *tensor.Tensor) *tensor.Tensor {
	if x.DType().IsHalf() {
		return Cast(x, tensor.Float32)
	}
	return x
}

// narrowedLike is y (computed on x widened) cast back to x's dtype where
// that is a half type.
func narrowedLike(y, x *tensor.Tensor) *tensor.Tensor {
	if x.DType().IsHalf() {
		return Cast(y, x.DType())
	}
	return y
}
