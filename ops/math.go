package ops

import (
	"math"

	"github.com/chewxy/math32"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// More elementwise functions of floats: trigonometric, log1p/expm1, erf,
// rounding, and IsFinite.

func isFinite[T tensor.Float](o []bool, x []T) {
	x = x[:len(o)]
	for i := range o {
		v := float64(x[i])
		o[i] = !math.IsNaN(v) && !math.IsInf(v, 0)
	}
}

// via64 computes a float32 function in float64 and rounds once: within 1
// ulp wherever the float64 function is. github.com/chewxy/math32's float32
// versions of Sin and Cos lose their argument reduction (895 ulp at 110)
// and its Expm1 overflows early (a finite value at 89, not +Inf), which
// TestFloat32ScalarFunctions shows.
func via64(f func(float64) float64) func(float32) float32 {
	return func(x float32) float32 { return float32(f(float64(x))) }
}

var sinOp, cosOp, log1pOp, expm1Op, erfOp, ceilOp, floorOp, roundOp, isFiniteOp *eager.Op

func init() {
	sinOp = floatOp("Sin", via64(math.Sin), math.Sin, func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Mul(g.OutGrads[0], Cos(g.Inputs[0]))}
	})
	cosOp = floatOp("Cos", via64(math.Cos), math.Cos, func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Neg(Mul(g.OutGrads[0], Sin(g.Inputs[0])))}
	})
	log1pOp = floatOp("Log1p", math32.Log1p, math.Log1p, func(g *eager.Grad) []*tensor.Tensor {
		x := g.Inputs[0]
		return []*tensor.Tensor{Div(g.OutGrads[0], Add(x, ScalarLike(x, 1)))}
	})
	expm1Op = floatOp("Expm1", via64(math.Expm1), math.Expm1, func(g *eager.Grad) []*tensor.Tensor {
		y := g.Outputs[0]
		return []*tensor.Tensor{Mul(g.OutGrads[0], Add(y, ScalarLike(y, 1)))}
	})
	erfOp = floatLoopOp("Erf", erf32Loop, expCost32, math.Erf, func(g *eager.Grad) []*tensor.Tensor {
		// d/dx erf(x) = 2/sqrt(pi) e^(-x^2).
		x := g.Inputs[0]
		return []*tensor.Tensor{Mul(g.OutGrads[0], Mul(ScalarLike(x, 2/math.Sqrt(math.Pi)), Exp(Neg(Square(x)))))}
	})
	// Rounding is piecewise constant: like TensorFlow, it blocks gradients.
	ceilOp = floatOp("Ceil", math32.Ceil, math.Ceil, nil)
	floorOp = floatOp("Floor", math32.Floor, math.Floor, nil)
	roundOp = floatOp("Round", math32.Round, math.Round, nil)
	isFiniteOp = eager.Register(cpuKernels{
		f32: unaryKernel(1, isFinite[float32]), f64: unaryKernel(1, isFinite[float64]),
	}.register(&eager.Op{
		Name: "IsFinite", Inputs: 1, DTypes: floatTypes, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(tensor.Bool, c.Inputs[0].Shape()) },
	}))
}

// Sin returns sin(x). Floats.
func Sin(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(sinOp, nil, x) }

// Cos returns cos(x). Floats.
func Cos(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(cosOp, nil, x) }

// Log1p returns log(1+x), accurate near 0. Floats.
func Log1p(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(log1pOp, nil, x) }

// Expm1 returns e^x - 1, accurate near 0. Floats.
func Expm1(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(expm1Op, nil, x) }

// Erf returns the error function. Floats.
func Erf(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(erfOp, nil, x) }

// Ceil rounds up. Floats; no gradient.
func Ceil(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(ceilOp, nil, x) }

// Floor rounds down. Floats; no gradient.
func Floor(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(floorOp, nil, x) }

// Round rounds to the nearest integer, halves away from zero (XLA's Round).
// Floats; no gradient.
func Round(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(roundOp, nil, x) }

// IsFinite reports, elementwise, whether x is neither infinite nor NaN.
// Floats -> Bool.
func IsFinite(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(isFiniteOp, nil, x) }
