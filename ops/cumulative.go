package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// CumsumAttrs configure Cumsum and Cumprod: the axis, whether each result
// leaves out its own element (exclusive), and whether they run from the
// end (reverse).
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type CumsumAttrs = opattr.CumsumAttrs

var cumsumOp, cumprodOp *eager.Op

// inferCumulative is Cumsum's and Cumprod's shape rule: x's own.
func inferCumulative(c *eager.Call) []eager.Out {
	x := c.Inputs[0]
	if x.Rank() == 0 {
		c.Fail(tensor.ErrRank, "needs rank 1 or more")
	}
	checkAxis(c, c.Attrs.(opattr.CumsumAttrs).Axis, x.Rank())
	return c.Out1(x.DType(), x.Shape())
}

func init() {
	cumsumOp = eager.Register(&eager.Op{
		Name: "Cumsum", Inputs: 1, DTypes: numericTypes, Infer: inferCumulative,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			// The adjoint of a running sum is the running sum the other way.
			a := g.Attrs.(opattr.CumsumAttrs)
			a.Reverse = !a.Reverse
			return []*tensor.Tensor{eager.Run1(cumsumOp, a, g.OutGrads[0])}
		},
	})
	cumprodOp = eager.Register(&eager.Op{
		Name: "Cumprod", Inputs: 1, DTypes: numericTypes, Infer: inferCumulative,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{cumprodGrad(g.Inputs[0], g.OutGrads[0], g.Attrs.(opattr.CumsumAttrs))}
		},
	})
}

// Cumsum returns running sums of x along axis; exclusive leaves each
// element out of its own sum, reverse sums from the end. Numeric dtypes.
func Cumsum(x *tensor.Tensor, axis int, exclusive, reverse bool) *tensor.Tensor {
	return eager.Run1(cumsumOp, opattr.CumsumAttrs{Axis: axisOf(axis, rankOf(x)), Exclusive: exclusive, Reverse: reverse}, x)
}

// Cumprod returns running products of x along axis (torch.cumprod,
// tf.math.cumprod); exclusive leaves each element out of its own product
// (the first is 1), reverse multiplies from the end. Numeric dtypes; the
// result has x's shape and dtype. Its gradient divides by nothing, so it
// holds where x has zeros or the products underflow, to every order, and
// takes log2 n passes over x for n elements along axis.
func Cumprod(x *tensor.Tensor, axis int, exclusive, reverse bool) *tensor.Tensor {
	return eager.Run1(cumprodOp, opattr.CumsumAttrs{Axis: axisOf(axis, rankOf(x)), Exclusive: exclusive, Reverse: reverse}, x)
}

// cumprodGrad is Cumprod's adjoint for dy. Running forward, element k is
// a factor of the products at i >= k (i > k when exclusive), so
//
//	dx[k] = before[k] · q[k],  q[k] = Σ_i dy[i] · Π_{k<j<=i} x[j] (j < i when exclusive)
//
// with before the exclusive running product. q follows q[k] = b[k] +
// x[k+1]·q[k+1] (b[k] = dy[k], or dy[k+1] when exclusive), a recurrence
// solved by doubling: after each step q[k] = b[k] + a[k]·q[k+s] holds
// for twice the stride s, with a the product of the x between.
func cumprodGrad(x, dy *tensor.Tensor, a opattr.CumsumAttrs) *tensor.Tensor {
	n := x.Dim(a.Axis)
	if x.NumElements() == 0 {
		return ZerosLike(x)
	}
	zero := ScalarLike(x, 0)
	step := 1 // towards the end of the run: k+1, or k-1 running in reverse
	if a.Reverse {
		step = -1
	}
	// ahead(t, s)[k] is t[k+s·step], 0 past the run's end.
	ahead := func(t *tensor.Tensor, s int) *tensor.Tensor {
		cfg := make([]PadDim, t.Rank())
		cfg[a.Axis] = PadDim{Low: -s * step, High: s * step}
		return Pad(t, zero, cfg...)
	}
	q, mul := dy, ahead(x, 1)
	if a.Exclusive {
		q = ahead(dy, 1)
	}
	for s := 1; s < n; s *= 2 {
		q = Add(q, Mul(mul, ahead(q, s)))
		if 2*s < n {
			mul = Mul(mul, ahead(mul, s))
		}
	}
	return Mul(Cumprod(x, a.Axis, true, a.Reverse), q)
}
