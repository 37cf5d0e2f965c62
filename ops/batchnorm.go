package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Batch normalization in training as one op (Ioffe & Szegedy), forward
// and backward: the statistics of each feature over every other
// dimension, then x normalized, scaled and offset. A backend's kernels
// read x for the statistics and again to normalize it; the backward
// reads x and the output's gradient for two sums per feature and again
// to write the input's gradient, where the ops spelled out take a dozen
// passes and keep as many full-size temporaries on a tape. The forward
// keeps each feature's mean and (biased) variance, which are also what a
// layer moves its running statistics by. A device without the kernels
// runs the same mathematics as ops.

// BatchNormAttrs are the batch normalization ops' attributes: the
// feature dimension (non-negative) and the epsilon added to the variance.
type BatchNormAttrs struct {
	Axis    int
	Epsilon float64
}

func (a BatchNormAttrs) String() string { return fmt.Sprintf("axis=%d epsilon=%g", a.Axis, a.Epsilon) }

var batchNormOp, batchNormBackpropOp *eager.Op

// batchNormShapes checks the feature axis of x and gamma (and beta, where
// given) [C] of x's dtype, or both float32 for a half x (mixed
// precision's norms), C x's size along the axis, failing c otherwise.
func batchNormShapes(c *eager.Call, x *tensor.Tensor, a BatchNormAttrs, params ...*tensor.Tensor) {
	if a.Axis < 0 || a.Axis >= x.Rank() {
		c.Fail(tensor.ErrAttr, "the feature axis %d is outside x's %d dimensions", a.Axis, x.Rank())
	}
	pd := params[0].DType()
	for _, p := range params {
		if p.DType() != pd || pd != x.DType() && !(x.DType().IsHalf() && pd == tensor.Float32) {
			c.Fail(tensor.ErrDType, "the scale and offset must be %v as x is (or float32 for a half x), got %v", x.DType(), p.DType())
		}
		if !p.Shape().Equal(tensor.Shape{x.Dim(a.Axis)}) {
			c.Fail(tensor.ErrShape, "the scale and offset must be [%d] (x's dimension %d), got %v", x.Dim(a.Axis), a.Axis, p.Shape())
		}
	}
}

func init() {
	// Inputs x, gamma[, beta]; outputs y, mean, variance (the statistics
	// [C] in statDType).
	batchNormOp = eager.Register(&eager.Op{
		Name: "BatchNorm", Inputs: -1, DTypes: floatTypes,
		Infer: func(c *eager.Call) []eager.Out {
			if len(c.Inputs) != 2 && len(c.Inputs) != 3 {
				c.Fail(tensor.ErrArity, "takes x, a scale and an optional offset, got %d inputs", len(c.Inputs))
			}
			x, a := c.Inputs[0], c.Attrs.(BatchNormAttrs)
			batchNormShapes(c, x, a, c.Inputs[1:]...)
			st, features := statDType(x.DType()), tensor.Shape{x.Dim(a.Axis)}
			return []eager.Out{{DType: x.DType(), Shape: x.Shape()}, {DType: st, Shape: features}, {DType: st, Shape: features}}
		},
		// The backward op, from the statistics and all three outputs'
		// gradients.
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			in := []*tensor.Tensor{g.Inputs[0], g.Inputs[1], g.Outputs[1], g.Outputs[2], g.OutGrads[0], g.OutGrads[1], g.OutGrads[2]}
			d := eager.Run(batchNormBackpropOp, g.Attrs, in...)
			return d[:len(g.Inputs)]
		},
	})
	// Inputs x, gamma, mean, variance, dy, dmean, dvariance; outputs dx,
	// dgamma, dbeta. Differentiable as its mathematics written out
	// (again.go).
	batchNormBackpropOp = eager.Register(&eager.Op{
		Name: "BatchNormBackprop", Inputs: 7, DTypes: floatTypes,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return backpropGrad(g, func(in []*tensor.Tensor) []*tensor.Tensor {
				return composedBatchNormBackprop(g.Attrs.(BatchNormAttrs), in)
			})
		},
		Infer: func(c *eager.Call) []eager.Out {
			x, gamma, dy, a := c.Inputs[0], c.Inputs[1], c.Inputs[4], c.Attrs.(BatchNormAttrs)
			batchNormShapes(c, x, a, gamma)
			st, features := statDType(x.DType()), tensor.Shape{x.Dim(a.Axis)}
			for _, i := range []int{2, 3, 5, 6} {
				if s := c.Inputs[i]; s.DType() != st || !s.Shape().Equal(features) {
					c.Fail(tensor.ErrShape, "input %d must be %v %v (a statistic of each feature), got %s", i, st, features, tensor.Describe(s))
				}
			}
			if dy.DType() != x.DType() || !dy.Shape().Equal(x.Shape()) {
				c.Fail(tensor.ErrShape, "the output's gradient must be x's dtype and shape %v %v, got %s", x.DType(), x.Shape(), tensor.Describe(dy))
			}
			return []eager.Out{{DType: x.DType(), Shape: x.Shape()}, {DType: gamma.DType(), Shape: features}, {DType: gamma.DType(), Shape: features}}
		},
	})
}

// BatchNorm normalizes x over every dimension but axis (the features; a
// negative axis counts from the end) with the batch's statistics, then
// scales and offsets it: (x - mean)·rsqrt(variance + epsilon)·gamma +
// beta, gamma and beta [C] of x's float dtype or, for a half x, float32
// (mixed precision's norms: the parameters and their gradients stay
// float32), C = x.Dim(axis) (beta nil: no offset). It returns y (x's
// shape and dtype) and each feature's mean and biased variance [C]
// (float32 for float32 and the half types, which are normalized in
// float32 and rounded once; float64 for float64), for a layer to move
// its running statistics by. Differentiable in x, gamma
// and beta, through all three results, to any order. Panics with a
// *tensor.Error for an axis, shapes or dtypes that do not fit.
func BatchNorm(x, gamma, beta *tensor.Tensor, axis int, epsilon float64) (y, mean, variance *tensor.Tensor) {
	needInputs("BatchNorm", x, gamma)
	defer asOp("BatchNorm")
	if axis < -x.Rank() || axis >= x.Rank() {
		fail("BatchNorm", tensor.ErrAttr, []*tensor.Tensor{x, gamma}, "the feature axis %d is outside x's %d dimensions %v", axis, x.Rank(), x.Shape())
	}
	if axis < 0 {
		axis += x.Rank()
	}
	a := BatchNormAttrs{Axis: axis, Epsilon: epsilon}
	in := []*tensor.Tensor{x, gamma}
	if beta != nil {
		in = append(in, beta)
	}
	var outs []*tensor.Tensor
	if !fusedOn(batchNormOp, x) {
		outs = composedBatchNorm(a, x, gamma, beta)
	} else {
		outs = eager.Run(batchNormOp, a, in...)
	}
	return outs[0], outs[1], outs[2]
}

// composedBatchNorm is BatchNorm as ops, for devices without its kernels
// (a half x in float32): the op's three outputs.
func composedBatchNorm(a BatchNormAttrs, x, gamma, beta *tensor.Tensor) []*tensor.Tensor {
	dt := x.DType()
	x, gamma = widened(x), widened(gamma)
	if beta != nil {
		beta = widened(beta)
	}
	// x as [outer, C, inner]: the statistics over dimensions 0 and 2.
	shape := x.Shape()
	outer, inner := shape[:a.Axis].NumElements(), shape[a.Axis+1:].NumElements()
	c := x.Dim(a.Axis)
	xv := Reshape(x, outer, c, inner)
	mean := Reduce(xv, Reduction{Kind: ReduceMean, Dims: []int{0, 2}})
	centered := Sub(xv, Reshape(mean, 1, c, 1))
	variance := Reduce(Square(centered), Reduction{Kind: ReduceMean, Dims: []int{0, 2}})
	scale := Mul(Rsqrt(Add(variance, ScalarLike(variance, a.Epsilon))), gamma)
	y := Mul(centered, Reshape(scale, 1, c, 1))
	if beta != nil {
		y = Add(y, Reshape(beta, 1, c, 1))
	}
	y = Reshape(y, shape...)
	if dt.IsHalf() {
		y = Cast(y, dt)
	}
	st := statDType(dt)
	return []*tensor.Tensor{y, Cast(mean, st), Cast(variance, st)}
}

// composedBatchNormBackprop is BatchNormBackprop's kernel as ops of its
// inputs (x, gamma, mean, variance, dy, dmean, dvariance; a half x in
// float32), x as [outer, C, inner] and M = outer·inner: with r =
// rsqrt(variance + epsilon), dbeta = Σdy, dgamma = r·Σdy·(x − mean) and
// dx = γr·dy + k3 + k2·(x − mean), k2 = (2·dvariance − γr·r·dgamma)/M and
// k3 = (dmean − γr·dbeta)/M.
func composedBatchNormBackprop(a BatchNormAttrs, in []*tensor.Tensor) []*tensor.Tensor {
	dt := in[0].DType()
	x, gamma, dy := widened(in[0]), widened(in[1]), widened(in[4])
	shape := x.Shape()
	outer, c, inner := shape[:a.Axis].NumElements(), x.Dim(a.Axis), shape[a.Axis+1:].NumElements()
	xv, dyv := Reshape(x, outer, c, inner), Reshape(dy, outer, c, inner)
	stat := func(s *tensor.Tensor) *tensor.Tensor { return Cast(s, x.DType()) }
	along := func(v *tensor.Tensor) *tensor.Tensor { return Reshape(v, 1, c, 1) }
	mean, variance, dmean, dvar := stat(in[2]), stat(in[3]), stat(in[5]), stat(in[6])
	sums := Reduction{Kind: ReduceSum, Dims: []int{0, 2}}
	count := ScalarLike(x, float64(outer*inner))
	r := Rsqrt(Add(variance, ScalarLike(variance, a.Epsilon)))
	centered := Sub(xv, along(mean))
	dbeta := Reduce(dyv, sums)
	dgamma := Mul(r, Reduce(Mul(dyv, centered), sums))
	gr := Mul(gamma, r)
	k2 := Div(Sub(Mul(ScalarLike(dvar, 2), dvar), Mul(Mul(gr, r), dgamma)), count)
	k3 := Div(Sub(dmean, Mul(gr, dbeta)), count)
	dx := Add(Add(Mul(along(gr), dyv), along(k3)), Mul(along(k2), centered))
	out := []*tensor.Tensor{Reshape(dx, shape...), dgamma, dbeta}
	for i, t := range out {
		if i == 0 {
			out[i] = Cast(t, dt)
		} else {
			out[i] = Cast(t, in[1].DType()) // the parameters' dtype: float32 for a mixed norm's
		}
	}
	return out
}
