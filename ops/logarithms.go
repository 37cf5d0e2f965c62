package ops

import "github.com/eagerflow/eagerflow/tensor"

// The logarithms that entropies, KL divergences and likelihoods take:
// x·log y with 0·log 0 = 0 (Xlogy, Xlog1py) and the log-odds (Logit),
// composed of Log, Log1p, Atanh and selections, so they run on every
// device and differentiate to any order. Where a selection picks one of
// two forms, each form is evaluated at an operand the other form's
// elements cannot make infinite, so that the unpicked one's gradient (0
// times it) is 0, not NaN.

// Xlogy returns x·log(y), 0 where x is 0 and y is not NaN (SciPy's and
// PyTorch's xlogy; TensorFlow's returns 0 for a NaN y too): the terms of
// an entropy -Σ p·log p and a KL divergence Σ p·log(p/q) where p has
// zeros. x and y broadcast as Add; floats, one dtype. Gradients log y in
// x and x/y in y, both 0 where x is 0 and log y is not finite (y ≤ 0 or
// +∞; PyTorch's convention, and TensorFlow's but for its 0 in x at x = 0
// for every y).
func Xlogy(x, y *tensor.Tensor) *tensor.Tensor {
	needInputs("Xlogy", x, y)
	defer asOp("Xlogy")
	return xTimes(x, y, Log, 0)
}

// Xlog1py returns x·log1p(y) = x·log(1 + y), 0 where x is 0 and y is not
// NaN (SciPy's and PyTorch's xlog1py, TensorFlow's): a Bernoulli's or a
// binomial's log-likelihood (1 - p)·log(1 - p) as Xlog1py(1 - p, -p),
// exact where p is small. Broadcast as Add; floats, one dtype. Gradients
// as Xlogy's: log1p y and x/(1 + y), both 0 where x is 0 and y ≤ -1 or
// +∞.
func Xlog1py(x, y *tensor.Tensor) *tensor.Tensor {
	needInputs("Xlog1py", x, y)
	defer asOp("Xlog1py")
	return xTimes(x, y, Log1p, -1)
}

// xTimes is x·f(y), f's pole at y = pole: where x is 0 and f(y) is not
// finite (y at or below the pole, or +∞), 0 (NaN for a NaN y), with y
// replaced by 1 inside f (finite, its slope too), so that f's infinity
// meets no zero in the value or the gradients; elsewhere the product, +0
// for a zero x.
func xTimes(x, y *tensor.Tensor, f func(*tensor.Tensor) *tensor.Tensor, pole float64) *tensor.Tensor {
	var t temps
	defer t.release()
	p := t.keep(Mul(x, y)) // the result's dtype and device
	x, y = strongAs(&t, x, p), strongAs(&t, y, p)
	zero := t.keep(ScalarLike(p, 0))
	finite := t.keep(LogicalAnd(t.keep(Gt(y, t.keep(ScalarLike(p, pole)))), t.keep(IsFinite(y))))
	bad := t.keep(LogicalAnd(t.keep(Eq(x, zero)), t.keep(LogicalNot(finite))))
	v := t.keep(Mul(x, t.keep(f(t.keep(Where(bad, t.keep(ScalarLike(p, 1)), y))))))
	return Where(bad, t.keep(Where(t.keep(Ne(y, y)), t.keep(StopGradient(y)), zero)), t.keep(Add(v, zero)))
}

// Logit returns the log-odds log(x/(1-x)), Sigmoid's inverse
// (torch.logit, SciPy's logit): -∞ at 0, +∞ at 1, NaN outside [0, 1].
// Below ¼ as log x - log1p(-x) (x keeps its digits), from ¼ on as
// 2·atanh(2x - 1) (2x - 1 exact: no log(x/(1-x)) cancelling near ½).
// Floats. Its gradient is 1/(x(1-x)). LogitEps clamps first.
func Logit(x *tensor.Tensor) *tensor.Tensor {
	needInputs("Logit", x)
	defer asOp("Logit")
	var t temps
	defer t.release()
	low := t.keep(Lt(x, t.keep(ScalarLike(x, 0.25))))
	lx := t.keep(Where(low, x, t.keep(ScalarLike(x, 0.125))))
	hx := t.keep(Where(low, t.keep(ScalarLike(x, 0.5)), x))
	small := t.keep(Sub(t.keep(Log(lx)), t.keep(Log1p(t.keep(Neg(lx))))))
	twice := t.keep(Sub(t.keep(Add(hx, hx)), t.keep(ScalarLike(x, 1))))
	rest := t.keep(Mul(t.keep(Atanh(twice)), t.keep(ScalarLike(x, 2))))
	return Where(low, small, rest)
}

// LogitEps returns Logit of x clamped to [eps, 1 - eps] (torch.logit with
// eps): finite log-odds of probabilities that reach 0 or 1; the gradient
// is 0 outside the interval. eps in [0, ½], else a *tensor.Error.
func LogitEps(x *tensor.Tensor, eps float64) *tensor.Tensor {
	needInputs("LogitEps", x)
	defer asOp("LogitEps")
	if !(eps >= 0 && eps <= 0.5) {
		fail("LogitEps", tensor.ErrValue, []*tensor.Tensor{x}, "eps %v is outside [0, 0.5]", eps)
	}
	var t temps
	defer t.release()
	return Logit(t.keep(Clip(x, t.keep(ScalarLike(x, eps)), t.keep(ScalarLike(x, 1-eps)))))
}
