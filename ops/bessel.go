package ops

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The modified Bessel functions of the first kind of orders 0 and 1 and
// their exponentially scaled forms (SciPy's i0, i1, i0e, i1e;
// torch.special's; TensorFlow's bessel_i0, bessel_i0e, ...): a von Mises
// distribution's normalizer 2π·I₀(κ), a Kaiser window's shape. float64
// within 8 ulps of mpmath (PyTorch's: 3 to 9), float32 and the half types
// computed in float64 and rounded once (internal/mathx). Gradients are
// made of the family, to any order.

var besselI0Op, besselI1Op, besselI0eOp, besselI1eOp *eager.Op

func init() {
	besselI0Op = floatOp("BesselI0", func(g *eager.Grad) []*tensor.Tensor { // I₀' = I₁
		return []*tensor.Tensor{chain(step(besselI1Op, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})
	besselI1Op = floatOp("BesselI1", func(g *eager.Grad) []*tensor.Tensor {
		// I₁' = I₀ - I₁/x, as I₀·(1 - (I₁e/x)/I₀e): where I₀ and I₁
		// overflow the difference ∞ - ∞ would be NaN, not +∞.
		var t temps
		defer t.release()
		x := g.Inputs[0]
		ratio := t.keep(Div(t.keep(overX(&t, x)), t.keep(BesselI0e(x))))
		ratio = t.keep(Where(t.keep(IsFinite(x)), ratio, t.keep(ScalarLike(x, 0)))) // 0/0 at ±∞: its limit 0
		d := t.keep(Mul(t.keep(BesselI0(x)), t.keep(Sub(t.keep(ScalarLike(x, 1)), ratio))))
		return []*tensor.Tensor{Mul(g.OutGrads[0], d)}
	})
	besselI0eOp = floatOp("BesselI0e", func(g *eager.Grad) []*tensor.Tensor { // I₁e - sign(x)·I₀e
		var t temps
		defer t.release()
		x := g.Inputs[0]
		d := t.keep(Sub(t.keep(BesselI1e(x)), t.keep(Mul(t.keep(Sign(x)), g.Outputs[0]))))
		return []*tensor.Tensor{Mul(g.OutGrads[0], d)}
	})
	besselI1eOp = floatOp("BesselI1e", func(g *eager.Grad) []*tensor.Tensor { // I₀e - sign(x)·I₁e - I₁e/x
		var t temps
		defer t.release()
		x := g.Inputs[0]
		d := t.keep(Sub(t.keep(BesselI0e(x)), t.keep(Mul(t.keep(Sign(x)), g.Outputs[0]))))
		d = t.keep(Sub(d, t.keep(overX(&t, x))))
		return []*tensor.Tensor{Mul(g.OutGrads[0], d)}
	})
	besselI0Op.GradReads, besselI1Op.GradReads = eager.ReadsInputs, eager.ReadsInputs
}

// overX is e^-|x|·I₁(x)/x = I₁e(x)/x: below |x| = 1 by I₁(x)/x's series
// ½·Σ (x²/4)ᵏ/(k!·(k+1)!) (to k = 9, below 2⁻⁵⁶ of it there) times e^-|x|,
// so that neither 0/0 at 0 nor a quotient of cancelling differences in
// its derivative near 0 arises; above, the quotient (1 in place of x
// below 1), 0 at ±∞ (its limit).
func overX(t *temps, x *tensor.Tensor) *tensor.Tensor {
	one := t.keep(ScalarLike(x, 1))
	ax := t.keep(Abs(x))
	near := t.keep(Lt(ax, one))
	inf := t.keep(Eq(ax, t.keep(ScalarLike(x, math.Inf(1)))))
	xs := t.keep(Where(near, x, t.keep(ScalarLike(x, 0.5))))
	w := t.keep(Mul(xs, xs))
	series := t.keep(ScalarLike(x, besselOverXCoef[len(besselOverXCoef)-1]))
	for i := len(besselOverXCoef) - 2; i >= 0; i-- {
		series = t.keep(Add(t.keep(Mul(series, w)), t.keep(ScalarLike(x, besselOverXCoef[i]))))
	}
	series = t.keep(Mul(series, t.keep(Exp(t.keep(Neg(t.keep(Abs(xs))))))))
	safe := t.keep(Where(t.keep(LogicalOr(near, inf)), one, x))
	far := t.keep(Where(inf, t.keep(ScalarLike(x, 0)), t.keep(Div(t.keep(BesselI1e(safe)), safe))))
	return Where(near, series, far)
}

// besselOverXCoef are I₁(x)/x's series coefficients in x²: 1/(2·4ᵏ·k!·(k+1)!).
var besselOverXCoef = func() []float64 {
	c := make([]float64, 10)
	v := 0.5
	for k := range c {
		if k > 0 {
			v /= 4 * float64(k) * float64(k+1)
		}
		c[k] = v
	}
	return c
}()

// BesselI0 returns I₀(x), the modified Bessel function of the first kind
// of order 0: even, 1 at 0, +∞ past |x| ≈ 713.98. Its gradient is I₁.
// Floats.
func BesselI0(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(besselI0Op, nil, x) }

// BesselI1 returns I₁(x), of order 1: odd, ±∞ past |x| ≈ 713.98. Its
// gradient is I₀(x) - I₁(x)/x (½ at 0). Floats.
func BesselI1(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(besselI1Op, nil, x) }

// BesselI0e returns e^-|x|·I₀(x), finite everywhere (about 1/√(2π|x|)
// for large |x|, 0 at ±∞): ln I₀(κ) for a large κ as κ + ln BesselI0e(κ).
// Its gradient is I₁e(x) - sign(x)·I₀e(x), which cancels about 2|x| times
// for large |x| (as PyTorch's). Floats.
func BesselI0e(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(besselI0eOp, nil, x) }

// BesselI1e returns e^-|x|·I₁(x): odd, finite everywhere. Its gradient is
// I₀e(x) - I₁e(x)·(sign(x) + 1/x) (½ at 0), which cancels for large |x|
// as BesselI0e's. Floats.
func BesselI1e(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(besselI1eOp, nil, x) }
