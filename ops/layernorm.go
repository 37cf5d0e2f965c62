package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Layer normalization as one op (Ba et al.) and its root-mean-square form
// (Zhang & Sennrich), forward and backward: a backend's kernel reads each
// row once to normalize it and once more in the backward, where the ops
// spelled out take a dozen passes and as many temporaries. The forward
// keeps each row's mean and reciprocal standard deviation for the
// backward. A device without the kernels runs the same mathematics as
// ops.

// NormAttrs are the normalization ops' attributes: the epsilon added to
// the variance (or mean square), and whether the op is RMSNorm (no mean
// subtracted, no offset).
type NormAttrs struct {
	Epsilon float64
	RMS     bool
}

func (a NormAttrs) String() string { return fmt.Sprintf("epsilon=%g rms=%v", a.Epsilon, a.RMS) }

var layerNormOp, layerNormBackpropOp *eager.Op

// normShapes checks x [..., C] against gamma (and beta, where given) [C]
// of x's dtype, or both float32 for a half x (mixed precision's norms),
// failing c otherwise.
func normShapes(c *eager.Call, x *tensor.Tensor, params ...*tensor.Tensor) {
	if x.Rank() < 1 {
		c.Fail(tensor.ErrRank, "needs x of rank 1 or more, got a scalar")
	}
	pd := params[0].DType()
	for _, p := range params {
		if p.DType() != pd || pd != x.DType() && !(x.DType().IsHalf() && pd == tensor.Float32) {
			c.Fail(tensor.ErrDType, "the scale and offset must be %v as x is (or float32 for a half x), got %v", x.DType(), p.DType())
		}
		if !p.Shape().Equal(tensor.Shape{x.Dim(-1)}) {
			c.Fail(tensor.ErrShape, "the scale and offset must be [%d] (x's last dimension), got %v", x.Dim(-1), p.Shape())
		}
	}
}

func init() {
	// Inputs x, gamma[, beta]; outputs y, mean, rstd (the statistics
	// [...], x's shape less its last dimension, in statDType).
	layerNormOp = eager.Register(&eager.Op{
		Name: "LayerNorm", Inputs: -1, DTypes: floatTypes,
		Infer: func(c *eager.Call) []eager.Out {
			if len(c.Inputs) != 2 && len(c.Inputs) != 3 {
				c.Fail(tensor.ErrArity, "takes x, a scale and an optional offset, got %d inputs", len(c.Inputs))
			}
			x := c.Inputs[0]
			normShapes(c, x, c.Inputs[1:]...)
			rows := x.Shape()[:x.Rank()-1].Clone()
			st := statDType(x.DType())
			return []eager.Out{{DType: x.DType(), Shape: x.Shape()}, {DType: st, Shape: rows}, {DType: st, Shape: rows}}
		},
		// The backward op, from the statistics and all three outputs'
		// gradients (the statistics' own are folded in: a user may
		// differentiate through them).
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			in := []*tensor.Tensor{g.Inputs[0], g.Inputs[1], g.Outputs[1], g.Outputs[2], g.OutGrads[0], g.OutGrads[1], g.OutGrads[2]}
			d := eager.Run(layerNormBackpropOp, g.Attrs, in...)
			return d[:len(g.Inputs)]
		},
	})
	// Inputs x, gamma, mean, rstd, dy, dmean, drstd; outputs dx, dgamma,
	// dbeta. Differentiable as its mathematics written out (again.go).
	layerNormBackpropOp = eager.Register(&eager.Op{
		Name: "LayerNormBackprop", Inputs: 7, DTypes: floatTypes,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return backpropGrad(g, func(in []*tensor.Tensor) []*tensor.Tensor { return composedNormBackprop(g.Attrs.(NormAttrs), in) })
		},
		Infer: func(c *eager.Call) []eager.Out {
			x, gamma, dy := c.Inputs[0], c.Inputs[1], c.Inputs[4]
			normShapes(c, x, gamma)
			rows := x.Shape()[:x.Rank()-1]
			st := statDType(x.DType())
			for _, i := range []int{2, 3, 5, 6} {
				if s := c.Inputs[i]; s.DType() != st || !s.Shape().Equal(rows) {
					c.Fail(tensor.ErrShape, "input %d must be %v %v (a statistic of each row), got %s", i, st, rows, tensor.Describe(s))
				}
			}
			if dy.DType() != x.DType() || !dy.Shape().Equal(x.Shape()) {
				c.Fail(tensor.ErrShape, "the output's gradient must be x's dtype and shape %v %v, got %s", x.DType(), x.Shape(), tensor.Describe(dy))
			}
			return []eager.Out{{DType: x.DType(), Shape: x.Shape()}, {DType: gamma.DType(), Shape: gamma.Shape()}, {DType: gamma.DType(), Shape: gamma.Shape()}}
		},
	})
}

// statDType is the dtype of the per-row statistics a fused op keeps for
// inputs of dtype dt (the attention's log-sum-exps, the norms' means and
// reciprocal deviations): float64 for float64, float32 otherwise (a half
// type's would lose the backward's precision).
func statDType(dt tensor.DType) tensor.DType {
	if dt == tensor.Float64 {
		return dt
	}
	return tensor.Float32
}

// LayerNorm normalizes x [..., C] over its last dimension and scales and
// offsets it: (x - mean)·rsqrt(var + epsilon)·gamma + beta, the mean and
// (biased) variance of each row, gamma and beta [C] of x's float dtype
// or, for a half x, float32 (mixed precision's norms: the parameters and
// their gradients stay float32; beta nil: no offset). The result has x's
// shape and dtype; a half x is normalized in float32 and rounded once.
// Differentiable in all three.
// Panics with a *tensor.Error for shapes or dtypes that do not fit.
func LayerNorm(x, gamma, beta *tensor.Tensor, epsilon float64) *tensor.Tensor {
	needInputs("LayerNorm", x, gamma)
	defer asOp("LayerNorm")
	return runNorm(NormAttrs{Epsilon: epsilon}, x, gamma, beta)
}

// RMSNorm scales x [..., C] by the reciprocal root mean square of each
// row and by gamma [C] (x's dtype, or float32 for a half x, as
// LayerNorm's): x·rsqrt(mean(x²) + epsilon)·gamma (LLaMA's norm). The
// result has x's shape and dtype; a half x is normalized in float32.
// Differentiable in x and gamma. Panics with a *tensor.Error for shapes or
// dtypes that do not fit.
func RMSNorm(x, gamma *tensor.Tensor, epsilon float64) *tensor.Tensor {
	needInputs("RMSNorm", x, gamma)
	defer asOp("RMSNorm")
	return runNorm(NormAttrs{Epsilon: epsilon, RMS: true}, x, gamma, nil)
}

func runNorm(a NormAttrs, x, gamma, beta *tensor.Tensor) *tensor.Tensor {
	in := []*tensor.Tensor{x, gamma}
	if beta != nil {
		in = append(in, beta)
	}
	if x.Rank() >= 1 && !fusedOn(layerNormOp, x) {
		return composedNorm(a, x, gamma, beta)
	}
	return eager.Run(layerNormOp, a, in...)[0]
}

// composedNorm is the normalization as ops, for devices without its
// kernels (a half x in float32).
func composedNorm(a NormAttrs, x, gamma, beta *tensor.Tensor) *tensor.Tensor {
	dt := x.DType()
	x, gamma = widened(x), widened(gamma)
	if beta != nil {
		beta = widened(beta)
	}
	keep := Reduction{Kind: ReduceMean, Dims: []int{-1}, KeepDims: true}
	centered := x
	if !a.RMS {
		centered = Sub(x, Reduce(x, keep))
	}
	variance := Reduce(Square(centered), keep)
	y := Mul(Mul(centered, Rsqrt(Add(variance, ScalarLike(variance, a.Epsilon)))), gamma)
	if beta != nil {
		y = Add(y, beta)
	}
	if dt.IsHalf() {
		y = Cast(y, dt)
	}
	return y
}

// composedNormBackprop is LayerNormBackprop's kernel as ops of its inputs
// (x, gamma, mean, rstd, dy, dmean, drstd; a half x in float32): with x̂ =
// (x − mean)·rstd, less its row's mean for LayerNorm (the mean as given is
// a pivot: rounded to the statistics' dtype, it is off by δ, which the
// deviations' own mean undoes), and G = dy·gamma, dx = rstd·G + shift + slope·x̂, shift
// = (dmean − rstd·ΣG)/n (none for RMSNorm) and slope = −(rstd·ΣG·x̂ +
// rstd²·drstd)/n over each row of n; dgamma = Σ dy·x̂ and dbeta = Σ dy
// over the rows.
func composedNormBackprop(a NormAttrs, in []*tensor.Tensor) []*tensor.Tensor {
	dt := in[0].DType()
	x, gamma, dy := widened(in[0]), widened(in[1]), widened(in[4])
	stat := func(s *tensor.Tensor) *tensor.Tensor { return ExpandDims(Cast(s, x.DType()), -1) }
	mean, rstd, dmean, drstd := stat(in[2]), stat(in[3]), stat(in[5]), stat(in[6])
	keep := Reduction{Kind: ReduceSum, Dims: []int{-1}, KeepDims: true}
	n := ScalarLike(x, float64(x.Dim(-1)))
	dev := Sub(x, mean)
	if !a.RMS {
		// The mean as stored is rounded to its dtype: the kernels take
		// the deviations less their own mean (the forward's, from the
		// exact mean), so the op is of those.
		dev = Sub(dev, KeepDims(Mean, dev, -1))
	}
	xhat := Mul(dev, rstd)
	g := Mul(dy, gamma)
	slope := Neg(Div(Add(Mul(rstd, Reduce(Mul(g, xhat), keep)), Mul(Mul(rstd, rstd), drstd)), n))
	dx := Add(Mul(rstd, g), Mul(slope, xhat))
	if !a.RMS {
		dx = Add(dx, Div(Sub(dmean, Mul(rstd, Reduce(g, keep))), n))
	}
	out := []*tensor.Tensor{dx, sumLeading(Mul(dy, xhat)), sumLeading(dy)}
	for i, t := range out {
		if i == 0 {
			out[i] = Cast(t, dt)
		} else {
			out[i] = Cast(t, in[1].DType()) // the parameters' dtype: float32 for a mixed norm's
		}
	}
	return out
}
