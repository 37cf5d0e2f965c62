package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise binary arithmetic with NumPy broadcasting. Both operands must
// share a numeric dtype; the result has that dtype and the broadcast shape.
// BroadcastDims gives XLA's explicit broadcast_dimensions form.

func binaryOp(name string, grad eager.GradFunc) *eager.Op {
	return binaryOpOf(name, numericTypes, grad)
}

// binaryOpOf declares a broadcasting function of two operands of one of
// dtypes.
func binaryOpOf(name string, dtypes []tensor.DType, grad eager.GradFunc) *eager.Op {
	return eager.Register(&eager.Op{
		Name: name, Inputs: 2, DTypes: dtypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			return c.Out1(c.Inputs[0].DType(), broadcastShapes(c, c.Inputs[0].Shape(), c.Inputs[1].Shape()))
		},
		Grad: grad,
	})
}

var addOp, subOp, mulOp, divOp, remOp, maxOp, minOp, powOp *eager.Op

func init() {
	addOp = binaryOp("Add", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{g.OutGrads[0], g.OutGrads[0]}
	})

	subOp = binaryOp("Sub", func(g *eager.Grad) []*tensor.Tensor {
		// -dy, summed to b's shape first where b was broadcast (a mean
		// subtracted along rows): one negation of the sums, not of dy.
		return []*tensor.Tensor{g.OutGrads[0], when(g.Needs[1], func() *tensor.Tensor {
			sum := SumTo(g.OutGrads[0], g.Inputs[1].Shape())
			neg := Neg(sum)
			if sum != g.OutGrads[0] {
				releaseTemp(sum)
			}
			return neg
		})}
	})

	addOp.GradReads, subOp.GradReads = eager.ReadsNothing, eager.ReadsNothing

	mulOp = binaryOp("Mul", func(g *eager.Grad) []*tensor.Tensor {
		a, b, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return Mul(dy, b) }),
			when(g.Needs[1], func() *tensor.Tensor { return Mul(dy, a) }),
		}
	})
	mulOp.GradReads = eager.ReadsInputs

	divOp = binaryOp("Div", func(g *eager.Grad) []*tensor.Tensor {
		// d/db a/b = -(a/b)/b: the quotient over b again, not a/b², whose
		// b² underflows to 0 for a tiny b (0/0 where a is 0 too, as a
		// product of tiny factors gives), as PyTorch's rule avoids too.
		b, y, dy := g.Inputs[1], g.Outputs[0], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return Div(dy, b) }),
			when(g.Needs[1], func() *tensor.Tensor { return chain(step(divOp, y, b), step(mulOp, dy, nil), step(negOp, nil)) }),
		}
	})

	remOp = binaryOp("Rem", func(g *eager.Grad) []*tensor.Tensor {
		// a = trunc(a/b)*b + rem, so d/da = 1 and d/db = -trunc(a/b).
		a, b, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		return []*tensor.Tensor{dy, when(g.Needs[1], func() *tensor.Tensor {
			return chain(step(subOp, a, g.Outputs[0]), step(divOp, nil, b), step(mulOp, dy, nil), step(negOp, nil))
		})}
	})

	maxOp = binaryOp("Max", func(g *eager.Grad) []*tensor.Tensor {
		pick := Ge(g.Inputs[0], g.Inputs[1])
		defer releaseTemp(pick)
		return minMaxGrad(g, pick)
	})

	minOp = binaryOp("Min", func(g *eager.Grad) []*tensor.Tensor {
		pick := Le(g.Inputs[0], g.Inputs[1])
		defer releaseTemp(pick)
		return minMaxGrad(g, pick)
	})

	powOp = binaryOp("Pow", func(g *eager.Grad) []*tensor.Tensor {
		a, b, y, dy := g.Inputs[0], g.Inputs[1], g.Outputs[0], g.OutGrads[0]
		var t temps
		defer t.release()
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor {
				// d/da a^b = b·a^(b-1), 0 where b is 0 (a^0 is constant: b·a^(b-1)
				// would be 0·∞ at a = 0), as PyTorch and JAX select it: there
				// the factor is b's 0 and the power a^0, both taken through
				// Where so that no gradient reaches b through them either.
				// The selections are b's size (a scalar's, for x³), not a's.
				zero := t.keep(Eq(b, ScalarLike(b, 0)))
				bz := t.keep(Where(zero, ScalarLike(b, 0), b))
				e := t.keep(Where(zero, ScalarLike(b, 0), t.keep(Sub(b, ScalarLike(b, 1)))))
				return chain(step(powOp, a, e), step(mulOp, bz, nil), step(mulOp, dy, nil))
			}),
			when(g.Needs[1], func() *tensor.Tensor {
				// d/db a^b = a^b·ln a where a > 0, and where a is 0 with b < 0
				// (∞·-∞: -∞, the limit from above); 0 elsewhere (a negative
				// base's power is not differentiable in b, as TensorFlow takes it).
				zeroBase := t.keep(LogicalAnd(t.keep(Eq(a, ScalarLike(a, 0))), t.keep(Lt(b, ScalarLike(b, 0)))))
				keep := t.keep(LogicalOr(t.keep(Gt(a, ScalarLike(a, 0))), zeroBase))
				safe := t.keep(Where(keep, a, ScalarLike(a, 1)))
				return Mul(dy, t.keep(Mul(y, t.keep(Where(keep, t.keep(Log(safe)), ScalarLike(safe, 0))))))
			}),
		}
	})
}

// minMaxGrad sends the gradient to the operand that was chosen (the first on
// ties, as pick marks).
func minMaxGrad(g *eager.Grad, pick *tensor.Tensor) []*tensor.Tensor {
	dy := g.OutGrads[0]
	z := ScalarLike(dy, 0) // broadcast: no zeros the size of dy
	defer releaseTemp(z)
	return []*tensor.Tensor{
		when(g.Needs[0], func() *tensor.Tensor { return Where(pick, dy, z) }),
		when(g.Needs[1], func() *tensor.Tensor { return Where(pick, z, dy) }),
	}
}

// when returns f() if need, else nil: gradient rules skip unwanted inputs.
func when(need bool, f func() *tensor.Tensor) *tensor.Tensor {
	if !need {
		return nil
	}
	return f()
}

// Add returns a + b elementwise. a, b: same numeric dtype, broadcastable
// shapes -> broadcast shape. Panics with a *tensor.Error otherwise.
func Add(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(addOp, nil, a, b) }

// Sub returns a - b elementwise, with broadcasting as Add.
func Sub(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(subOp, nil, a, b) }

// Mul returns a * b elementwise, with broadcasting as Add.
func Mul(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(mulOp, nil, a, b) }

// Div returns a / b elementwise, with broadcasting as Add. Integer division
// truncates (FloorDiv rounds toward -∞, as Python's //); an integer
// divided by zero gives -1 (all bits set), as XLA defines it. Float
// division by zero gives ±Inf or NaN.
func Div(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(divOp, nil, a, b) }

// Rem returns the remainder of a / b with the sign of the dividend a, as
// XLA's Rem (C's fmod); an integer remainder by zero gives a. Mod is the
// remainder with the divisor's sign (Python's %, torch.remainder).
func Rem(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(remOp, nil, a, b) }

// Maximum returns the elementwise maximum (NumPy's maximum, XLA's Max);
// NaN wins over numbers. At a tie the gradient goes to a.
func Maximum(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(maxOp, nil, a, b) }

// Minimum returns the elementwise minimum (NumPy's minimum, XLA's Min);
// NaN wins over numbers. At a tie the gradient goes to a.
func Minimum(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(minOp, nil, a, b) }

// Max is Maximum.
//
// Deprecated: use Maximum (elementwise) or Amax (the reduction); Max goes
// in the next release.
func Max(a, b *tensor.Tensor) *tensor.Tensor { return Maximum(a, b) }

// Min is Minimum.
//
// Deprecated: use Minimum (elementwise) or Amin (the reduction); Min goes
// in the next release.
func Min(a, b *tensor.Tensor) *tensor.Tensor { return Minimum(a, b) }

// Pow returns a raised to b elementwise, with math.Pow's (C99's) special
// cases; float64 within 2 units in the last place (math.Pow errs by up to
// hundreds where |b·ln a| is large, and by a factor for subnormal a). For
// integers a negative exponent gives 0 unless |a| is 1. Its gradient in a
// is b·a^(b-1), 0 where b is 0; in b, a^b·ln a where a > 0 (-∞ at a = 0
// with b < 0) and 0 where a is negative, as TensorFlow takes it.
func Pow(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(powOp, nil, a, b) }

// BroadcastDims applies a binary op in XLA's explicit form Op(lhs, rhs,
// broadcast_dimensions): dims maps each dimension of the lower-rank operand
// to a dimension of the higher-rank one; that operand's other dimensions are
// treated as size 1 and broadcast. For example, with m: [2 3] and v: [2],
// BroadcastDims(Add, m, v, 0) adds v[i] to row i. It panics with a
// *tensor.Error if dims does not fit.
func BroadcastDims(op func(a, b *tensor.Tensor) *tensor.Tensor, lhs, rhs *tensor.Tensor, dims ...int) *tensor.Tensor {
	needFunc("BroadcastDims", "op", op == nil)
	needInputs("BroadcastDims", lhs, rhs)
	lo, hi, loIsLHS := rhs, lhs, false
	if lhs.Rank() < rhs.Rank() {
		lo, hi, loIsLHS = lhs, rhs, true
	}
	in := []*tensor.Tensor{lhs, rhs}
	attrs := "broadcast_dimensions=" + tensor.Shape(dims).String()
	if len(dims) != lo.Rank() {
		panic(tensor.NewError("ops", "BroadcastDims", tensor.ErrAttr, in, attrs,
			"%d broadcast dimensions for an operand of rank %d", len(dims), lo.Rank()))

	}
	shape := make([]int, hi.Rank())
	for i := range shape {
		shape[i] = 1
	}
	for i, d := range dims {
		if d < 0 || d >= hi.Rank() || (i > 0 && d <= dims[i-1]) {
			panic(tensor.NewError("ops", "BroadcastDims", tensor.ErrAxis, in, attrs,
				"broadcast dimensions must be increasing and within rank %d", hi.Rank()))

		}
		if lo.Dim(i) != hi.Dim(d) && lo.Dim(i) != 1 {
			panic(tensor.NewError("ops", "BroadcastDims", tensor.ErrShape, in, attrs,
				"dimension %d (size %d) cannot map to dimension %d (size %d)", i, lo.Dim(i), d, hi.Dim(d)))

		}
		shape[d] = lo.Dim(i)
	}
	lo = Reshape(lo, shape...)
	if loIsLHS {
		return op(lo, hi)
	}
	return op(hi, lo)
}
