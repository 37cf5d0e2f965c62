package ops

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/tensor"
)

// The smooth activations: the exponential linear units (ELU, SELU,
// CELU), the sigmoid-weighted ones (SiLU, Mish) and Softsign. Each is one
// op forward and one backward, differentiable to any order; at ±∞ they
// and their gradients take their limits (where PyTorch's formulas give
// ∞·0 = NaN, the programs' references say so).

// Elu returns x where x > 0 and e^x - 1 elsewhere (α = 1; Celu takes
// another). Its gradient is 1 where x > 0, e^x elsewhere (1 at 0).
// Floats.
func Elu(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(eluOp, nil, x) }

// Selu returns λ·x where x > 0 and λα(e^x - 1) elsewhere, with the
// self-normalizing constants λ = 1.0507009873554805 and
// α = 1.6732632423543772 (Klambauer et al. 2017; as Keras' and
// PyTorch's). Its gradient is λ or λα·e^x (λα at 0). Floats.
func Selu(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(seluOp, nil, x) }

// Celu returns x where x > 0 and α(e^(x/α) - 1) elsewhere (Barron 2017;
// PyTorch's celu), α·Elu(x/α): Elu itself for α = 1. Floats; alpha must
// be positive and finite (a *tensor.Error otherwise).
func Celu(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	needInputs("Celu", x)
	defer asOp("Celu")
	if !(alpha > 0 && !math.IsInf(alpha, 1)) {
		fail("Celu", tensor.ErrValue, []*tensor.Tensor{x}, "alpha %v is not positive and finite", alpha)
	}
	if alpha == 1 {
		return Elu(x)
	}
	inner := scaled(x, 1/alpha)
	y := Elu(inner)
	releaseTemp(inner)
	out := scaled(y, alpha)
	releaseTemp(y)
	return out
}

// Silu returns x·σ(x) (the sigmoid-weighted linear unit, Swish with β = 1;
// LLaMA's and EfficientNet's activation), -0 at -∞. Its gradient is
// σ(x)·(1 + x·(1 - σ(x))), 0 and 1 at -∞ and +∞. Floats.
func Silu(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(siluOp, nil, x) }

// Mish returns x·tanh(softplus(x)) (Misra 2019), -0 at -∞. Its gradient
// is t + x·σ(x)·(1 - t²), t = tanh(softplus(x)), 0 and 1 at -∞ and +∞.
// Floats.
func Mish(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(mishOp, nil, x) }

// Softsign returns x/(1 + |x|), ±1 at ±∞; its gradient is
// 1/(1 + |x|)². Floats.
func Softsign(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(softsignOp, nil, x) }

var eluOp, eluGradOp, seluOp, seluGradOp, siluOp, siluGradOp, mishOp, mishGradOp, softsignOp *eager.Op

func init() {
	eluOp, eluGradOp = expUnitOps("Elu", 1)
	seluOp, seluGradOp = expUnitOps("Selu", mathx.SeluScale)
	siluOp, siluGradOp = inputGradOps("Silu", siluSecond)
	mishOp, mishGradOp = inputGradOps("Mish", mishSecond)
	softsignOp = floatOp("Softsign", func(g *eager.Grad) []*tensor.Tensor { // dy/(1 + |x|)²
		x := g.Inputs[0]
		one := ScalarLike(x, 1)
		defer releaseTemp(one)
		return []*tensor.Tensor{chain(step(absOp, x), step(addOp, nil, one), step(squareOp, nil), step(divOp, g.OutGrads[0], nil))}
	})
	softsignOp.GradReads = eager.ReadsInputs
}

// expUnitOps declares an exponential linear unit, name (λx for x > 0,
// λα(e^x - 1) elsewhere: Elu's λ = α = 1, Selu's constants), and its
// backward op nameGrad(x, dy) = dy·λ where x > 0, dy·λα·e^x elsewhere,
// from the input (as PyTorch's; TensorFlow's EluGrad takes the output,
// whose y + 1 cancels: a relative error of 5e-8 by x = -20 in float64,
// every digit in float32). Its derivative in x is λα·e^x below 0, that
// is nameGrad(x, v) - λ·ReluGrad(x, v) for v = g·dy.
func expUnitOps(name string, scale float64) (op, grad *eager.Op) {
	op, grad = inputGradOps(name, func(x, dy, g *tensor.Tensor) *tensor.Tensor {
		v := Mul(g, dy)
		return Sub(eager.Run1(grad, nil, x, v), scaled(reluGrad(x, v), scale))
	})
	return op, grad
}

// siluSecond is Silu's second derivative times g·dy:
// σ(1 - σ)·(2 + x(1 - 2σ)).
func siluSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	s := Sigmoid(x)
	one := ScalarLike(x, 1)
	ds := Mul(s, Sub(one, s))
	return Mul(Mul(g, dy), Mul(ds, Add(ScalarLike(x, 2), Mul(x, Sub(one, scaled(s, 2))))))
}

// mishSecond is Mish's second derivative times g·dy: with t =
// tanh(softplus(x)), s = 1 - t² and σ = σ(x), s·σ·(2 + x(1 - σ - 2tσ)).
func mishSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	t := Tanh(Softplus(x))
	sig := Sigmoid(x)
	one := ScalarLike(x, 1)
	sech2 := Sub(one, Square(t))
	inner := Sub(Sub(one, sig), Mul(scaled(t, 2), sig))
	return Mul(Mul(g, dy), Mul(Mul(sech2, sig), Add(ScalarLike(x, 2), Mul(x, inner))))
}
