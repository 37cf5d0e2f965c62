package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The regularized incomplete gamma functions: elementwise functions of
// floats (internal/mathx's IncompleteGamma documents the method), the
// Gamma distribution's CDF and its complement (a Poisson's CDF, a
// chi-square's tail). float32 and the half types are computed in float64
// and rounded once.

var igammaOp, igammacOp *eager.Op

func init() {
	grad := func(sign float64) eager.GradFunc {
		return func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{nil, when(g.Needs[1], func() *tensor.Tensor {
				d := gammaDensity(g.Inputs[0], g.Inputs[1])
				defer releaseTemp(d)
				if sign < 0 {
					return chain(step(mulOp, d, g.OutGrads[0]), step(negOp, nil))
				}
				return Mul(d, g.OutGrads[0])
			})}
		}
	}
	igammaOp = binaryOpOf("Igamma", floatTypes, grad(1))
	igammacOp = binaryOpOf("Igammac", floatTypes, grad(-1))
	for _, op := range []*eager.Op{igammaOp, igammacOp} {
		op.GradReads, op.NoGrad = eager.ReadsInputs, []int{0}
	}
}

// gammaDensity is ∂P(a, x)/∂x = x^(a-1)·e⁻ˣ/Γ(a), as exp((a-1)·ln x - x
// - ln Γ(a)) with the product 0 where a is 1 (0·ln 0 would be NaN at x =
// 0, where the density is 1).
func gammaDensity(a, x *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	am1 := t.keep(Sub(a, t.keep(ScalarLike(a, 1))))
	power := t.keep(Mul(am1, t.keep(Log(x))))
	power = t.keep(Where(t.keep(Eq(am1, t.keep(ScalarLike(am1, 0)))), t.keep(ZerosLike(power)), power))
	return Exp(t.keep(Sub(t.keep(Sub(power, x)), t.keep(Lgamma(a)))))
}

// Igamma returns the regularized lower incomplete gamma function P(a, x)
// = γ(a, x)/Γ(a) = ∫₀ˣ tᵃ⁻¹e⁻ᵗ dt/Γ(a) (torch.igamma, SciPy's gammainc,
// TensorFlow's igamma), a and x broadcast as Add: NaN for a < 0 or x < 0,
// at a = x = 0 and at a = x = +∞; 1 at a = 0 and at x = +∞; 0 at x = 0
// and at a = +∞. Within a few ulps where the result is not small, and
// where it is within what its sensitivity to a and x allows (P ≈
// xᵃ/Γ(a+1) changes by a ulps for one ulp of x); more accurate than
// PyTorch 1.13's (internal/mathx's tests and the special values against
// mpmath). Near x = a it takes about 6√a steps: a past about 10⁹ there
// gives NaN. Its gradient in x is x^(a-1)·e⁻ˣ/Γ(a); a gets none (as
// PyTorch's). Floats of one dtype.
func Igamma(a, x *tensor.Tensor) *tensor.Tensor { return eager.Run1(igammaOp, nil, a, x) }

// Igammac returns the regularized upper incomplete gamma function Q(a, x)
// = Γ(a, x)/Γ(a) = 1 - P(a, x) (torch.igammac, SciPy's gammaincc),
// computed for itself where it is small (not as 1 - P), with Igamma's
// special cases (1 - theirs) and accuracy. Its gradient in x is
// -x^(a-1)·e⁻ˣ/Γ(a). Floats of one dtype.
func Igammac(a, x *tensor.Tensor) *tensor.Tensor { return eager.Run1(igammacOp, nil, a, x) }
