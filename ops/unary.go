package ops

import (
	"math"

	"github.com/chewxy/math32"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise unary functions. Each returns a tensor of x's dtype and shape.

// unaryKernel shards a contiguous loop over the elements.
func unaryKernel[T, R tensor.Elem](cost float64, f func(o []R, x []T)) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, o := data[T](c.Inputs[0]), data[R](outs[0])
		if float64(len(o))*cost < device.MinShardCost {
			f(o, x)
			return
		}
		cpu(c).Parallel(len(o), cost, func(lo, hi int) { f(o[lo:hi], x[lo:hi]) })
	}
}

// mapLoop turns a function of one element into a loop.
func mapLoop[T, R any](f func(T) R) func(o []R, x []T) {
	return func(o []R, x []T) {
		x = x[:len(o)]
		for i := range o {
			o[i] = f(x[i])
		}
	}
}

func unaryOp(name string, dtypes []tensor.DType, grad eager.GradFunc, k cpuKernels) *eager.Op {
	return eager.Register(k.register(&eager.Op{
		Name: name, Inputs: 1, DTypes: dtypes,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		Grad:  grad, NonDifferentiable: grad == nil,
	}))
}

// floatOp declares a unary function of floats from its two scalar versions.
func floatOp(name string, f32 func(float32) float32, f64 func(float64) float64, grad eager.GradFunc) *eager.Op {
	return floatLoopOp(name, mapLoop(f32), 20, f64, grad)
}

// floatLoopOp is floatOp with a hand-written float32 loop costing cost32
// per element (in device.Parallel's units; scalar transcendental code is
// about 20).
func floatLoopOp(name string, f32 func(o, x []float32), cost32 float64, f64 func(float64) float64, grad eager.GradFunc) *eager.Op {
	return unaryOp(name, floatTypes, grad, cpuKernels{
		f32: unaryKernel(cost32, f32), f64: unaryKernel(20, mapLoop(f64)),
		elementwise: &eager.ElementwiseF32{Unary: f32},
	})
}

// numOp declares a unary function for every numeric dtype.
func numOp(name string, grad eager.GradFunc,
	f32 func(o, x []float32), f64 func(o, x []float64), i32 func(o, x []int32),
	i64 func(o, x []int64), u8 func(o, x []uint8)) *eager.Op {
	return unaryOp(name, numericTypes, grad, cpuKernels{
		f32: unaryKernel(1, f32), f64: unaryKernel(1, f64), i32: unaryKernel(1, i32),
		i64: unaryKernel(1, i64), u8: unaryKernel(1, u8),
		elementwise: &eager.ElementwiseF32{Unary: f32},
	})
}

func negLoop[T tensor.Num](o, x []T) {
	x = x[:len(o)]
	for i := range o {
		o[i] = -x[i]
	}
}

func absOf[T tensor.Num](v T) T {
	if v < 0 {
		return -v
	}
	return v
}

func signOf[T tensor.Num](v T) T {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return T(0) - 1
	}
	return v // keeps 0, -0 and NaN
}

func squareLoop[T tensor.Num](o, x []T) {
	x = x[:len(o)]
	for i := range o {
		o[i] = x[i] * x[i]
	}
}

func reluLoop[T tensor.Num](o, x []T) {
	x = x[:len(o)]
	if o32, ok := any(o).([]float32); ok && haveVecKernels && len(o) > 0 {
		srelu(&o32[0], &any(x).([]float32)[0], len(o))
		return
	}
	for i := range o {
		if v := x[i]; v > 0 || v != v { // NaN propagates
			o[i] = v
		} else {
			o[i] = 0
		}
	}
}

func sigmoid32(x float32) float32 {
	if x >= 0 {
		return 1 / (1 + exp32(-x))
	}
	e := exp32(x)
	return e / (1 + e)
}

func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func identityView(c *eager.Call, specs []eager.Out) []*tensor.Tensor {
	x := c.Inputs[0]
	return []*tensor.Tensor{x.View(x.Shape(), x.Layout())}
}

func copyKernel(c *eager.Call, outs []*tensor.Tensor) {
	copy(outs[0].HostBytes(), c.Inputs[0].HostBytes())
}

var negOp, absOp, signOp, squareOp, reluOp, reluGradOp, expOp, logOp, sqrtOp, rsqrtOp, tanhOp, sigmoidOp, identityOp, stopGradientOp *eager.Op

func init() {
	negOp = numOp("Neg", func(g *eager.Grad) []*tensor.Tensor { return []*tensor.Tensor{Neg(g.OutGrads[0])} },
		negLoop[float32], negLoop[float64], negLoop[int32], negLoop[int64], negLoop[uint8])

	absOp = numOp("Abs", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Mul(g.OutGrads[0], Sign(g.Inputs[0]))}
	}, mapLoop(absOf[float32]), mapLoop(absOf[float64]), mapLoop(absOf[int32]), mapLoop(absOf[int64]), mapLoop(absOf[uint8]))

	signOp = numOp("Sign", func(g *eager.Grad) []*tensor.Tensor {
		// The derivative of sign is zero wherever it exists.
		return []*tensor.Tensor{ZerosLike(g.Inputs[0])}
	}, mapLoop(signOf[float32]), mapLoop(signOf[float64]), mapLoop(signOf[int32]), mapLoop(signOf[int64]), mapLoop(signOf[uint8]))

	squareOp = numOp("Square", func(g *eager.Grad) []*tensor.Tensor {
		x := g.Inputs[0]
		return []*tensor.Tensor{Mul(g.OutGrads[0], Mul(ScalarLike(x, 2), x))}
	}, squareLoop[float32], squareLoop[float64], squareLoop[int32], squareLoop[int64], squareLoop[uint8])

	reluOp = numOp("Relu", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{reluGrad(g.Inputs[0], g.OutGrads[0])}
	}, reluLoop[float32], reluLoop[float64], reluLoop[int32], reluLoop[int64], reluLoop[uint8])
	reluOp.GradReads = eager.ReadsInputs

	// ReluGrad(x, dy) is Relu's backward in one pass: dy where x > 0, else
	// 0. Its own gradient (for second derivatives) is ReluGrad again for dy
	// and none for x, where Relu's derivative is piecewise constant.
	reluGradOp = eager.Register(cpuKernels{
		f32: reluGradKernel[float32], f64: reluGradKernel[float64], i32: reluGradKernel[int32],
		i64: reluGradKernel[int64], u8: reluGradKernel[uint8],
	}.register(&eager.Op{
		Name: "ReluGrad", Inputs: 2, DTypes: numericTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, dy := c.Inputs[0], c.Inputs[1]
			if !x.Shape().Equal(dy.Shape()) {
				c.Fail(tensor.ErrShape, "x %v and dy %v differ in shape", x.Shape(), dy.Shape())
			}
			return c.Out1(dy.DType(), dy.Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{nil, reluGrad(g.Inputs[0], g.OutGrads[0])}
		},
	}))

	expOp = floatLoopOp("Exp", exp32Loop, expCost32, math.Exp, func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Mul(g.OutGrads[0], g.Outputs[0])}
	})
	expOp.GradReads = eager.ReadsOutputs
	logOp = floatLoopOp("Log", log32Loop, expCost32, math.Log, func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Div(g.OutGrads[0], g.Inputs[0])}
	})
	sqrtOp = floatOp("Sqrt", math32.Sqrt, math.Sqrt, func(g *eager.Grad) []*tensor.Tensor {
		y := g.Outputs[0]
		return []*tensor.Tensor{Div(g.OutGrads[0], Mul(ScalarLike(y, 2), y))}
	})
	rsqrtOp = floatOp("Rsqrt", func(x float32) float32 { return 1 / math32.Sqrt(x) },
		func(x float64) float64 { return 1 / math.Sqrt(x) }, func(g *eager.Grad) []*tensor.Tensor {
			// d/dx x^-1/2 = -1/2 x^-3/2 = -y^3/2.
			y := g.Outputs[0]
			return []*tensor.Tensor{Mul(g.OutGrads[0], Mul(ScalarLike(y, -0.5), Mul(y, Square(y))))}
		})
	tanhOp = floatLoopOp("Tanh", tanh32Loop, tanhCost32, math.Tanh, func(g *eager.Grad) []*tensor.Tensor {
		y := g.Outputs[0]
		return []*tensor.Tensor{Mul(g.OutGrads[0], Sub(OnesLike(y), Square(y)))}
	})
	tanhOp.GradReads = eager.ReadsOutputs
	sigmoidOp = floatLoopOp("Sigmoid", sigmoid32Loop, expCost32, sigmoid64, func(g *eager.Grad) []*tensor.Tensor {
		y := g.Outputs[0]
		return []*tensor.Tensor{Mul(g.OutGrads[0], Mul(y, Sub(OnesLike(y), y)))}
	})
	sigmoidOp.GradReads = eager.ReadsOutputs

	identityOp = eager.Register(anyDType(&eager.Op{
		Name: "Identity", Inputs: 1,
		Infer:     func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		View:      identityView,
		Grad:      func(g *eager.Grad) []*tensor.Tensor { return []*tensor.Tensor{g.OutGrads[0]} },
		GradReads: eager.ReadsNothing,
	}, copyKernel))

	stopGradientOp = eager.Register(anyDType(&eager.Op{
		Name: "StopGradient", Inputs: 1,
		Infer:             func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		View:              identityView,
		NonDifferentiable: true,
	}, copyKernel))
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

func reluGradKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, dy, o := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
	cpu(c).Parallel(len(o), 1, func(lo, hi int) {
		xs, ds, os := x[lo:hi], dy[lo:hi], o[lo:hi]
		if o32, ok := any(os).([]float32); ok && haveVecKernels && len(os) > 0 {
			sreluGrad(&o32[0], &any(xs).([]float32)[0], &any(ds).([]float32)[0], len(os))
			return
		}
		for i := range os {
			if xs[i] > 0 {
				os[i] = ds[i]
			} else {
				os[i] = 0
			}
		}
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
