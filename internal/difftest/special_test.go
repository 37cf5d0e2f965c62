package difftest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// specialCase is one op over every special value of one dtype (pairs of
// them for two operands), as special_values.py reads it: elements are
// strings, a float's being its float64 bits in hexadecimal ("0x..."), an
// integer's or a bool's its decimal value, so int64's extremes and NaN
// cross JSON intact.
type specialCase struct {
	ID    int      `json:"id"`
	Op    string   `json:"op"`
	DType string   `json:"dtype"`
	To    string   `json:"to,omitempty"` // a cast's target
	A     []string `json:"a"`
	B     []string `json:"b,omitempty"`
	Rows  int      `json:"rows,omitempty"` // a row op's: A is [Rows, len(A)/Rows]
	Grad  bool     `json:"grad,omitempty"`
}

// specialResult is the reference's: the values, "skip" where the result
// is unspecified (a NaN cast to an integer), and the operands' gradients
// of the outputs' sum.
type specialResult struct {
	ID     int        `json:"id"`
	Error  string     `json:"error,omitempty"`
	Values []string   `json:"values"`
	Grads  [][]string `json:"grads,omitempty"`
}

// specialFloats are the float values every float op meets: signed zeros,
// halves (rounding's ties), subnormals of both widths, the edges of
// exp's and float32's ranges, the extremes, infinities and NaN.
var specialFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 1.5, -2.5, 2.5, 3, -7,
	0.49999999999999994, 1e-310, 1e-40, -1e-40, 1e-8, 20, -20, 89, -104, 710, -746, 1e30, -1e30,
	math.MaxFloat32, -math.MaxFloat32, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), math.Pi}

// tameFloats make the rows of sums, products and softmaxes: every partial
// sum and product exact, so the result is one whatever the order of
// summation, and the infinities and NaN still there.
var tameFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 2.5, -7, 3, math.Inf(1), math.Inf(-1), math.NaN()}

// wideFloats make the rows of softmaxes far apart: logits whose
// exponentials overflow or underflow unless the row's maximum is taken
// off first, and gaps past float32's and float64's ranges.
var wideFloats = []float64{0, 1, -1, 100, -100, 1000, -1000, 1e4, -1e4, 88, -88, 700, -700, 1e-300}

// specialInts are each integer dtype's values: small ones of both signs
// and the bounds (where sums, products, negations and quotients wrap).
func specialInts(dt tensor.DType) []int64 {
	switch dt {
	case tensor.Uint8:
		return []int64{0, 1, 2, 3, 7, 100, 127, 128, 200, 254, 255}
	case tensor.Int32:
		return []int64{0, 1, -1, 2, -2, 3, -3, 7, -7, 100, 46341, math.MaxInt32, math.MinInt32, math.MaxInt32 - 1, math.MinInt32 + 1}
	case tensor.Bool:
		return []int64{0, 1}
	}
	return []int64{0, 1, -1, 2, -2, 3, -3, 7, -7, 100, 1 << 31, -1<<31 - 1, math.MaxInt32, math.MinInt32,
		3037000500, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}
}

// specialDTypes are the dtypes compared.
var specialDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool}

// specialOp is an op of the comparison: kinds says which dtypes take it
// (f floats, i signed integers, u Uint8, b Bool); ulps is the float
// results' allowance in units in the last place of the dtype (0: bit for
// bit, but any NaN matches any NaN); grad asks for the float64 gradients
// too.
type specialOp struct {
	name  string
	kinds string
	two   bool
	fn    func(a, b T) T
	ulps  float64
	grad  bool
	// row: a row op (A is [Rows, n]); from: its values (specialFloats
	// where nil); signedZero false where the sign of a zero result is not
	// compared (a sum's zero is +0 or -0 by its order).
	row        bool
	from       []float64
	signedZero bool
	// nearOne: ulps count in units of 1's last place where the result is
	// smaller (sin and cos near their roots, as Go's math library
	// computes them; gradients computed from the output, 1 - y²).
	nearOne, gradNearOne bool
	// weighted: the gradients are of the outputs weighted by their
	// columns' numbers (columnWeights), not of their plain sum.
	weighted bool
	// cond adds ulps for the operand x where the function's condition
	// number is large: an argument rounded before an exponential's tail
	// moves the result by |d ln f/d ln x| of its roundings (the
	// gradient's as much, its tail the same exponential's).
	cond func(x float64) float64
	// cond2 is cond of both operands (a two-operand op's).
	cond2 func(a, b float64) float64
}

// geluTanhCond is GeluTanh's: σ(2u)'s tail moves |2u| times u's few
// roundings.
func geluTanhCond(x float64) float64 { return 4 * math.Abs(2*0.7978845608028654*(x+0.044715*x*x*x)) }

// geluCond is Gelu's: erfc(z)'s tail moves 2z² times z = x/√2's
// rounding.
func geluCond(x float64) float64 { return 2 * x * x }

// lgammaCond is ln|Γ|'s condition number |x·ψ(x)/ln|Γ(x)||, large near
// its zeros (1, 2 and one between each pair of negative integers): the
// reflection's terms cancel near the negative ones.
func lgammaCond(x float64) float64 {
	c := math.Abs(x * mathx.Digamma(x) / mathx.Lgamma(x))
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return 0
	}
	return c
}

// polygammaCond is the larger of ψ⁽ⁿ⁾'s and ψ⁽ⁿ⁺¹⁾'s condition numbers
// |x·ψ⁽ᵏ⁺¹⁾(x)/ψ⁽ᵏ⁾(x)| (the value's and the gradient's), large near
// their zeros between the negative poles, where the sums' terms of both
// signs cancel.
func polygammaCond(n float64) func(x float64) float64 {
	return func(x float64) float64 {
		c := 0.0
		for k := n; k <= n+1; k++ {
			if v := math.Abs(x * mathx.Polygamma(k+1, x) / mathx.Polygamma(k, x)); !math.IsNaN(v) && !math.IsInf(v, 0) {
				c = max(c, v)
			}
		}
		return c
	}
}

// zetaFloats are Zeta's operands: specialFloats but the negative
// non-integers, where an odd s's terms of both signs cancel (its
// accuracy there is a few ulps of the largest term: internal/mathx's
// tests).
var zetaFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 2.5, 3, -7, 1e-310, 1e-8, 20, 89, 1e30,
	math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), math.Pi}

// unitFloats are the inverse trigonometric and hyperbolic functions':
// specialFloats and values near ±1, where 1 - x² cancels.
var unitFloats = append([]float64{1 - 1e-10, -1 + 1e-10, 0.99999999, 1 + 1e-10, 1 + 1e-6, 0.9375}, specialFloats...)

// normalFloats are the normal family's operands: specialFloats and the
// tails, where 1 - erf and erfc(-x/√2) in one part lose their digits.
var normalFloats = append([]float64{-38.4, -30, -8.5, -1, -0.84375, 0.84375, 1.25, 2.857142857142857, 6, 9, 26.7, 27.5, 1e8, -1e8, 1e200}, specialFloats...)

// ndtriFloats are Ndtri's: probabilities from 1e-300 to 1 - 2⁻⁵³, and
// some outside [0, 1].
var ndtriFloats = []float64{0, 1, 0.5, 1e-300, 5e-324, 1e-20, 1e-5, 0.025, 0.075, 0.0749, 0.3, 0.925, 0.975, 1 - 1e-10, 1 - 0x1p-53, -0.5, 1.5, math.Inf(1), math.NaN()}

// scaledBesselCond is the scaled Bessel functions' gradients'
// cancellation: the terms' magnitude over the difference's (about 2|x|
// for large |x|, I₁e - sign(x)·I₀e being about -I₀e/(2|x|); large near
// the derivative's zero, I₁e's near 1.5), times the terms' 8 ulps; at
// least 16|x| (where float64 cannot tell the terms apart).
func scaledBesselCond(nu int) func(x float64) float64 {
	return func(x float64) float64 {
		a := math.Abs(x)
		i0, i1 := mathx.BesselI0e(a), mathx.BesselI1e(a)
		terms, d := i0+i1, i1-i0
		if nu == 1 && a > 0 {
			terms, d = i0+i1*(1+1/a), i0-i1*(1+1/a)
		}
		r := 8 * terms / math.Abs(d)
		if math.IsNaN(r) || math.IsInf(r, 0) {
			r = 0
		}
		return max(r, 16*a)
	}
}

// gaussianCond is e^(-a·x²)'s condition number 2a·x²: x² rounded before
// the exponential moves a gradient of that form (and a value by its tail)
// by that many of its roundings.
func gaussianCond(a float64) func(x float64) float64 {
	return func(x float64) float64 { return 2 * a * x * x }
}

// igammaFloats are Igamma's and Igammac's operands: specialFloats up to
// 100 (mpmath's references past it take minutes).
var igammaFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 2.5, 3, 7, 20, 89, 1e-310, 1e-8, math.Inf(1), math.Inf(-1), math.NaN(), math.Pi}

// igammaCond is the incomplete gamma functions' sensitivity where their
// value is an exponential's tail: xᵃ·e⁻ˣ/Γ(a+1) moves |a·ln x| + x + |a·ψ(a+1)|
// of its roundings for one of a's and x's (finite operands only).
func igammaCond(a, x float64) float64 {
	c := math.Abs(a*mathx.Log(x)) + x + math.Abs(a*mathx.Digamma(a+1))
	if math.IsNaN(c) || math.IsInf(c, 0) {
		return 0
	}
	return c
}

func oneOperand(f func(T) T) func(a, _ T) T { return func(a, _ T) T { return f(a) } }

var specialOps = []specialOp{
	{name: "neg", kinds: "fiu", fn: oneOperand(ops.Neg), grad: true, signedZero: true},
	{name: "abs", kinds: "fiu", fn: oneOperand(ops.Abs), grad: true, signedZero: true},
	{name: "sign", kinds: "fiu", fn: oneOperand(ops.Sign), signedZero: true},
	{name: "square", kinds: "fiu", fn: oneOperand(ops.Square), grad: true, signedZero: true},
	{name: "floor", kinds: "f", fn: oneOperand(ops.Floor), grad: true, signedZero: true},
	{name: "ceil", kinds: "f", fn: oneOperand(ops.Ceil), grad: true, signedZero: true},
	{name: "round", kinds: "f", fn: oneOperand(ops.Round), signedZero: true},
	{name: "sqrt", kinds: "f", fn: oneOperand(ops.Sqrt), grad: true, signedZero: true},
	{name: "relu", kinds: "f", fn: oneOperand(ops.Relu), grad: true},
	{name: "is_finite", kinds: "f", fn: oneOperand(ops.IsFinite)},
	{name: "logical_not", kinds: "b", fn: oneOperand(ops.LogicalNot)},
	{name: "rsqrt", kinds: "f", fn: oneOperand(ops.Rsqrt), ulps: 2, grad: true},
	{name: "exp", kinds: "f", fn: oneOperand(ops.Exp), ulps: 2, grad: true},
	{name: "expm1", kinds: "f", fn: oneOperand(ops.Expm1), ulps: 2, grad: true, signedZero: true},
	{name: "log", kinds: "f", fn: oneOperand(ops.Log), ulps: 2, grad: true},
	{name: "log1p", kinds: "f", fn: oneOperand(ops.Log1p), ulps: 2, grad: true, signedZero: true},
	{name: "sin", kinds: "f", fn: oneOperand(ops.Sin), ulps: 2, grad: true, signedZero: true, nearOne: true, gradNearOne: true},
	{name: "cos", kinds: "f", fn: oneOperand(ops.Cos), ulps: 2, grad: true, nearOne: true, gradNearOne: true},
	{name: "tanh", kinds: "f", fn: oneOperand(ops.Tanh), ulps: 2, grad: true, signedZero: true, gradNearOne: true},
	{name: "sigmoid", kinds: "f", fn: oneOperand(ops.Sigmoid), ulps: 2, grad: true, gradNearOne: true},
	{name: "erf", kinds: "f", fn: oneOperand(ops.Erf), ulps: 2, grad: true, signedZero: true},
	{name: "softplus", kinds: "f", fn: oneOperand(ops.Softplus), ulps: 2, grad: true},
	{name: "elu", kinds: "f", fn: oneOperand(ops.Elu), ulps: 2, grad: true},
	{name: "leaky_relu", kinds: "f", fn: oneOperand(func(x T) T { return ops.LeakyRelu(x, 0.2) }), ulps: 1, grad: true},
	{name: "selu", kinds: "f", fn: oneOperand(ops.Selu), ulps: 2, grad: true},
	{name: "celu", kinds: "f", fn: oneOperand(func(x T) T { return ops.Celu(x, 2) }), ulps: 2, grad: true},
	{name: "silu", kinds: "f", fn: oneOperand(ops.Silu), ulps: 4, grad: true},
	{name: "mish", kinds: "f", fn: oneOperand(ops.Mish), ulps: 4, grad: true},
	{name: "softsign", kinds: "f", fn: oneOperand(ops.Softsign), ulps: 1, grad: true},
	{name: "relu6", kinds: "f", fn: oneOperand(ops.Relu6), grad: true},
	{name: "hardsigmoid", kinds: "f", fn: oneOperand(ops.HardSigmoid), ulps: 1, grad: true},
	{name: "hardswish", kinds: "f", fn: oneOperand(ops.HardSwish), ulps: 1, grad: true, signedZero: true},
	{name: "gelu", kinds: "f", fn: oneOperand(ops.Gelu), ulps: 2, grad: true, cond: geluCond},
	{name: "gelu_tanh", kinds: "f", fn: oneOperand(ops.GeluTanh), ulps: 2, grad: true, cond: geluTanhCond},
	{name: "tan", kinds: "f", fn: oneOperand(ops.Tan), ulps: 2, grad: true, signedZero: true},
	{name: "asin", kinds: "f", fn: oneOperand(ops.Asin), ulps: 2, grad: true, signedZero: true, from: unitFloats},
	{name: "acos", kinds: "f", fn: oneOperand(ops.Acos), ulps: 2, grad: true, from: unitFloats},
	{name: "atan", kinds: "f", fn: oneOperand(ops.Atan), ulps: 2, grad: true, signedZero: true},
	{name: "sinh", kinds: "f", fn: oneOperand(ops.Sinh), ulps: 2, grad: true, signedZero: true},
	{name: "cosh", kinds: "f", fn: oneOperand(ops.Cosh), ulps: 2, grad: true},
	{name: "asinh", kinds: "f", fn: oneOperand(ops.Asinh), ulps: 2, grad: true, signedZero: true},
	{name: "acosh", kinds: "f", fn: oneOperand(ops.Acosh), ulps: 2, grad: true, from: unitFloats},
	{name: "atanh", kinds: "f", fn: oneOperand(ops.Atanh), ulps: 2, grad: true, signedZero: true, from: unitFloats},
	{name: "log2", kinds: "f", fn: oneOperand(ops.Log2), ulps: 1, grad: true},
	{name: "log10", kinds: "f", fn: oneOperand(ops.Log10), ulps: 1, grad: true},
	{name: "exp2", kinds: "f", fn: oneOperand(ops.Exp2), ulps: 1, grad: true},
	{name: "erfinv", kinds: "f", fn: oneOperand(ops.Erfinv), ulps: 4, grad: true, signedZero: true},
	{name: "lgamma", kinds: "f", fn: oneOperand(ops.Lgamma), ulps: 2, grad: true, cond: lgammaCond},
	{name: "digamma", kinds: "f", fn: oneOperand(ops.Digamma), ulps: 2, grad: true, signedZero: true, cond: polygammaCond(0)},
	{name: "polygamma1", kinds: "f", fn: oneOperand(func(x T) T { return ops.Polygamma(1, x) }), ulps: 4, grad: true, cond: polygammaCond(1)},
	{name: "polygamma3", kinds: "f", fn: oneOperand(func(x T) T { return ops.Polygamma(3, x) }), ulps: 4, grad: true, cond: polygammaCond(3)},
	{name: "erfc", kinds: "f", fn: oneOperand(ops.Erfc), ulps: 2, grad: true, from: normalFloats},
	{name: "erfcx", kinds: "f", fn: oneOperand(ops.Erfcx), ulps: 2, grad: true, from: normalFloats},
	{name: "ndtr", kinds: "f", fn: oneOperand(ops.Ndtr), ulps: 3, grad: true, from: normalFloats},
	{name: "logndtr", kinds: "f", fn: oneOperand(ops.LogNdtr), ulps: 3, grad: true, from: normalFloats},
	{name: "besseli0", kinds: "f", fn: oneOperand(ops.BesselI0), ulps: 8, grad: true},
	{name: "besseli1", kinds: "f", fn: oneOperand(ops.BesselI1), ulps: 8, grad: true, signedZero: true},
	{name: "besseli0e", kinds: "f", fn: oneOperand(ops.BesselI0e), ulps: 8, grad: true, cond: scaledBesselCond(0)},
	{name: "besseli1e", kinds: "f", fn: oneOperand(ops.BesselI1e), ulps: 8, grad: true, signedZero: true, cond: scaledBesselCond(1)},
	{name: "logit", kinds: "f", fn: oneOperand(ops.Logit), ulps: 2, grad: true, from: ndtriFloats},
	{name: "ndtri", kinds: "f", fn: oneOperand(ops.Ndtri), ulps: 5, grad: true, from: ndtriFloats, cond: func(p float64) float64 { return gaussianCond(1)(mathx.Ndtri(p)) }},

	{name: "add", kinds: "fiu", two: true, fn: ops.Add, grad: true, signedZero: true},
	{name: "sub", kinds: "fiu", two: true, fn: ops.Sub, grad: true, signedZero: true},
	{name: "mul", kinds: "fiu", two: true, fn: ops.Mul, grad: true, signedZero: true},
	{name: "div", kinds: "fiu", two: true, fn: ops.Div, grad: true, signedZero: true},
	{name: "rem", kinds: "fiu", two: true, fn: ops.Rem, grad: true, signedZero: true},
	{name: "floordiv", kinds: "fiu", two: true, fn: ops.FloorDiv, signedZero: true},
	{name: "mod", kinds: "fiu", two: true, fn: ops.Mod, grad: true, signedZero: true},
	{name: "pow", kinds: "fiu", two: true, fn: ops.Pow, ulps: 2, grad: true},
	{name: "maximum", kinds: "fiu", two: true, fn: ops.Maximum, grad: true},
	{name: "minimum", kinds: "fiu", two: true, fn: ops.Minimum, grad: true},
	{name: "atan2", kinds: "f", two: true, fn: ops.Atan2, ulps: 2, grad: true, signedZero: true},
	{name: "hypot", kinds: "f", two: true, fn: ops.Hypot, ulps: 2, grad: true},
	{name: "logaddexp", kinds: "f", two: true, fn: ops.LogAddExp, ulps: 2, grad: true},
	{name: "prelu", kinds: "f", two: true, fn: ops.Prelu, ulps: 1, grad: true},
	{name: "zeta", kinds: "f", two: true, fn: ops.Zeta, ulps: 4, grad: true, from: zetaFloats},
	{name: "xlogy", kinds: "f", two: true, fn: ops.Xlogy, ulps: 2, grad: true},
	{name: "xlog1py", kinds: "f", two: true, fn: ops.Xlog1py, ulps: 2, grad: true},
	{name: "igamma", kinds: "f", two: true, fn: ops.Igamma, ulps: 64, from: igammaFloats, cond2: igammaCond},
	{name: "igammac", kinds: "f", two: true, fn: ops.Igammac, ulps: 64, from: igammaFloats, cond2: igammaCond},
	{name: "eq", kinds: "fiub", two: true, fn: ops.Eq},
	{name: "ne", kinds: "fiub", two: true, fn: ops.Ne},
	{name: "lt", kinds: "fiu", two: true, fn: ops.Lt},
	{name: "le", kinds: "fiu", two: true, fn: ops.Le},
	{name: "gt", kinds: "fiu", two: true, fn: ops.Gt},
	{name: "ge", kinds: "fiu", two: true, fn: ops.Ge},
	{name: "logical_and", kinds: "b", two: true, fn: ops.LogicalAnd},
	{name: "logical_or", kinds: "b", two: true, fn: ops.LogicalOr},

	{name: "amax", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { return ops.Amax(x, 1) })},
	{name: "amin", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { return ops.Amin(x, 1) })},
	{name: "argmax", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { return ops.ArgMax(x, 1) })},
	{name: "argmin", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { return ops.ArgMin(x, 1) })},
	{name: "sort", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { return ops.Sort(x, 1, false) }), signedZero: true},
	{name: "sort_descending", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { return ops.Sort(x, 1, true) }), signedZero: true},
	{name: "argsort", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { return ops.ArgSort(x, 1, false) })},
	{name: "topk", kinds: "fiu", row: true, fn: oneOperand(func(x T) T { v, _ := ops.TopK(x, 2); return v })},
	{name: "sum", kinds: "fiu", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Sum(x, 1) })},
	{name: "prod", kinds: "fiu", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Prod(x, 1) })},
	{name: "mean", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Mean(x, 1) })},
	{name: "cumsum", kinds: "fiu", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Cumsum(x, 1, false, false) })},
	{name: "softmax", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Softmax(x, 1) }), ulps: 4},
	{name: "log_softmax", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.LogSoftmax(x, 1) }), ulps: 4, nearOne: true},
	{name: "logsumexp", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.LogSumExp(x, 1) }), ulps: 4, nearOne: true},
	{name: "softmax_wide", kinds: "f", row: true, from: wideFloats, fn: oneOperand(func(x T) T { return ops.Softmax(x, 1) }), ulps: 4},
	{name: "log_softmax_wide", kinds: "f", row: true, from: wideFloats, fn: oneOperand(func(x T) T { return ops.LogSoftmax(x, 1) }), ulps: 4, nearOne: true, grad: true},
	{name: "logsumexp_wide", kinds: "f", row: true, from: wideFloats, fn: oneOperand(func(x T) T { return ops.LogSumExp(x, 1) }), ulps: 4, nearOne: true, grad: true},

	// The statistics and the norms over rows holding zeros, infinities and
	// NaN: where they propagate, and their gradients at a zero norm or
	// variance (0) and at a constant row.
	{name: "var", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Var(x, 1) }), ulps: 4, grad: true},
	{name: "std", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Std(x, 1) }), ulps: 4, grad: true},
	{name: "norm1", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Norm(x, 1, 1) }), ulps: 4, grad: true},
	{name: "norm2", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Norm(x, 2, 1) }), ulps: 4, grad: true},
	{name: "norm3", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Norm(x, 3, 1) }), ulps: 4, grad: true},
	{name: "norm_inf", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.Norm(x, math.Inf(1), 1) }), grad: true},
	// The normalized rows are weighted by their columns' numbers (1, 2,
	// ...) in the gradients' sums: a row's plain sum after LayerNorm is
	// 0 whatever the row.
	{name: "layer_norm", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T {
		return ops.LayerNorm(x, normParam(x, 1), normParam(x, 0), 1e-5)
	}), ulps: 4, grad: true, nearOne: true, gradNearOne: true, weighted: true},
	{name: "rms_norm", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.RMSNorm(x, normParam(x, 1), 1e-6) }),
		ulps: 4, grad: true, nearOne: true, gradNearOne: true, weighted: true},
	{name: "l2_normalize", kinds: "f", row: true, from: tameFloats, fn: oneOperand(func(x T) T { return ops.L2Normalize(x, 1, 1e-12) }),
		ulps: 4, grad: true, nearOne: true, gradNearOne: true, weighted: true},
}

// normParam is a norm's scale or offset for the rows of x: v in each of
// x's columns, of x's dtype (float32 for a half x), on x's device.
func normParam(x T, v float64) T {
	dt := x.DType()
	if dt.IsHalf() {
		dt = tensor.Float32
	}
	return tensor.FullOn(x.Device(), dt, v, x.Dim(1))
}

// columnWeights are the weights of a weighted op's outputs [rows n] in
// its gradients' sum: 1, 2, ..., n along each row, float64 on y's device.
func columnWeights(y T) T {
	w := make([]float64, y.Dim(1))
	for i := range w {
		w[i] = float64(i + 1)
	}
	return tensor.FromSliceOn(y.Device(), w, y.Dim(1))
}

// kindOf is dt's letter in specialOp.kinds.
func kindOf(dt tensor.DType) string {
	switch {
	case dt.IsFloat():
		return "f"
	case dt == tensor.Uint8:
		return "u"
	case dt == tensor.Bool:
		return "b"
	}
	return "i"
}

// specialValues are dt's values (from src, specialFloats where nil), as
// float64 for the floats and int64 for the rest, deduplicated after
// rounding to dt.
func specialValues(dt tensor.DType, src []float64) (fs []float64, is []int64) {
	if !dt.IsFloat() {
		return nil, specialInts(dt)
	}
	if src == nil {
		src = specialFloats
	}
	seen := map[uint64]bool{}
	for _, v := range src {
		switch {
		case dt == tensor.Float32:
			v = float64(float32(v))
		case dt.IsHalf():
			v = tensor.ToSlice[float64](ops.Cast(tensor.FromFloat32s(dt, []float32{float32(v)}), tensor.Float64))[0]
		}
		if !seen[math.Float64bits(v)] {
			seen[math.Float64bits(v)] = true
			fs = append(fs, v)
		}
	}
	return fs, nil
}

// element encodes a value as specialCase's strings do.
func element(f float64, i int64, float bool) string {
	if float {
		return fmt.Sprintf("0x%016x", math.Float64bits(f))
	}
	return strconv.FormatInt(i, 10)
}

// specialOperands builds op's operands in dt: every value (unary), every
// pair (binary), or rows of five drawn from the values (row ops), with
// one long row of 300 for the sorts (their radix path).
func specialOperands(op specialOp, dt tensor.DType, r *rand.Rand) (a, b []string, rows int) {
	fs, is := specialValues(dt, op.from)
	n := max(len(fs), len(is))
	at := func(k int) string {
		if dt.IsFloat() {
			return element(fs[k], 0, true)
		}
		return element(0, is[k], false)
	}
	switch {
	case op.row:
		width := 5
		rows = 40
		if strings.HasPrefix(op.name, "sort") || op.name == "argsort" || op.name == "topk" {
			width, rows = 300, 2
		}
		for range rows * width {
			a = append(a, at(r.IntN(n)))
		}
	case op.two:
		for i := range n {
			for j := range n {
				a, b = append(a, at(i)), append(b, at(j))
			}
		}
	default:
		for i := range n {
			a = append(a, at(i))
		}
	}
	return a, b, rows
}

// tensorOf makes the tensor of a case's elements on dev.
func tensorOf(dev device.Device, dt tensor.DType, elems []string, shape ...int) (T, error) {
	f := make([]float64, len(elems))
	i := make([]int64, len(elems))
	for k, s := range elems {
		if strings.HasPrefix(s, "0x") {
			bits, err := strconv.ParseUint(s[2:], 16, 64)
			if err != nil {
				return nil, err
			}
			f[k] = math.Float64frombits(bits)
		} else {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, err
			}
			i[k] = v
		}
	}
	var x T
	switch dt {
	case tensor.Float64:
		x = tensor.FromSliceOn(dev, f, shape...)
	case tensor.Float32, tensor.BFloat16, tensor.Float16:
		f32 := make([]float32, len(f))
		for k, v := range f {
			f32[k] = float32(v)
		}
		var err error
		if x, err = tensor.FromFloat32s(dt, f32, shape...).To(dev); err != nil {
			return nil, err
		}
	case tensor.Int64:
		x = tensor.FromSliceOn(dev, i, shape...)
	case tensor.Int32:
		i32 := make([]int32, len(i))
		for k, v := range i {
			i32[k] = int32(v)
		}
		x = tensor.FromSliceOn(dev, i32, shape...)
	case tensor.Uint8:
		u := make([]uint8, len(i))
		for k, v := range i {
			u[k] = uint8(v)
		}
		x = tensor.FromSliceOn(dev, u, shape...)
	case tensor.Bool:
		bs := make([]bool, len(i))
		for k, v := range i {
			bs[k] = v != 0
		}
		x = tensor.FromSliceOn(dev, bs, shape...)
	default:
		return nil, fmt.Errorf("no special values of %s", dt)
	}
	return x, nil
}

// elementsOf encodes x's elements as specialCase's strings.
func elementsOf(x T) []string {
	x, _ = x.To(cpu)
	out := make([]string, x.Shape().NumElements())
	if x.DType().IsFloat() {
		for k, v := range tensor.ToSlice[float64](ops.Cast(x, tensor.Float64)) {
			out[k] = element(v, 0, true)
		}
		return out
	}
	for k, v := range tensor.ToSlice[int64](ops.Cast(x, tensor.Int64)) {
		out[k] = element(0, v, false)
	}
	return out
}

// specialCases are every op's cases in every dtype it takes, and the
// casts between every pair of dtypes.
func specialCases() []specialCase {
	r := rand.New(rand.NewPCG(29, 31))
	var cases []specialCase
	for _, op := range specialOps {
		for _, dt := range specialDTypes {
			if !strings.Contains(op.kinds, kindOf(dt)) {
				continue
			}
			a, b, rows := specialOperands(op, dt, r)
			cases = append(cases, specialCase{ID: len(cases), Op: op.name, DType: dt.String(), A: a, B: b, Rows: rows,
				Grad: op.grad && dt == tensor.Float64})
		}
	}
	for _, from := range specialDTypes {
		a, _, _ := specialOperands(specialOp{}, from, r)
		for _, to := range specialDTypes {
			cases = append(cases, specialCase{ID: len(cases), Op: "cast", DType: from.String(), To: to.String(), A: a})
		}
	}
	return cases
}

// runSpecial computes c on dev: the values and, where asked, the
// gradients of their sum with respect to the operands.
func runSpecial(c specialCase, dev device.Device) (vals T, grads []T, err error) {
	dt := dtypeNamed(c.DType)
	shape := []int{len(c.A)}
	if c.Rows > 0 {
		shape = []int{c.Rows, len(c.A) / c.Rows}
	}
	a, err := tensorOf(dev, dt, c.A, shape...)
	if err != nil {
		return nil, nil, err
	}
	in := []T{a}
	if c.B != nil {
		b, err := tensorOf(dev, dt, c.B, shape...)
		if err != nil {
			return nil, nil, err
		}
		in = append(in, b)
	}
	err = tensor.Catch(func() {
		if c.Op == "cast" {
			vals = ops.Cast(a, dtypeNamed(c.To))
			return
		}
		op := specialOpNamed(c.Op)
		b := in[len(in)-1]
		if !c.Grad {
			vals = op.fn(a, b)
			return
		}
		tp := tape.New()
		tp.Watch(in...)
		vals = op.fn(a, b)
		loss := vals
		if op.weighted {
			loss = ops.Mul(vals, columnWeights(vals))
		}
		grads = tp.Gradient(ops.Sum(loss), in...)
	})
	return vals, grads, err
}

// dtypeNamed is the dtype of specialDTypes that name says.
func dtypeNamed(name string) tensor.DType {
	return specialDTypes[slices.IndexFunc(specialDTypes, func(dt tensor.DType) bool { return dt.String() == name })]
}

func specialOpNamed(name string) specialOp {
	i := slices.IndexFunc(specialOps, func(op specialOp) bool { return op.name == name })
	return specialOps[i]
}

// sameSpecial says whether got matches the reference want (both encoded)
// for op in dtype dt: "" where it does, else how it differs.
func sameSpecial(got, want string, dt tensor.DType, ulps float64, signedZero, nearOne bool) string {
	if want == "skip" {
		return ""
	}
	if !strings.HasPrefix(want, "0x") || !strings.HasPrefix(got, "0x") {
		if got != want {
			return fmt.Sprintf("%s, want %s", got, want)
		}
		return ""
	}
	g, w := decodeFloat(got), decodeFloat(want)
	switch {
	case math.IsNaN(w) || math.IsNaN(g):
		if math.IsNaN(w) != math.IsNaN(g) {
			return fmt.Sprintf("%v, want %v", g, w)
		}
		return ""
	case g == w:
		if g == 0 && signedZero && math.Signbit(g) != math.Signbit(w) {
			return fmt.Sprintf("%v (sign bit %v), want %v", g, math.Signbit(g), w)
		}
		return ""
	case ulps == 0 || math.IsInf(w, 0) || math.IsInf(g, 0):
		return fmt.Sprintf("%v, want %v", g, w)
	}
	scale := w
	if nearOne && math.Abs(w) < 1 {
		scale = 1
	}
	if d := math.Abs(g-w) / ulpOf(scale, dt); d > ulps {
		return fmt.Sprintf("%v, want %v (%.3g ulps)", g, w, d)
	}
	return ""
}

func decodeFloat(s string) float64 {
	bits, _ := strconv.ParseUint(s[2:], 16, 64)
	return math.Float64frombits(bits)
}

// ulpOf is the unit in the last place of w in dt, at least the smallest
// subnormal's.
func ulpOf(w float64, dt tensor.DType) float64 {
	if dt.IsHalf() {
		mant, minExp := 8, -126 // bfloat16: 8 significant bits
		if dt == tensor.Float16 {
			mant, minExp = 11, -14
		}
		_, e := math.Frexp(math.Abs(w)) // |w| in [2^(e-1), 2^e)
		return math.Ldexp(1, max(e-1, minExp)-(mant-1))
	}
	if dt == tensor.Float32 {
		f := float32(math.Abs(w))
		return math.Max(float64(math.Nextafter32(f, float32(math.Inf(1)))-f), math.SmallestNonzeroFloat32)
	}
	f := math.Abs(w)
	return math.Max(math.Nextafter(f, math.Inf(1))-f, math.SmallestNonzeroFloat64)
}

// checkSpecial compares every special case run on dev with PyTorch's
// results; extra32 is the ulps allowed besides for float32's inexact
// results (the GPU's ex2.approx, 2⁻²²·⁵ relative on the hardware).
func checkSpecial(t *testing.T, dev device.Device, extra32 float64) {
	cases := specialCases()
	want := runCases(t, "special_values.py", cases, func(r *specialResult) int { return r.ID })
	elems := 0
	for _, c := range cases {
		elems += len(c.A)
	}
	t.Logf("%d cases, %d elements", len(cases), elems)
	for _, c := range cases {
		w := want[c.ID]
		name := c.Op + " " + c.DType
		if c.To != "" {
			name += " to " + c.To
		}
		if w == nil || w.Error != "" {
			t.Errorf("%s: the reference failed: %v", name, w)
			continue
		}
		vals, grads, err := runSpecial(c, dev)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		dt := vals.DType()
		op := specialOp{signedZero: true}
		if c.Op != "cast" {
			op = specialOpNamed(c.Op)
		}
		report := func(what string, got, want []string, ulps float64, signedZero, nearOne bool) {
			if len(got) != len(want) {
				t.Errorf("%s %s: %d elements, the reference %d", name, what, len(got), len(want))
				return
			}
			bad := 0
			for k := range got {
				if what != "" && (c.hasNaN(k) || c.Rows > 0 && !c.finiteAt(k, w.Values)) {
					// A gradient at NaN, or through a row whose result is not
					// finite (a statistic of a row holding ∞): a convention
					// (NaN, 0 or ±∞).
					continue
				}
				allow := ulps
				if ulps > 0 && dt == tensor.Float32 {
					allow += extra32
				}
				if op.cond != nil {
					allow += op.cond(decodeFloat(c.A[k]))
				}
				if op.cond2 != nil && c.B != nil {
					allow += op.cond2(decodeFloat(c.A[k]), decodeFloat(c.B[k]))
				}
				if msg := sameSpecial(got[k], want[k], dt, allow, signedZero, nearOne); msg != "" {
					if bad++; bad <= 6 {
						t.Errorf("%s %s at %s: %s", name, what, c.operandsAt(k, len(got)), msg)
					}
				}
			}
			if bad > 6 {
				t.Errorf("%s %s: %d elements differ in all", name, what, bad)
			}
		}
		report("", elementsOf(vals), w.Values, op.ulps, op.signedZero, op.nearOne)
		for i, g := range grads {
			if g == nil { // no gradient: zeros
				g = ops.ZerosLike(vals)
			}
			if i < len(w.Grads) && w.Grads[i] != nil {
				report(fmt.Sprintf("gradient %d", i), elementsOf(g), w.Grads[i], gradUlps, false, op.gradNearOne)
			}
		}
	}
}

// gradUlps is the gradients' allowance in float64 units in the last
// place: a chain rule's few roundings (a zero's sign not compared).
const gradUlps = 16

// hasNaN says whether an operand of c's element k is NaN.
func (c specialCase) hasNaN(k int) bool {
	for _, e := range [][]string{c.A, c.B} {
		if k < len(e) && strings.HasPrefix(e[k], "0x") && math.IsNaN(decodeFloat(e[k])) {
			return true
		}
	}
	return false
}

// finiteAt says whether the results of the row of a row op's operand
// that holds element k are finite.
func (c specialCase) finiteAt(k int, values []string) bool {
	row := k / (len(c.A) / c.Rows)
	for _, v := range values[len(values)*row/c.Rows : len(values)*(row+1)/c.Rows] {
		if !finite(v) {
			return false
		}
	}
	return true
}

// finite says whether an encoded result is a finite number (any
// integer's is).
func finite(v string) bool {
	if !strings.HasPrefix(v, "0x") {
		return true
	}
	f := decodeFloat(v)
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

// operandsAt describes the operands of element k of c's n results, for
// messages: a row op's row (its first elements), else the element's
// operands.
func (c specialCase) operandsAt(k, n int) string {
	show := func(s string) string {
		if strings.HasPrefix(s, "0x") {
			return fmt.Sprint(decodeFloat(s))
		}
		return s
	}
	if c.Rows > 0 {
		width, row := len(c.A)/c.Rows, k*c.Rows/n
		var vs []string
		for _, s := range c.A[row*width : row*width+min(width, 8)] {
			vs = append(vs, show(s))
		}
		return fmt.Sprintf("row %d [%s ...]", row, strings.Join(vs, " "))
	}
	if c.B != nil {
		return fmt.Sprintf("(%s, %s)", show(c.A[k]), show(c.B[k]))
	}
	return show(c.A[k])
}

// Elementwise ops, casts and the row ops that meet NaN (maxima, sorts,
// sums, softmaxes, the statistics, norms and normalizations) agree with PyTorch at special values in every dtype
// (the half types as PyTorch's bfloat16 computes: in float32, rounded
// once):
// signed zeros, subnormals, the ranges' edges, infinities and NaN, the
// integers' bounds (where they wrap). Bit for bit where the result is
// exact (a NaN matches any NaN); transcendental ones within a few units in
// the last place; float64's gradients of the outputs' sum too. Where the
// library defines what PyTorch leaves undefined or raises on (an integer
// divided by zero, XLA's Round, an integer's negative power),
// special_values.py computes the documented result.
func TestSpecialValuesMatchPyTorch(t *testing.T) {
	needTorch(t)
	checkSpecial(t, cpu, 0)
}

// The same on the GPU (the emulator's where none is present).
func TestSpecialValuesAgreeOnGPU(t *testing.T) {
	needTorch(t)
	checkSpecial(t, testGPU(t), 3)
}
