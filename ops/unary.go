package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise unary functions. Each returns a tensor of x's dtype and shape.

func unaryOp(name string, dtypes []tensor.DType, grad eager.GradFunc) *eager.Op {
	return eager.Register(&eager.Op{
		Name: name, Inputs: 1, DTypes: dtypes,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		Grad:  grad, NonDifferentiable: grad == nil,
	})
}

// floatOp declares a unary function of floats.
func floatOp(name string, grad eager.GradFunc) *eager.Op { return unaryOp(name, floatTypes, grad) }

// numOp declares a unary function of every numeric dtype.
func numOp(name string, grad eager.GradFunc) *eager.Op { return unaryOp(name, numericTypes, grad) }

func identityView(c *eager.Call, specs []eager.Out) []*tensor.Tensor {
	x := c.Inputs[0]
	return []*tensor.Tensor{x.View(x.Shape(), x.Layout())}
}

var negOp, absOp, signOp, squareOp, reluOp, reluGradOp, tanhGradOp, sigmoidGradOp, expOp, logOp, sqrtOp, rsqrtOp, tanhOp, sigmoidOp, identityOp, stopGradientOp *eager.Op

func init() {
	negOp = numOp("Neg", func(g *eager.Grad) []*tensor.Tensor { return []*tensor.Tensor{Neg(g.OutGrads[0])} })

	absOp = numOp("Abs", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{chain(step(signOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})

	signOp = numOp("Sign", func(g *eager.Grad) []*tensor.Tensor {
		// The derivative of sign is zero wherever it exists.
		return []*tensor.Tensor{ZerosLike(g.Inputs[0])}
	})

	squareOp = numOp("Square", func(g *eager.Grad) []*tensor.Tensor {
		x := g.Inputs[0]
		two := ScalarLike(x, 2)
		defer releaseTemp(two)
		return []*tensor.Tensor{chain(step(mulOp, two, x), step(mulOp, g.OutGrads[0], nil))}
	})

	reluOp = numOp("Relu", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{reluGrad(g.Inputs[0], g.OutGrads[0])}
	})
	reluOp.GradReads = eager.ReadsInputs

	// ReluGrad(x, dy) is Relu's backward in one pass: dy where x > 0, else
	// 0. Its own gradient (for second derivatives) is ReluGrad again for dy
	// and none for x, where Relu's derivative is piecewise constant.
	reluGradOp = eager.Register(&eager.Op{
		Name: "ReluGrad", Inputs: 2, DTypes: numericTypes, SameDTypes: true,
		Infer: backwardInfer("x"),
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{nil, reluGrad(g.Inputs[0], g.OutGrads[0])}
		},
	})

	expOp = floatOp("Exp", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Mul(g.OutGrads[0], g.Outputs[0])}
	})
	expOp.GradReads = eager.ReadsOutputs
	logOp = floatOp("Log", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Div(g.OutGrads[0], g.Inputs[0])}
	})
	sqrtOp = floatOp("Sqrt", func(g *eager.Grad) []*tensor.Tensor {
		y := g.Outputs[0]
		two := ScalarLike(y, 2)
		defer releaseTemp(two)
		return []*tensor.Tensor{chain(step(mulOp, two, y), step(divOp, g.OutGrads[0], nil))}
	})
	rsqrtOp = floatOp("Rsqrt", func(g *eager.Grad) []*tensor.Tensor {
		// d/dx x^-1/2 = -1/2 x^-3/2 = -y^3/2.
		y := g.Outputs[0]
		half := ScalarLike(y, -0.5)
		defer releaseTemp(half)
		return []*tensor.Tensor{chain(step(squareOp, y), step(mulOp, y, nil), step(mulOp, half, nil), step(mulOp, g.OutGrads[0], nil))}
	})
	tanhOp = floatOp("Tanh", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{tanhGrad(g.Outputs[0], g.OutGrads[0])}
	})
	tanhOp.GradReads = eager.ReadsOutputs
	sigmoidOp = floatOp("Sigmoid", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{sigmoidGrad(g.Outputs[0], g.OutGrads[0])}
	})
	sigmoidOp.GradReads = eager.ReadsOutputs

	// TanhGrad(y, dy) = dy·(1 - y²) and SigmoidGrad(y, dy) = dy·y·(1 - y)
	// are Tanh's and Sigmoid's backward from their output y in one pass
	// and one allocation (as TensorFlow's ops of those names), where the
	// composed form made three temporaries. Each is linear in dy, so its
	// gradient for dy is itself; for y it is g·dy·(-2y), g·dy·(1 - 2y).
	tanhGradOp = outputGradOp("TanhGrad", "y", tanhGrad, func(y, dy, g *tensor.Tensor) *tensor.Tensor {
		return Mul(Mul(g, dy), Mul(ScalarLike(y, -2), y))
	})
	sigmoidGradOp = outputGradOp("SigmoidGrad", "y", sigmoidGrad, func(y, dy, g *tensor.Tensor) *tensor.Tensor {
		return Mul(Mul(g, dy), Sub(OnesLike(y), Mul(ScalarLike(y, 2), y)))
	})

	identityOp = eager.Register(&eager.Op{
		Name: "Identity", Inputs: 1,
		Infer:     func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		View:      identityView,
		Forwards:  true,
		Grad:      func(g *eager.Grad) []*tensor.Tensor { return []*tensor.Tensor{g.OutGrads[0]} },
		GradReads: eager.ReadsNothing,
	})

	stopGradientOp = eager.Register(&eager.Op{
		Name: "StopGradient", Inputs: 1,
		Infer:             func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		View:              identityView,
		Forwards:          true,
		NonDifferentiable: true,
	})
}

// Neg returns -x. For Uint8 it wraps around.
func Neg(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(negOp, nil, x) }

// Abs returns |x|.
func Abs(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(absOp, nil, x) }

// Sign returns -1, 0 or 1 by the sign of x (NaN stays NaN).
func Sign(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(signOp, nil, x) }

// Square returns x*x.
func Square(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(squareOp, nil, x) }

func reluGrad(x, dy *tensor.Tensor) *tensor.Tensor { return eager.Run1(reluGradOp, nil, x, dy) }

func tanhGrad(y, dy *tensor.Tensor) *tensor.Tensor { return eager.Run1(tanhGradOp, nil, y, dy) }

func sigmoidGrad(y, dy *tensor.Tensor) *tensor.Tensor { return eager.Run1(sigmoidGradOp, nil, y, dy) }

// backwardInfer is the shape rule of an elementwise backward op (first,
// dy): both of one shape, which the result has; first names the first
// input in the error.
func backwardInfer(first string) func(c *eager.Call) []eager.Out {
	return func(c *eager.Call) []eager.Out {
		x, dy := c.Inputs[0], c.Inputs[1]
		if !x.Shape().Equal(dy.Shape()) {
			c.Fail(tensor.ErrShape, "%s %v and dy %v differ in shape", first, x.Shape(), dy.Shape())
		}
		return c.Out1(dy.DType(), dy.Shape())
	}
}

// outputGradOp declares the backward op name(y, dy) of a float function
// from its output y (or its input: first names which, for errors): self
// computes it (its gradient for dy, the op being linear in dy) and dY its
// gradient for y given the outer gradient g.
func outputGradOp(name, first string, self func(y, dy *tensor.Tensor) *tensor.Tensor, dY func(y, dy, g *tensor.Tensor) *tensor.Tensor) *eager.Op {
	return eager.Register(&eager.Op{
		Name: name, Inputs: 2, DTypes: floatTypes, SameDTypes: true,
		Infer: backwardInfer(first),
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			y, dy, gy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
			return []*tensor.Tensor{when(g.Needs[0], func() *tensor.Tensor { return dY(y, dy, gy) }), when(g.Needs[1], func() *tensor.Tensor { return self(y, gy) })}
		},
	})
}

// Relu returns max(x, 0): x where x > 0, NaN where x is NaN, else 0
// (+0 for -0). Its gradient passes dy where x > 0 and is 0 elsewhere.
func Relu(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(reluOp, nil, x) }

// Exp returns e^x. x: Float32 or Float64.
func Exp(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(expOp, nil, x) }

// Log returns the natural logarithm (NaN below 0, -Inf at 0). Floats only.
func Log(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(logOp, nil, x) }

// Sqrt returns the square root (NaN below 0). Floats only.
func Sqrt(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(sqrtOp, nil, x) }

// Rsqrt returns 1/sqrt(x). Floats only.
func Rsqrt(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(rsqrtOp, nil, x) }

// Tanh returns the hyperbolic tangent. Floats only.
func Tanh(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(tanhOp, nil, x) }

// Sigmoid returns 1/(1+e^-x), computed without overflow. Floats only.
func Sigmoid(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(sigmoidOp, nil, x) }

// Identity returns x unchanged (sharing its buffer unless x is a variable,
// in which case it returns a snapshot copy). Its gradient passes through.
func Identity(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(identityOp, nil, x) }

// StopGradient returns x unchanged, but no gradient flows through it.
func StopGradient(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(stopGradientOp, nil, x) }
