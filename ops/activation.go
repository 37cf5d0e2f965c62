package ops

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Neural-net activations and helpers, composed from primitives.

// Gelu returns x·Φ(x) = x/2·(1 + erf(x/√2)), the exact form, in one pass;
// float32 with the vector Φ kernel, within the bound TestGeluFloat32
// states over the whole range (Φ's lower tail computed as such, not as
// 1 + erf, which cancels for negative x). -0 at -∞ (the limit). Its
// gradient, Φ(x) + x·φ(x) (1 and 0 at ±∞), is one op (GeluGrad) with Φ's
// tail as accurate. Floats; a *tensor.Error for other dtypes.
func Gelu(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(geluOp, nil, x) }

// GeluGrad(x, dy) = dy·(Φ(x) + x·φ(x)), φ(x) = e^(-x²/2)/√(2π), is one
// op (Φ's lower tail computed as such: Φ as (1 + erf)/2 cancels for
// negative x); its gradient for x is g·dy·g”(x), g” = φ(x)·(2 - x²).
var geluOp, geluGradOp = inputGradOps("Gelu", geluSecond)

// inputGradOps declares the float function name, whose gradient is one
// op, nameGrad(x, dy) (from the input x), and that op, whose own gradient
// for x is second(x, dy, g), written as ops (so differentiable again).
func inputGradOps(name string, second func(x, dy, g *tensor.Tensor) *tensor.Tensor) (op, grad *eager.Op) {
	run := func(x, dy *tensor.Tensor) *tensor.Tensor { return eager.Run1(grad, nil, x, dy) }
	op = floatOp(name, func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{run(g.Inputs[0], g.OutGrads[0])}
	})
	op.GradReads = eager.ReadsInputs
	return op, outputGradOp(name+"Grad", "x", run, second)
}

func geluSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	s := func(v float64) *tensor.Tensor { return ScalarLike(x, v) }
	x2 := Square(x)
	pdf := Mul(s(1/math.Sqrt(2*math.Pi)), Exp(Mul(x2, s(-0.5))))
	return Mul(Mul(g, dy), Mul(pdf, Sub(s(2), x2)))
}

// GeluTanh is the tanh approximation of Gelu used by BERT and GPT-2:
// x/2·(1 + tanh(√(2/π)·(x + 0.044715x³))), computed as x·σ(2u), u the
// tanh's argument (1 + tanh u cancels in the negative tail: every digit
// lost by x = -7 in float64), -0 at -∞ and its gradient's limits 1 and 0
// at ±∞. Floats. One op, forward and backward (GeluTanhGrad, from x),
// where the device has its kernels (the CPU, the GPU); the formula as ops
// elsewhere. Differentiable to any order.
func GeluTanh(x *tensor.Tensor) *tensor.Tensor {
	needInputs("GeluTanh", x)
	defer asOp("GeluTanh")
	if !fusedOn(geluTanhOp, x) {
		inner := Mul(ScalarLike(x, geluK), Add(x, Mul(ScalarLike(x, geluA), Mul(x, Square(x)))))
		return Mul(Mul(x, ScalarLike(x, 0.5)), Add(OnesLike(x), Tanh(inner)))
	}
	return eager.Run1(geluTanhOp, nil, x)
}

// The constants of GeluTanh: √(2/π) and the cubic's coefficient.
const geluK, geluA = 0.7978845608028654, 0.044715

// GeluTanhGrad(x, dy) = dy·g'(x), g'(x) = (1 + t)/2 + x/2·(1 - t²)·u',
// with u = √(2/π)(x + 0.044715x³), t = tanh u and u' its derivative;
// its gradient for x is g·dy·g”(x), g” = (1 - t²)·(u' + x/2·(u” -
// 2t·u'²)).
var geluTanhOp, geluTanhGradOp = inputGradOps("GeluTanh", geluTanhSecond)

func geluTanhSecond(x, dy, g *tensor.Tensor) *tensor.Tensor {
	s := func(v float64) *tensor.Tensor { return ScalarLike(x, v) }
	x2 := Square(x)
	t := Tanh(Mul(s(geluK), Add(x, Mul(s(geluA), Mul(x, x2)))))
	du := Mul(s(geluK), Add(s(1), Mul(s(3*geluA), x2)))
	d2u := Mul(s(6*geluA*geluK), x)
	sech2 := Sub(s(1), Square(t))
	second := Mul(sech2, Add(du, Mul(Mul(s(0.5), x), Sub(d2u, Mul(Mul(s(2), t), Square(du))))))
	return Mul(Mul(g, dy), second)
}

// fusedOn reports whether op, one op standing for several (a fused
// kernel), has a kernel for x's device and dtype, a half dtype's through
// float32; where not, its caller runs the ops spelled out.
func fusedOn(op *eager.Op, x *tensor.Tensor) bool {
	kind := x.Device().Kind()
	return op.Kernel(kind, x.DType()) != nil || x.DType().IsHalf() && op.Kernel(kind, tensor.Float32) != nil
}

// Softplus returns log(1 + e^x), computed as max(x, 0) + log1p(e^-|x|) so
// that it neither overflows nor loses small values (float32 through
// float64, rounded once). Its gradient is sigmoid(x) everywhere, 1/2 at 0.
// Floats; a *tensor.Error for other dtypes.
func Softplus(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(softplusOp, nil, x) }

var softplusOp = func() *eager.Op {
	op := floatOp("Softplus", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{chain(step(sigmoidOp, g.Inputs[0]), step(mulOp, g.OutGrads[0], nil))}
	})
	op.GradReads = eager.ReadsInputs
	return op
}()

// DataFormat names where the feature dimension sits in image tensors: NHWC
// (the zero value, features last, TensorFlow's default) or NCHW
// (features after the batch, PyTorch's).
type DataFormat uint8

// The two layouts of image batches.
const (
	NHWC DataFormat = iota // features last (TensorFlow's default)
	NCHW                   // features after the batch (PyTorch's)
)

func (f DataFormat) String() string {
	if f == NCHW {
		return "NCHW"
	}
	return "NHWC"
}

// BiasAdd adds bias: [C] to x along its feature dimension: the last for
// NHWC, dimension 1 for NCHW (x rank >= 2).
func BiasAdd(x, bias *tensor.Tensor, format DataFormat) *tensor.Tensor {
	needInputs("BiasAdd", x, bias)
	defer asOp("BiasAdd")
	in := []*tensor.Tensor{x, bias}
	if bias.Rank() != 1 || x.Rank() < 2 {
		fail("BiasAdd", tensor.ErrRank, in, "needs x of rank >= 2 and a vector bias")
	}
	if format == NHWC {
		if x.Dim(-1) != bias.Dim(0) {
			fail("BiasAdd", tensor.ErrShape, in, "bias has %d entries for %d features", bias.Dim(0), x.Dim(-1))
		}
		return Add(x, bias)
	}
	if x.Dim(1) != bias.Dim(0) {
		fail("BiasAdd", tensor.ErrShape, in, "bias has %d entries for %d features", bias.Dim(0), x.Dim(1))
	}
	shape := make([]int, x.Rank()-1)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = bias.Dim(0)
	return Add(x, Reshape(bias, shape...))
}

// L2Normalize divides x by its L2 norm along axis: x / sqrt(max(sum(x²),
// epsilon)). Floats.
func L2Normalize(x *tensor.Tensor, axis int, epsilon float64) *tensor.Tensor {
	defer asOp("L2Normalize")
	ss := Reduce(Square(x), Reduction{Kind: ReduceSum, Dims: []int{axis}, KeepDims: true})
	return Mul(x, Rsqrt(Maximum(ss, ScalarLike(ss, epsilon))))
}

// Dropout zeroes each element of x with probability rate and scales the
// rest by 1/(1-rate), drawing the mask from rng (so a seed reproduces it).
// rate 0 returns x. Floats; panics with a *tensor.Error for rate outside
// [0, 1).
func Dropout(x *tensor.Tensor, rate float64, rng *tensor.RNG) *tensor.Tensor {
	needInputs("Dropout", x)
	defer asOp("Dropout")
	return dropWith("Dropout", x, rate, func(p float64) *tensor.Tensor {
		return tensor.RandBernoulliOn(x.Device(), rng, x.DType(), p, x.Shape()...)
	})
}

// dropWith is op's dropout of x at rate, its keep mask (ones where an
// element stays, of x's dtype and shape) drawn by draw with probability
// p = 1-rate of a one, after checking x and rate.
func dropWith(op string, x *tensor.Tensor, rate float64, draw func(p float64) *tensor.Tensor) *tensor.Tensor {
	needFloats(op, x)
	if !(rate >= 0 && rate < 1) {
		fail(op, tensor.ErrValue, []*tensor.Tensor{x}, "rate %v is outside [0, 1)", rate)
	}
	if rate == 0 {
		return x
	}
	keep := draw(1 - rate)
	scale := ScalarLike(x, 1/(1-rate))
	mask := Mul(keep, scale)
	if keep.Traced() == nil {
		keep.Release() // no tape records the product: keep was nobody's input
		scale.Release()
	}
	return Mul(x, scratch(mask))
}

// RngUniform is XLA's RngUniform: values uniform in [lo, hi) of a float
// dtype, from the seeded counter-based generator rng.
func RngUniform(rng *tensor.RNG, dt tensor.DType, lo, hi float64, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(rng, dt, lo, hi, shape...)
}

// RngNormal is XLA's RngNormal: values with mean mu and standard deviation
// sigma, of a float dtype.
func RngNormal(rng *tensor.RNG, dt tensor.DType, mu, sigma float64, shape ...int) *tensor.Tensor {
	defer asOp("RngNormal")
	z := tensor.RandNormal(rng, dt, shape...)
	return Add(Mul(z, ScalarLike(z, sigma)), ScalarLike(z, mu))
}

// RngBernoulli is XLA's RngBernoulli: 1 with probability p, else 0, of any
// dtype (true/false for Bool).
func RngBernoulli(rng *tensor.RNG, dt tensor.DType, p float64, shape ...int) *tensor.Tensor {
	return tensor.RandBernoulli(rng, dt, p, shape...)
}
