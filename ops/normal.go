package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The complementary error function and the standard normal distribution:
// Erfc, Erfcx, Ndtr, LogNdtr and Ndtri (TensorFlow's erfc, ndtr, log_ndtr
// and ndtri; SciPy's and torch.special's, erfcx too). float64 within a few
// units in the last place of mpmath's values everywhere, tails included
// (internal/mathx; the special-value comparison holds them to it); float32
// and the half types computed in float64 and rounded once. Each gradient
// is made of ops, so they go to any order.

var erfcOp, erfcGradOp, erfcxOp, erfcxGradOp, ndtrOp, ndtrGradOp, logNdtrOp, logNdtrGradOp, ndtriOp, ndtriGradOp *eager.Op

func init() {
	erfcOp, erfcGradOp = inputGradOps("Erfc", erfcSecond)
	erfcxOp, erfcxGradOp = inputGradOps("Erfcx", erfcxSecond)
	ndtrOp, ndtrGradOp = inputGradOps("Ndtr", ndtrSecond)
	logNdtrOp, logNdtrGradOp = inputGradOps("LogNdtr", logNdtrSecond)
	ndtriOp = floatOp("Ndtri", func(g *eager.Grad) []*tensor.Tensor { // dy·√(2π)·e^(y²/2)
		return []*tensor.Tensor{ndtriGrad(g.Outputs[0], g.OutGrads[0])}
	})
	ndtriOp.GradReads = eager.ReadsOutputs
	// NdtriGrad(y, dy) = dy·√(2π)·e^(y²/2) from Ndtri's output y
	// (mathx.NdtriDeriv); its gradient in y is NdtriGrad(y, y·dy·g).
	ndtriGradOp = outputGradOp("NdtriGrad", "y", ndtriGrad, func(y, dy, g *tensor.Tensor) *tensor.Tensor {
		var t temps
		defer t.release()
		return ndtriGrad(y, t.keep(Mul(y, t.keep(Mul(dy, g)))))
	})
}

// The gradient ops ErfcGrad(x, dy), ErfcxGrad, NdtrGrad and LogNdtrGrad
// are dy times the derivative, each computed as internal/mathx's
// ErfcDeriv, ErfcxDeriv, NdtrDeriv and LogNdtrDeriv do: x² carried in two
// parts (its rounding moved e^(-x²) by 2x² ulps), erfcx' without its
// cancellation, φ/Φ where both underflow. Their own gradients (the second
// derivatives) are ops:

// erfcSecond: erfc” = -2x·erfc', so g·dy·erfc” = ErfcGrad(x, -2x·dy·g).
func erfcSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	return eager.Run1(erfcGradOp, nil, x, t.keep(Mul(t.keep(scaled(x, -2)), t.keep(Mul(dy, g)))))
}

// ndtrSecond: φ' = -x·φ.
func ndtrSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	return eager.Run1(ndtrGradOp, nil, x, t.keep(Mul(t.keep(Neg(x)), t.keep(Mul(dy, g)))))
}

// erfcxSecond: erfcx” = 2·erfcx + 2x·erfcx' (which cancels x² times for
// large x).
func erfcxSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	dg := t.keep(Mul(dy, g))
	return Add(t.keep(Mul(t.keep(scaled(dg, 2)), t.keep(Erfcx(x)))), t.keep(eager.Run1(erfcxGradOp, nil, x, t.keep(Mul(t.keep(scaled(x, 2)), dg)))))
}

// logNdtrSecond: with h = (ln Φ)', h' = -h·(x + h) (which cancels x²
// times toward -∞, where x + h is about -1/x).
func logNdtrSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	h := t.keep(eager.Run1(logNdtrGradOp, nil, x, t.keep(OnesLike(x))))
	return Mul(t.keep(Mul(dy, g)), t.keep(Neg(t.keep(Mul(h, t.keep(Add(x, h)))))))
}

func ndtriGrad(y, dy *tensor.Tensor) *tensor.Tensor { return eager.Run1(ndtriGradOp, nil, y, dy) }

// gaussianGrad is dy·k·e^(-a·v²) for a = 1, v = x: Erf's derivative
// (-ErfcGrad), and for a = -1, v = y: Erfinv's (1/ErfcGrad's), each x²
// in two parts (ErfcGrad's kernel).
func gaussianGrad(v, dy *tensor.Tensor, inverse bool) *tensor.Tensor {
	if !inverse { // (2/√π)·e^(-x²)
		n := Neg(dy)
		defer releaseTemp(n)
		return eager.Run1(erfcGradOp, nil, v, n)
	}
	m := FullLike(v, -1) // √π/2·e^(y²) = -1/erfc'(y)
	defer releaseTemp(m)
	return chain(step(erfcGradOp, v, m), step(divOp, dy, nil))
}

// Erfc returns the complementary error function 1 - erf(x), without
// 1 - erf's cancellation: erfc(10) = 2.09e-45 (1 - Erf(10) is 0); 0 past
// x ≈ 27.2, 2 at -∞, NaN for NaN. Its gradient is -(2/√π)·e^(-x²).
// Floats.
func Erfc(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(erfcOp, nil, x) }

// Erfcx returns the scaled complementary error function e^(x²)·erfc(x),
// which neither underflows nor overflows for x ≥ 0 (about 1/(x√π) for
// large x, where erfc is 0); +∞ below x ≈ -26.6, 0 at +∞. Its gradient
// 2x·erfcx(x) - 2/√π is one op (ErfcxGrad), from 1 on by the continued
// fraction that formula cancels against (-5.64e-17 at 1e8, where the
// formula gives 0). Floats.
func Erfcx(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(erfcxOp, nil, x) }

// Ndtr returns Φ(x), the standard normal distribution function (the
// probability that a standard normal variable is at most x), accurate in
// the lower tail to its last digits (Φ(-30) = 4.9067e-198; 0 below x ≈
// -38.5). Its gradient is the normal density e^(-x²/2)/√(2π). Floats.
func Ndtr(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(ndtrOp, nil, x) }

// LogNdtr returns ln Φ(x), finite wherever x is: where Φ underflows too
// (ln Φ(-40) = -804.608), and to its digits where Φ nears 1 (ln Φ(10) =
// -7.62e-24); -∞ at -∞. Its gradient φ(x)/Φ(x) is one op (LogNdtrGrad):
// the quotient above 0, √(2/π)/erfcx(-x/√2) below, finite everywhere
// (about -x toward -∞). Floats.
func LogNdtr(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(logNdtrOp, nil, x) }

// Ndtri returns Φ⁻¹(p), the standard normal distribution's quantile
// function (the probit): y with Φ(y) = p, -∞ at 0, +∞ at 1, NaN outside
// [0, 1] (Wichura's AS241 from p itself, so small p keep their digits:
// Φ⁻¹(1e-300) = -37.0471). Its gradient is √(2π)·e^(y²/2). Floats.
func Ndtri(p *tensor.Tensor) *tensor.Tensor { return eager.Run1(ndtriOp, nil, p) }
