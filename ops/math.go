package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// More elementwise functions of floats: trigonometric, log1p/expm1, erf,
// rounding, and IsFinite.

var sinOp, cosOp, log1pOp, expm1Op, erfOp, erfinvOp, ceilOp, floorOp, roundOp, isFiniteOp *eager.Op

func init() {
	sinOp = floatOp("Sin", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{chain(step(cosOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})
	cosOp = floatOp("Cos", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{chain(step(sinOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil), step(negOp, nil))}
	})
	log1pOp = floatOp("Log1p", func(g *eager.Grad) []*tensor.Tensor {
		x := g.Inputs[0]
		one := ScalarLike(x, 1)
		defer releaseTemp(one)
		return []*tensor.Tensor{chain(step(addOp, x, one), step(divOp, g.OutGrads[0], nil))}
	})
	expm1Op = floatOp("Expm1", func(g *eager.Grad) []*tensor.Tensor {
		// e^x from x, not y + 1: that cancels where x is very negative
		// (e^-20 to 8 digits, e^-104 as 0), where ELU's gradient lives.
		return []*tensor.Tensor{chain(step(expOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})
	erfOp = floatOp("Erf", func(g *eager.Grad) []*tensor.Tensor { // (2/√π)·e^(-x²)
		return []*tensor.Tensor{gaussianGrad(g.Inputs[0], g.OutGrads[0], false)}
	})
	erfinvOp = floatOp("Erfinv", func(g *eager.Grad) []*tensor.Tensor {
		// √π/2·e^(y²), y = erfinv(x): ∞ at ±1.
		return []*tensor.Tensor{gaussianGrad(g.Outputs[0], g.OutGrads[0], true)}
	})
	erfinvOp.GradReads = eager.ReadsOutputs
	// Rounding is piecewise constant: like TensorFlow, it blocks gradients.
	ceilOp = floatOp("Ceil", nil)
	floorOp = floatOp("Floor", nil)
	roundOp = floatOp("Round", nil)
	isFiniteOp = eager.Register(&eager.Op{
		Name: "IsFinite", Inputs: 1, DTypes: floatTypes, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(tensor.Bool, c.Inputs[0].Shape()) },
	})
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

// Erfinv returns the inverse error function: y with erf(y) = x, ±∞ at
// ±1, NaN outside [-1, 1] (Wichura's rational approximations, AS241, as
// Go's math.Erfinv; float32 through float64, rounded once). Its gradient
// is √π/2·e^(y²). Floats.
func Erfinv(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(erfinvOp, nil, x) }

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
