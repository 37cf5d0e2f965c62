package ops

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The trigonometric functions besides Sin and Cos, their inverses, the
// hyperbolic functions and theirs, Atan2, Hypot and LogAddExp, and the
// logarithms and exponential of bases 2 and 10: elementwise functions of floats
// (NumPy's and C's names and special cases), each a tensor of x's dtype
// and shape (the binary ones broadcast as Add). float64 within a few
// units in the last place (the special-value comparison with PyTorch,
// internal/difftest, holds them to it); float32 and the half types
// computed in float64 and rounded once.

var tanOp, asinOp, acosOp, atanOp, sinhOp, coshOp, asinhOp, acoshOp, atanhOp, log2Op, log10Op, exp2Op, atan2Op, hypotOp, logAddExpOp *eager.Op

func init() {
	// Each rule as PyTorch's derivatives.yaml states it (the same
	// functions of x or of the result), its elementwise chain one kernel
	// where chain fuses it.
	tanOp = floatOp("Tan", func(g *eager.Grad) []*tensor.Tensor { // dy·(1 + y²)
		y := g.Outputs[0]
		one := ScalarLike(y, 1)
		defer releaseTemp(one)
		return []*tensor.Tensor{chain(step(squareOp, y), step(addOp, nil, one), step(mulOp, g.OutGrads[0], nil))}
	})
	tanOp.GradReads = eager.ReadsOutputs
	asinOp = floatOp("Asin", func(g *eager.Grad) []*tensor.Tensor { // dy/√(1 - x²)
		return []*tensor.Tensor{unitCircleGrad(g, false)}
	})
	acosOp = floatOp("Acos", func(g *eager.Grad) []*tensor.Tensor { // -dy/√(1 - x²)
		return []*tensor.Tensor{unitCircleGrad(g, true)}
	})
	atanOp = floatOp("Atan", func(g *eager.Grad) []*tensor.Tensor { // dy/(1 + x²)
		x := g.Inputs[0]
		one := ScalarLike(x, 1)
		defer releaseTemp(one)
		return []*tensor.Tensor{chain(step(squareOp, x), step(addOp, nil, one), step(divOp, g.OutGrads[0], nil))}
	})
	sinhOp = floatOp("Sinh", func(g *eager.Grad) []*tensor.Tensor { // dy·cosh x
		return []*tensor.Tensor{chain(step(coshOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})
	coshOp = floatOp("Cosh", func(g *eager.Grad) []*tensor.Tensor { // dy·sinh x
		return []*tensor.Tensor{chain(step(sinhOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})
	asinhOp = floatOp("Asinh", func(g *eager.Grad) []*tensor.Tensor { // dy/√(x² + 1)
		x := g.Inputs[0]
		one := ScalarLike(x, 1)
		defer releaseTemp(one)
		return []*tensor.Tensor{chain(step(squareOp, x), step(addOp, nil, one), step(rsqrtOp, nil), step(mulOp, g.OutGrads[0], nil))}
	})
	acoshOp = floatOp("Acosh", func(g *eager.Grad) []*tensor.Tensor { // dy/√(x² - 1)
		return []*tensor.Tensor{acoshGrad(g)}
	})
	atanhOp = floatOp("Atanh", func(g *eager.Grad) []*tensor.Tensor { // dy/((1 - x)(1 + x))
		var t temps
		defer t.release()
		return []*tensor.Tensor{chain(append(oneMinusSquare(&t, g.Inputs[0]), step(divOp, g.OutGrads[0], nil))...)}
	})
	log2Op = floatOp("Log2", func(g *eager.Grad) []*tensor.Tensor { return []*tensor.Tensor{logBaseGrad(g, math.Ln2)} })
	log10Op = floatOp("Log10", func(g *eager.Grad) []*tensor.Tensor { return []*tensor.Tensor{logBaseGrad(g, math.Ln10)} })
	exp2Op = floatOp("Exp2", func(g *eager.Grad) []*tensor.Tensor { // dy·y·ln 2
		y := g.Outputs[0]
		ln2 := ScalarLike(y, math.Ln2)
		defer releaseTemp(ln2)
		return []*tensor.Tensor{chain(step(mulOp, y, ln2), step(mulOp, g.OutGrads[0], nil))}
	})
	exp2Op.GradReads = eager.ReadsOutputs

	atan2Op = binaryOpOf("Atan2", floatTypes, func(g *eager.Grad) []*tensor.Tensor {
		// d/dy = x/(x² + y²), d/dx = -y/(x² + y²): NaN at (0, 0), as
		// PyTorch's.
		y, x, dz := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		r2 := Add(Square(y), Square(x))
		defer releaseTemp(r2)
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return chain(step(divOp, x, r2), step(mulOp, dz, nil)) }),
			when(g.Needs[1], func() *tensor.Tensor { return chain(step(divOp, y, r2), step(mulOp, dz, nil), step(negOp, nil)) }),
		}
	})
	atan2Op.GradReads = eager.ReadsInputs
	logAddExpOp = binaryOpOf("LogAddExp", floatTypes, func(g *eager.Grad) []*tensor.Tensor {
		// d/da = σ(a - b), d/db = σ(b - a): NaN where a = b = ±∞, as
		// PyTorch's e^(a - result).
		a, b, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return chain(step(subOp, a, b), step(sigmoidOp, nil), step(mulOp, dy, nil)) }),
			when(g.Needs[1], func() *tensor.Tensor { return chain(step(subOp, b, a), step(sigmoidOp, nil), step(mulOp, dy, nil)) }),
		}
	})
	logAddExpOp.GradReads = eager.ReadsInputs
	hypotOp = binaryOpOf("Hypot", floatTypes, func(g *eager.Grad) []*tensor.Tensor {
		// d/da = a/h, d/db = b/h: NaN at (0, 0), as PyTorch's.
		a, b, h, dy := g.Inputs[0], g.Inputs[1], g.Outputs[0], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return chain(step(divOp, a, h), step(mulOp, dy, nil)) }),
			when(g.Needs[1], func() *tensor.Tensor { return chain(step(divOp, b, h), step(mulOp, dy, nil)) }),
		}
	})
}

// unitCircleGrad is Asin's gradient dy/√(1 - x²), negated for Acos's;
// NaN outside [-1, 1], ±∞ at its ends.
func unitCircleGrad(g *eager.Grad, negate bool) *tensor.Tensor {
	var t temps
	defer t.release()
	links := append(oneMinusSquare(&t, g.Inputs[0]), step(rsqrtOp, nil), step(mulOp, g.OutGrads[0], nil))
	if negate {
		links = append(links, step(negOp, nil))
	}
	return chain(links...)
}

// oneMinusSquare are the links of 1 - x² as (1 - x)·(1 + x): near |x| =
// 1 the factor that vanishes is exact (Sterbenz), where 1 - x² would
// keep only the digits x² lost (1e-7 relative at x = 1 - 1e-10). The
// second factor's tensor goes to t.
func oneMinusSquare(t *temps, x *tensor.Tensor) []link {
	one := t.keep(ScalarLike(x, 1))
	return []link{step(subOp, one, x), step(mulOp, nil, t.keep(Add(one, x)))}
}

// acoshGrad is Acosh's gradient dy/√(x² - 1) as dy/√(x - 1)·1/√(x + 1),
// which neither cancels near 1, as x² - 1 does, nor overflows past
// 1.3e154; NaN below 1, where Acosh is.
func acoshGrad(g *eager.Grad) *tensor.Tensor {
	var t temps
	defer t.release()
	x := g.Inputs[0]
	one := t.keep(ScalarLike(x, 1))
	up := t.keep(Rsqrt(t.keep(Add(x, one))))
	return chain(step(subOp, x, one), step(rsqrtOp, nil), step(mulOp, nil, up), step(mulOp, g.OutGrads[0], nil))
}

// logBaseGrad is the gradient of the logarithm of base b, dy/(x·ln b).
func logBaseGrad(g *eager.Grad, lnB float64) *tensor.Tensor {
	x := g.Inputs[0]
	k := ScalarLike(x, lnB)
	defer releaseTemp(k)
	return chain(step(mulOp, x, k), step(divOp, g.OutGrads[0], nil))
}

// Tan returns tan(x). Floats.
func Tan(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(tanOp, nil, x) }

// Asin returns arcsin(x) in [-π/2, π/2], NaN outside [-1, 1]. Floats.
func Asin(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(asinOp, nil, x) }

// Acos returns arccos(x) in [0, π], NaN outside [-1, 1]. Floats.
func Acos(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(acosOp, nil, x) }

// Atan returns arctan(x) in [-π/2, π/2]. Floats.
func Atan(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(atanOp, nil, x) }

// Sinh returns the hyperbolic sine. Floats.
func Sinh(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(sinhOp, nil, x) }

// Cosh returns the hyperbolic cosine. Floats.
func Cosh(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(coshOp, nil, x) }

// Asinh returns the inverse hyperbolic sine. Floats.
func Asinh(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(asinhOp, nil, x) }

// Acosh returns the inverse hyperbolic cosine, NaN below 1. Floats.
func Acosh(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(acoshOp, nil, x) }

// Atanh returns the inverse hyperbolic tangent: ±∞ at ±1, NaN beyond.
// Floats.
func Atanh(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(atanhOp, nil, x) }

// Log2 returns the base-2 logarithm, exact at powers of 2 (-Inf at 0,
// NaN below). Floats.
func Log2(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(log2Op, nil, x) }

// Log10 returns the base-10 logarithm, exact at powers of 10 (-Inf at
// 0, NaN below). Floats.
func Log10(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(log10Op, nil, x) }

// Exp2 returns 2^x, exact at integers. Floats.
func Exp2(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(exp2Op, nil, x) }

// Atan2 returns the angle of the point (x, y) from the positive x axis,
// in [-π, π], with C's special cases (the signs of zeros and infinities
// choose the quadrant: Atan2(+0, -0) is π, Atan2(-0, -1) is -π). y and x
// broadcast as Add. Floats.
func Atan2(y, x *tensor.Tensor) *tensor.Tensor { return eager.Run1(atan2Op, nil, y, x) }

// Hypot returns √(a² + b²) without overflow or underflow in the squares
// (+Inf where either is infinite, even with a NaN). a and b broadcast as
// Add. Floats.
func Hypot(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(hypotOp, nil, a, b) }

// LogAddExp returns log(e^a + e^b) without overflow or underflow in the
// exponentials: max(a, b) + log1p(e^-|a-b|), a + ln 2 where a = b (±∞
// included). a and b broadcast as Add. Floats.
func LogAddExp(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(logAddExpOp, nil, a, b) }
