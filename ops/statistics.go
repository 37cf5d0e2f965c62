package ops

import (
	"math"

	"github.com/eagerflow/eagerflow/tensor"
)

// LogSumExp is log Σ exp(x) over dims (all when none are given; negative
// dims count from the end), as torch.logsumexp and
// tf.math.reduce_logsumexp: x's shape without dims (KeepDims(LogSumExp,
// x, dims...) keeps them as 1). It is computed without overflow: each
// slice's maximum m is subtracted before exp and added back after log, m
// taken as 0 where it is infinite, so that a slice holding +Inf gives
// +Inf, one of -Inf alone gives -Inf, and so does an empty one. The half
// types compute in float32 and round once. Its gradient is the softmax of
// x over dims (NaN in a slice of -Inf alone, as PyTorch's). Floats; panics
// with a *tensor.Error for another dtype or a dim out of range.
func LogSumExp(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("LogSumExp", x)
	defer asOp("LogSumExp")
	needFloats("LogSumExp", x)
	w := widened(x)
	m := StopGradient(KeepDims(Amax, w, dims...))
	m = Where(IsFinite(m), m, ScalarLike(m, 0))
	s := Sum(Exp(Sub(w, m)), dims...)
	return narrowedLike(Add(Log(s), Reshape(m, s.Shape()...)), x)
}

// Var is the variance of x over dims (all when none are given; negative
// dims count from the end): the mean of the squares of x's deviations from
// its mean, as NumPy's np.var and JAX's (ddof 0), x's shape without dims
// (KeepDims(Var, x, dims...) keeps them as 1). PyTorch's torch.var divides
// by n−1 unless told correction=0: multiply by n/(n−1) for that. Two passes
// (the mean, then the deviations), so that a large mean does not cancel
// the digits of a small variance; the half types compute in float32 and
// round once. Deviations below about 1e-154 (float64) or 1e-19 (float32)
// square to subnormals or zero, and the variance underflows with them
// (Std with it). An empty reduction gives NaN. Floats; panics with a
// *tensor.Error for another dtype or a dim out of range.
func Var(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("Var", x)
	defer asOp("Var")
	needFloats("Var", x)
	return narrowedLike(variance(widened(x), dims), x)
}

// variance is Var of w, a float32 or float64 tensor, by two passes with
// the mean refined: the deviations d from the mean as rounded, m̂ = m + δ,
// are d_i = x_i - m - δ, and their mean is -δ (to the sums' rounding);
// subtracting it leaves deviations from m itself, each rounded once, so
// that their squares' mean is not off by δ² (with rows of 1e6 ± 1 in
// float32, δ is up to 1/32 and the plain two-pass variance was 64000
// ulps off; 1e4 ± 1, 70). The refinement's derivatives are 0 (mean(d) is
// mean(x) - m̂), so it is subtracted past StopGradient: the gradient is
// the plain two-pass variance's, at no cost.
func variance(w *tensor.Tensor, dims []int) *tensor.Tensor {
	d := Sub(w, KeepDims(Mean, w, dims...))
	return Mean(Square(Sub(d, StopGradient(KeepDims(Mean, d, dims...)))), dims...)
}

// Std is the standard deviation of x over dims, the square root of Var
// (NumPy's np.std, ddof 0; torch.std with correction=0). Where the
// variance is 0 (a slice of equal values, or of one) the square root has
// no derivative: its gradient there is 0, as PyTorch's, and so are its
// higher derivatives. Floats; panics with a *tensor.Error for another
// dtype or a dim out of range.
func Std(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("Std", x)
	defer asOp("Std")
	needFloats("Std", x)
	return narrowedLike(zeroAtZero(variance(widened(x), dims), Sqrt), x)
}

// Norm is the vector norm of x over dims (all when none are given;
// negative dims count from the end), as torch.linalg.vector_norm: ord 2
// the Euclidean norm sqrt(Σ x²), 1 the sum of |x|, +Inf the largest |x|
// and -Inf the smallest, 0 the count of nonzero elements (no gradient),
// any other ord > 0 (Σ |x|^ord)^(1/ord); x's shape without dims
// (KeepDims takes a closure over ord). Where a norm or an element is 0
// the derivatives through its root or power are 0, as PyTorch's first
// ones; tied largest (smallest) elements share the gradient of ±Inf. The
// half types compute in float32 and round once. Floats; panics with a
// *tensor.Error for another dtype, a negative or NaN ord other than
// -Inf, or a dim out of range.
func Norm(x *tensor.Tensor, ord float64, dims ...int) *tensor.Tensor {
	needInputs("Norm", x)
	defer asOp("Norm")
	needFloats("Norm", x)
	if !(ord >= 0 || math.IsInf(ord, -1)) {
		fail("Norm", tensor.ErrValue, []*tensor.Tensor{x}, "ord %v: want 0, a positive number or ±Inf", ord)
	}
	w := widened(x)
	var y *tensor.Tensor
	switch {
	case math.IsInf(ord, 1):
		y = Amax(Abs(w), dims...)
	case math.IsInf(ord, -1):
		y = Amin(Abs(w), dims...)
	case ord == 0:
		y = Sum(Cast(Ne(w, ScalarLike(w, 0)), w.DType()), dims...)
	case ord == 1:
		y = Sum(Abs(w), dims...)
	case ord == 2:
		y = zeroAtZero(Sum(Square(w), dims...), Sqrt)
	default:
		power := func(e float64) func(*tensor.Tensor) *tensor.Tensor {
			return func(v *tensor.Tensor) *tensor.Tensor { return Pow(v, ScalarLike(v, e)) }
		}
		y = zeroAtZero(Sum(zeroAtZero(Abs(w), power(ord)), dims...), power(1/ord))
	}
	return narrowedLike(y, x)
}

// zeroAtZero is f(v) where v is not 0 and 0 where it is, f given 1 there
// so that no derivative through it is taken at 0 (a root's or a power's
// is infinite there): the function and its derivatives of every order
// are 0 at 0, and NaN still propagates.
func zeroAtZero(v *tensor.Tensor, f func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	zero := Eq(v, ScalarLike(v, 0))
	return Where(zero, ScalarLike(v, 0), f(Where(zero, ScalarLike(v, 1), v)))
}

// needFloats fails op unless x is of a float dtype.
func needFloats(op string, x *tensor.Tensor) {
	if !x.DType().IsFloat() {
		fail(op, tensor.ErrDType, []*tensor.Tensor{x}, "needs a float tensor, got %v", x.DType())
	}
}
