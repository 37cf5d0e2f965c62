package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The piecewise-linear activations: leaky and parametric rectifiers,
// Relu6 and the hard sigmoid and swish of MobileNetV3. Each is one op
// forward and one backward (a pass over memory each), as PyTorch's and
// TensorFlow's kernels are; their conventions at the kinks are PyTorch's.

// Prelu returns x where x > 0 and alpha·x elsewhere, alpha broadcast
// against x (a slope per channel: [C] against NHWC's [N H W C], or
// [C 1 1] against NCHW's): Keras' PReLU and torch.nn.PReLU, whose alpha
// is learned. NaN stays NaN. The gradient for x is 1 where x > 0 and
// alpha elsewhere (alpha at 0, as PyTorch's); for alpha min(x, 0), summed
// over the dimensions alpha was broadcast along. Floats of one dtype,
// broadcastable shapes; a *tensor.Error otherwise.
func Prelu(x, alpha *tensor.Tensor) *tensor.Tensor { return eager.Run1(preluOp, nil, x, alpha) }

// LeakyRelu returns x where x > 0 and alpha·x elsewhere: Prelu with one
// constant slope (TensorFlow's LeakyRelu, PyTorch's leaky_relu). Floats.
func LeakyRelu(x *tensor.Tensor, alpha float64) *tensor.Tensor {
	needInputs("LeakyRelu", x)
	defer asOp("LeakyRelu")
	a := ScalarLike(x, alpha)
	y := Prelu(x, a)
	releaseTemp(a)
	return y
}

// Relu6 returns min(max(x, 0), 6) (MobileNet's); NaN stays NaN. Its
// gradient passes dy where 0 < x < 6 (0 at both kinks, as PyTorch's
// hardtanh). Floats.
func Relu6(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(relu6Op, nil, x) }

// HardSigmoid returns min(max(x/6 + 1/2, 0), 1), PyTorch's hardsigmoid
// and Keras 3's hard_sigmoid (Keras 2's was 0.2x + 0.5); NaN stays NaN.
// Its gradient is dy/6 where -3 < x < 3, else 0. Floats.
func HardSigmoid(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(hardSigmoidOp, nil, x) }

// HardSwish returns x·HardSigmoid(x) (MobileNetV3's h-swish, Keras'
// hard_silu): 0 below -3, x above 3, x(x+3)/6 between. Its gradient is 0
// below -3, x/3 + 1/2 from -3 to 3 (both included, as PyTorch's), 1
// above. Floats.
func HardSwish(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(hardSwishOp, nil, x) }

var preluOp, preluSlopeOp, relu6Op, relu6GradOp, hardSigmoidOp, hardSigmoidGradOp, hardSwishOp, hardSwishGradOp *eager.Op

func init() {
	preluOp = binaryOpOf("Prelu", floatTypes, func(g *eager.Grad) []*tensor.Tensor {
		x, a, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return chain(step(preluSlopeOp, x, a), step(mulOp, dy, nil)) }),
			when(g.Needs[1], func() *tensor.Tensor {
				zero := ScalarLike(x, 0)
				defer releaseTemp(zero)
				return chain(step(minOp, x, zero), step(mulOp, dy, nil))
			}),
		}
	})
	preluOp.GradReads = eager.ReadsInputs
	// PreluSlope(x, alpha) is Prelu's derivative in x: 1 where x > 0,
	// alpha elsewhere. Constant in x; in alpha, 1 where x <= 0 (or NaN).
	preluSlopeOp = binaryOpOf("PreluSlope", floatTypes, func(g *eager.Grad) []*tensor.Tensor {
		x, gy := g.Inputs[0], g.OutGrads[0]
		return []*tensor.Tensor{nil, when(g.Needs[1], func() *tensor.Tensor {
			zero := ScalarLike(x, 0)
			defer releaseTemp(zero)
			return Sub(gy, Mul(gy, eager.Run1(preluSlopeOp, nil, x, zero)))
		})}
	})

	// The kinked units' backward ops, from x: Relu6Grad(x, dy) = dy where
	// 0 < x < 6; HardSigmoidGrad(x, dy) = dy/6 where -3 < x < 3;
	// HardSwishGrad(x, dy) = dy·h'(x). Each is linear in dy; in x, the
	// first two are constant and HardSwish's slope is x/3 + 1/2 between
	// the kinks, its derivative 1/3 there: twice HardSigmoidGrad's.
	relu6Op, relu6GradOp = inputGradOps("Relu6", noSecond)
	hardSigmoidOp, hardSigmoidGradOp = inputGradOps("HardSigmoid", noSecond)
	hardSwishOp, hardSwishGradOp = inputGradOps("HardSwish", func(x, dy, g *tensor.Tensor) *tensor.Tensor {
		return scaled(eager.Run1(hardSigmoidGradOp, nil, x, Mul(g, dy)), 2)
	})
}

// noSecond is the second derivative of a piecewise-linear function: none.
func noSecond(x, dy, g *tensor.Tensor) *tensor.Tensor { return nil }
