package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The gamma family: Lgamma, Digamma, Polygamma and the Hurwitz zeta
// function, elementwise functions of floats with C's, SciPy's and
// PyTorch's special cases (internal/mathx documents each). float64 within
// a few units in the last place of the results computed to 300 bits
// (internal/mathx's tests; the special-value comparison holds them to
// mpmath's); float32 and the half types computed in float64 and rounded
// once. Each derivative is the next function of the family, so that
// gradients go to any order.

var lgammaOp, digammaOp, polygammaOp, zetaOp *eager.Op

func init() {
	lgammaOp = floatOp("Lgamma", func(g *eager.Grad) []*tensor.Tensor { // dy·ψ(x)
		return []*tensor.Tensor{chain(step(digammaOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})
	digammaOp = floatOp("Digamma", func(g *eager.Grad) []*tensor.Tensor { // dy·ψ⁽¹⁾(x)
		x := g.Inputs[0]
		one := ScalarLike(x, 1)
		defer releaseTemp(one)
		return []*tensor.Tensor{chain(step(polygammaOp, one, x), step(mulOp, g.OutGrads[0], nil))}
	})
	polygammaOp = binaryOpOf("Polygamma", floatTypes, func(g *eager.Grad) []*tensor.Tensor {
		// d/dx ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁺¹⁾(x); n, an integer, has none.
		n, x := g.Inputs[0], g.Inputs[1]
		return []*tensor.Tensor{nil, when(g.Needs[1], func() *tensor.Tensor {
			next := plusOne(n)
			defer releaseTemp(next)
			return chain(step(polygammaOp, next, x), step(mulOp, g.OutGrads[0], nil))
		})}
	})
	zetaOp = binaryOpOf("Zeta", floatTypes, func(g *eager.Grad) []*tensor.Tensor {
		// d/dq ζ(s, q) = -s·ζ(s+1, q); none in s, as TensorFlow's.
		s, q := g.Inputs[0], g.Inputs[1]
		return []*tensor.Tensor{nil, when(g.Needs[1], func() *tensor.Tensor {
			next := plusOne(s)
			defer releaseTemp(next)
			return chain(step(zetaOp, next, q), step(mulOp, s, nil), step(mulOp, g.OutGrads[0], nil), step(negOp, nil))
		})}
	})
	for _, op := range []*eager.Op{lgammaOp, digammaOp, polygammaOp, zetaOp} {
		op.GradReads = eager.ReadsInputs
	}
	polygammaOp.NoGrad, zetaOp.NoGrad = []int{0}, []int{0}
}

// plusOne is x + 1.
func plusOne(x *tensor.Tensor) *tensor.Tensor {
	one := ScalarLike(x, 1)
	defer releaseTemp(one)
	return Add(x, one)
}

// Lgamma returns ln|Γ(x)|: +∞ at 0, the negative integers and ±∞, NaN
// for NaN (C's lgamma). Its gradient is Digamma. Floats.
func Lgamma(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(lgammaOp, nil, x) }

// Digamma returns ψ(x) = Γ'(x)/Γ(x): ψ(±0) = ∓∞, NaN at the negative
// integers and -∞, +∞ at +∞ (PyTorch's and SciPy's). Within 2 ulps for
// x > 0 in float64, about ψ's zero 1.4616... too; for x < 0 the
// reflection ψ(1 - x) - π·cot(πx) cancels near ψ's negative zeros. Its
// gradient is Polygamma(1, x). Floats.
func Digamma(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(digammaOp, nil, x) }

// Polygamma returns ψ⁽ⁿ⁾(x), the nth derivative of Digamma: Digamma for
// n = 0, (-1)ⁿ⁺¹·n!·ζ(n+1, x) past it (Zeta), (-1)ⁿ⁺¹·∞ at 0 and the
// negative integers (PyTorch's), NaN at -∞. Its gradient is Polygamma(n
// + 1, x). Floats; n in [0, 170] (n! is finite in float64 to 170), else
// a *tensor.Error.
func Polygamma(n int, x *tensor.Tensor) *tensor.Tensor {
	needInputs("Polygamma", x)
	defer asOp("Polygamma")
	if n < 0 || n > 170 {
		fail("Polygamma", tensor.ErrValue, []*tensor.Tensor{x}, "order n %d is outside [0, 170]", n)
	}
	k := ScalarLike(x, float64(n))
	defer releaseTemp(k)
	return eager.Run1(polygammaOp, nil, k, x)
}

// Zeta returns the Hurwitz zeta function ζ(s, q) = Σₖ₍≥₀₎ (q + k)^-s
// (Riemann's at q = 1), s and q broadcast as Add: +∞ at s = 1 and at q =
// 0 and the negative integers, NaN for s < 1, for q < 0 unless s is an
// integer, and at q = -∞ (TensorFlow's and SciPy's). Its gradient in q is
// -s·ζ(s+1, q); s gets none (as TensorFlow's). Floats of one dtype.
func Zeta(s, q *tensor.Tensor) *tensor.Tensor { return eager.Run1(zetaOp, nil, s, q) }
