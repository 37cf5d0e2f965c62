package difftest

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/eagerflow/eagerflow/tensor"
)

// gen builds one random program, running each step eagerly as it is
// chosen so that later steps can be fitted to the shapes earlier ones made.
type gen struct {
	r    *rand.Rand
	in   []T // inputs so far
	vals []T // step values so far
	p    *Program
	// exact, while set, is the shape operand makes a fresh input of.
	exact []int
	// limit bounds the elements of the tensors it makes (maxElems), and
	// scale multiplies the largest sizes it draws (1).
	limit, scale int
	// smooth leaves out the ops and attributes whose value or gradient
	// jumps (kinks, ties, rounding, comparisons of computed values) and
	// the inputs' special values: programs whose float32 run may be held
	// to float64's results within rounding (at_size_test.go).
	smooth bool
}

// maxElems bounds the tensors a program makes, to keep the suite fast.
const maxElems = 256

func (g *gen) intn(n int) int        { return g.r.IntN(n) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) between(lo, hi int) int {
	return lo + g.r.IntN(hi-lo+1)
}

// size draws a size from 1 to hi times the scale; at a scale past 1,
// one in six is long (up to 25 times that), for the rows, blocks and
// tails of kernels along one dimension.
func (g *gen) size(hi int) int {
	if g.scale > 1 && g.chance(1.0/6) {
		return g.between(hi*g.scale, 25*hi*g.scale)
	}
	return g.between(1, hi*g.scale)
}

// input adds a fresh input of shape with values uniform in [lo, hi) and
// returns its reference.
// A quarter of the inputs have some elements set to special values: zeros
// of both signs, small integers and halves, where functions have kinks,
// ties and rounding edges (Relu at 0, Max of equal values, Round at .5),
// and tiny magnitudes whose products underflow and whose squares are 0 in
// float64 (a product's derivatives must not divide by them).
func (g *gen) input(shape []int, lo, hi float64) int {
	return g.inputOf(shape, lo, hi, g.chance(0.25) && !g.smooth)
}

// inputOf is input with the special values asked for or not.
func (g *gen) inputOf(shape []int, lo, hi float64, special bool) int {
	if g.scale > 1 && tensor.Shape(shape).NumElements() > g.limit {
		panic(tooLarge{})
	}
	x := tensor.RandUniform(tensor.NewRNG(g.r.Uint64()), tensor.Float64, lo, hi, shape...)
	if special {
		v := tensor.ToSlice[float64](x)
		special := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, lo, math.Max(lo, 0), 1e-200, -1e-200, 1e-120}
		for i := range v {
			if g.chance(0.3) {
				v[i] = special[g.intn(len(special))]
			}
		}
		if len(shape) > 0 {
			x = tensor.FromSlice(v, shape...)
		} else {
			x = tensor.Scalar(v[0])
		}
	}
	g.in = append(g.in, x)
	return -len(g.in)
}

func (g *gen) value(ref int) T { return arg(g.in, g.vals, ref) }

// add appends a step, running it; it returns the step's reference.
func (g *gen) add(op string, a Attrs, args ...int) int {
	if g.smooth && jumps(op, a) && !(selects(op, a) && args[0] < 0) {
		panic("difftest: a smooth program drew " + op + " " + a.Kind)
	}
	in := make([]T, len(args))
	for i, r := range args {
		in[i] = g.value(r)
	}
	g.vals = append(g.vals, apply(op, in, a))
	g.p.Steps = append(g.p.Steps, Step{Op: op, Args: args, Attrs: a})
	return len(g.vals) - 1
}

// randomShape returns a shape of rank lo..hi with dims 1..5, small enough.
func (g *gen) randomShape(lo, hi int) []int {
	for {
		s := make([]int, g.between(lo, hi))
		for i := range s {
			s[i] = g.size(5)
		}
		if n, _ := tensor.Shape(s).Size(); n <= g.limit/2 {
			return s
		}
	}
}

// operand returns an existing float value whose shape satisfies ok (a
// fresh input of a random shape of rank lo..hi when none does, or by
// chance).
func (g *gen) operand(lo, hi int, ok func(tensor.Shape) bool) int {
	var refs []int
	for i := range g.in {
		refs = append(refs, -1-i)
	}
	for i := range g.vals {
		refs = append(refs, i)
	}
	var fits []int
	for _, r := range refs {
		s := g.value(r).Shape()
		// Empty values (a slice or top-k of none) end their chain: steps
		// that pick indices need elements.
		if s.Rank() >= lo && s.Rank() <= hi && s.NumElements() > 0 && s.NumElements() <= g.limit && (ok == nil || ok(s)) {
			fits = append(fits, r)
		}
	}
	if len(fits) > 0 && !g.chance(0.25) {
		// Prefer recent values, so that steps chain.
		return fits[len(fits)-1-min(g.intn(len(fits)), g.intn(len(fits)))]
	}
	if g.exact != nil {
		return g.input(g.exact, -2, 2)
	}
	for {
		s := g.randomShape(lo, hi)
		if ok == nil || ok(s) {
			return g.input(s, -2, 2)
		}
	}
}

// operandOf returns an existing value of exactly shape, or a fresh input
// of it.
func (g *gen) operandOf(shape []int) int {
	g.exact = shape
	defer func() { g.exact = nil }()
	return g.operand(len(shape), len(shape), func(s tensor.Shape) bool { return s.Equal(shape) })
}

// positive returns a step whose values are ref's mapped into [c, ...)
// smoothly: softplus(x) + c, for the functions with a domain.
func (g *gen) positive(ref int, c float64) int {
	sp := g.add("softplus", Attrs{}, ref)
	return g.add("add", Attrs{}, sp, g.inputOf(nil, c, c+0.5, false))
}

// broadcastPartner returns a fresh shape that broadcasts with s: some
// dims made 1, some leading dims dropped, or s itself.
func (g *gen) broadcastPartner(s tensor.Shape) []int {
	out := slices.Clone([]int(s))
	for i := range out {
		if g.chance(0.3) {
			out[i] = 1
		}
	}
	if len(out) > 0 && g.chance(0.3) {
		out = out[g.intn(len(out)):]
	}
	return out
}

// perm returns a random permutation of 0..n-1.
func (g *gen) perm(n int) []int { return g.r.Perm(n) }

// subset returns a random subset of 0..n-1, in increasing order.
func (g *gen) subset(n int) []int {
	var d []int
	for i := range n {
		if g.chance(0.5) {
			d = append(d, i)
		}
	}
	return d
}

// factor returns a random shape with n elements.
func (g *gen) factor(n int) []int {
	var s []int
	for n > 1 && len(s) < 4 {
		var divs []int
		for d := 2; d <= n; d++ {
			if n%d == 0 {
				divs = append(divs, d)
			}
		}
		d := divs[g.intn(len(divs))]
		s = append(s, d)
		n /= d
	}
	if n > 1 {
		s[len(s)-1] *= n // four factors already: the rest joins the last
	}
	if g.chance(0.3) {
		s = append(s, 1)
	}
	g.r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// families are the kinds of steps, each trying to add one; false when it
// could not (it then added nothing).
var families = []struct {
	name   string
	weight int
	add    func(g *gen) bool
}{
	{"unary", 10, genUnary},
	{"domain", 4, genDomain},
	{"binary", 10, genBinary},
	{"reduce", 6, genReduce},
	{"structure", 10, genStructure},
	{"matmul", 4, genMatMul},
	{"linalg", 2, genLinalg},
	{"softmax", 4, genSoftmax},
	{"conv", 4, genConv},
	{"pool", 3, genPool},
	{"gather", 4, genGather},
	{"sort", 3, genSort},
	{"select", 3, genSelect},
	{"dot_general", 2, genDotGeneral},
	{"dynamic", 2, genDynamic},
	{"transformer", 3, genTransformer},
	{"scatter", 2, genScatter},
	{"layers", 3, genLayers},
	{"xla_window", 3, genXLAWindow},
}

// generate makes program id from seed: 2 to 6 steps.
func generate(seed uint64, id int) *Program {
	return generateWith(&gen{r: rand.New(rand.NewPCG(seed, uint64(id))), p: &Program{ID: id}, limit: maxElems, scale: 1})
}

// tooLarge is the panic of a family whose input of a program at size
// would pass the limit: the family adds nothing more.
type tooLarge struct{}

// try runs a family, which stops where it would make too large an input.
func (g *gen) try(add func(*gen) bool) {
	defer func() {
		if e := recover(); e != nil {
			if _, ok := e.(tooLarge); !ok {
				panic(e)
			}
		}
	}()
	add(g)
}

func generateWith(g *gen) *Program {
	total := 0
	for _, f := range families {
		total += f.weight
	}
	steps := g.between(2, 6)
	for tries := 0; len(g.p.Steps) < steps && tries < 50; tries++ {
		k := g.intn(total)
		for _, f := range families {
			if k < f.weight {
				g.try(f.add)
				break
			}
			k -= f.weight
		}
	}
	g.p.in = g.in
	for _, v := range g.vals {
		g.p.weights = append(g.p.weights, tensor.RandUniform(tensor.NewRNG(g.r.Uint64()), tensor.Float64, 0.5, 1.5, v.Shape()...))
	}
	for _, x := range g.in {
		g.p.Inputs = append(g.p.Inputs, encode(x))
	}
	for _, w := range g.p.weights {
		g.p.Weights = append(g.p.Weights, encode(w))
	}
	for _, x := range g.in {
		v := tensor.RandUniform(tensor.NewRNG(g.r.Uint64()), tensor.Float64, -1, 1, x.Shape()...)
		g.p.second = append(g.p.second, v)
		g.p.Second = append(g.p.Second, encode(v))
	}
	return g.p
}

var unaryNames = []string{"neg", "abs", "square", "relu", "exp", "tanh", "sigmoid", "sin", "cos", "expm1", "erf",
	"softplus", "gelu", "gelu_tanh", "elu", "floor", "ceil", "round", "sign", "identity", "leaky_relu",
	"tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "exp2",
	"selu", "celu", "silu", "mish", "softsign", "relu6", "hardsigmoid", "hardswish", "erfinv",
	"erfc", "erfcx", "ndtr", "log_ndtr", "i0", "i0e"}

// I₁ and I₁e are left out: PyTorch 1.13's second derivatives of them are
// 0 at tiny x (1e-40), where I₁'' is 3x/8 and I₁e'' is ∓1 (its formula
// I₁e/x differentiated underflows); the special-value comparison holds
// their values and gradients to mpmath, conformance their second
// derivatives to finite differences.

// smoothUnary are the unary functions without kinks or jumps (ELU's,
// CELU's and Softsign's first derivatives are continuous at 0; SELU's
// jumps from λα to λ).
var smoothUnary = []string{"neg", "square", "exp", "tanh", "sigmoid", "sin", "cos", "expm1", "erf",
	"softplus", "gelu", "gelu_tanh", "elu", "identity", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
	"atanh", "exp2", "celu", "silu", "mish", "softsign", "erfinv", "erfc", "erfcx", "ndtr", "log_ndtr", "i0"}

// boundedFirst are the unary functions drawn on a bounded operand: the
// exponentials' (kept moderate; erfcx's overflows below -26.6, where its
// derivatives are ∞ here and NaN in PyTorch) and the poles' and domains'
// (tan's argument in (-1, 1); asin's, acos's, atanh's and erfinv's in
// (-0.77, 0.77), their derivatives bounded), through tanh once or twice.
var boundedFirst = map[string]int{"exp": 1, "expm1": 1, "exp2": 1, "sinh": 1, "cosh": 1, "tan": 1, "asin": 2, "acos": 2, "atanh": 2, "erfinv": 2,
	"erfcx": 1}

// selects says whether a step picks elements of its first operand by
// comparing them (extrema, sorts, max pooling): a smooth program draws it
// over a fresh input alone, whose float32 and float64 values are the same
// numbers, so that both runs pick the same elements.
func selects(op string, a Attrs) bool {
	switch op {
	case "max_pool2d", "max_unpool2d", "sort", "topk", "select_and_scatter":
		return true
	case "reduce", "reduce_window":
		return a.Kind == "max" || a.Kind == "min"
	}
	return false
}

// jumps says whether a step's value or gradient jumps somewhere: a smooth
// program draws it only where selects allows.
func jumps(op string, a Attrs) bool {
	switch op {
	case "abs", "relu", "floor", "ceil", "round", "sign", "leaky_relu", "rem", "max", "min", "max_pool2d",
		"max_unpool2d", "sort", "topk", "clip", "select_and_scatter", "selu", "relu6", "hardsigmoid", "hardswish", "prelu",
		"i0e": // e^-|x|: its gradient jumps at 0
		return true
	case "reduce":
		return a.Kind != "sum" && a.Kind != "mean" && a.Kind != "logsumexp" && a.Kind != "var"
	case "reduce_window":
		return a.Kind != "sum"
	case "fused_conv2d", "fused_matmul":
		return a.Relu
	}
	return false
}

func genUnary(g *gen) bool {
	x := g.operand(0, 4, nil)
	names := unaryNames
	if g.smooth {
		names = smoothUnary
	}
	op := names[g.intn(len(names))]
	a := Attrs{}
	switch op {
	case "leaky_relu":
		a.Alpha = 0.1 + 0.5*g.r.Float64()
	case "celu":
		a.Alpha = 0.5 + 1.5*g.r.Float64()
	}
	for range boundedFirst[op] {
		x = g.add("tanh", Attrs{}, x)
	}
	g.add(op, a, x)
	return true
}

func genDomain(g *gen) bool {
	x := g.operand(0, 4, nil)
	domain := []string{"log", "sqrt", "rsqrt", "log1p", "div", "pow", "log2", "log10", "atan2", "hypot",
		"lgamma", "digamma", "polygamma1", "polygamma2", "zeta", "igamma", "igammac", "ndtri", "logit", "xlogy", "xlog1py", "rem"}
	if g.smooth {
		domain = domain[:len(domain)-1]
	}
	switch op := domain[g.intn(len(domain))]; op {
	case "atan2", "hypot":
		// One operand bounded away from 0: the angle's gradient is 1/r,
		// the length's second derivatives b²/r³ and a²/r³, large near the
		// origin (and, for a tiny input, 1/r with the rest underflowed).
		g.add(op, Attrs{}, g.input(g.broadcastPartner(g.value(x).Shape()), -2, 2), g.positive(x, 0.5))
	case "div", "rem":
		// The divisor bounded away from 0 (1/0 is ±Inf, whose gradients
		// are NaN by one formula and Inf by another).
		b := g.positive(g.input(g.broadcastPartner(g.value(x).Shape()), -2, 2), 0.5)
		if g.chance(0.5) && op == "div" {
			g.add(op, Attrs{}, b, g.positive(x, 0.5))
		} else {
			g.add(op, Attrs{}, x, b)
		}
	case "lgamma", "digamma", "polygamma1", "polygamma2":
		// Away from the poles at 0 and below (ψ⁽ⁿ⁾ grows as 1/xⁿ⁺¹).
		g.add(op, Attrs{}, g.positive(x, 0.5))
	case "zeta":
		// s > 1 (ζ is NaN below), q away from the pole at 0.
		s := g.positive(g.input(g.broadcastPartner(g.value(x).Shape()), -2, 2), 1.5)
		g.add(op, Attrs{}, s, g.positive(x, 0.5))
	case "igamma", "igammac":
		// a from 0.2 (a < 1 takes its own sum), x away from 0 (the
		// density x^(a-1) has no finite gradient there below a = 1).
		a := g.positive(g.input(g.broadcastPartner(g.value(x).Shape()), -2, 2), 0.2)
		g.add(op, Attrs{}, a, g.positive(x, 0.1))
	case "ndtri", "logit":
		// A probability in (0, 1), through sigmoid.
		g.add(op, Attrs{}, g.add("sigmoid", Attrs{}, x))
	case "xlogy", "xlog1py":
		// y away from log's pole at 0 (log1p's at -1 the farther).
		g.add(op, Attrs{}, x, g.positive(g.input(g.broadcastPartner(g.value(x).Shape()), -2, 2), 0.2))
	case "pow":
		base := g.positive(x, 0.3)
		g.add(op, Attrs{}, base, g.input(g.broadcastPartner(g.value(x).Shape()), -2, 2))
	default:
		g.add(op, Attrs{}, g.positive(x, 0.1))
	}
	return true
}

func genBinary(g *gen) bool {
	x := g.operand(0, 4, nil)
	var y int
	if g.chance(0.5) {
		y = g.input(g.broadcastPartner(g.value(x).Shape()), -2, 2)
	} else {
		y = g.operand(0, 4, func(s tensor.Shape) bool { return broadcasts(s, g.value(x).Shape()) })
	}
	names := []string{"add", "sub", "mul", "logaddexp", "max", "min", "prelu"}
	if g.smooth {
		names = names[:4]
	}
	op := names[g.intn(len(names))]
	if g.chance(0.5) {
		x, y = y, x
	}
	g.add(op, Attrs{}, x, y)
	return true
}

// broadcasts reports whether a and b broadcast together, NumPy style.
func broadcasts(a, b tensor.Shape) bool {
	for i := 1; i <= min(len(a), len(b)); i++ {
		p, q := a[len(a)-i], b[len(b)-i]
		if p != q && p != 1 && q != 1 {
			return false
		}
	}
	return true
}

func genReduce(g *gen) bool {
	if g.smooth {
		return genSmoothReduce(g)
	}
	x := g.operand(1, 4, nil)
	r := g.value(x).Rank()
	kinds := []string{"sum", "mean", "max", "min", "prod", "logsumexp", "var", "std", "norm_2", "norm_1", "norm_3", "norm_inf"}
	kind := kinds[g.intn(len(kinds))]
	switch kind {
	case "prod":
		x = g.add("tanh", Attrs{}, x) // keeps products in range
	case "std", "norm_2", "norm_3":
		// A fresh input without special values: Std's second derivative
		// divides by the standard deviation cubed, so over a program's
		// values (tiny specials, products spanning 1e-10 to 1e10) both
		// sides' Hessian-vector products can be rounding noise; so do
		// the norms' by the norm.
		x = g.inputOf(g.randomShape(1, 4), -2, 2, false)
		r = g.value(x).Rank()
	}
	dims := g.subset(r)
	if g.chance(0.3) {
		// Negative axes too.
		for i := range dims {
			if g.chance(0.5) {
				dims[i] -= r
			}
		}
	}
	g.add("reduce", Attrs{Kind: kind, Dims: dims, Keep: g.chance(0.4)}, x)
	return true
}

// genSmoothReduce is genReduce in a smooth program: Sum, Mean, LogSumExp
// and Var of any value, Max and Min of a fresh input, no Prod or Std.
func genSmoothReduce(g *gen) bool {
	kind := []string{"sum", "mean", "max", "min", "logsumexp", "var"}[g.intn(6)]
	var x int
	if kind == "max" || kind == "min" {
		x = g.input(g.randomShape(1, 4), -2, 2)
	} else {
		x = g.operand(1, 4, nil)
	}
	r := g.value(x).Rank()
	dims := g.subset(r)
	g.add("reduce", Attrs{Kind: kind, Dims: dims, Keep: g.chance(0.4)}, x)
	return true
}

func genStructure(g *gen) bool {
	x := g.operand(1, 4, nil)
	s := g.value(x).Shape()
	r := s.Rank()
	switch g.intn(12) {
	case 0:
		g.add("reshape", Attrs{Shape: g.factor(s.NumElements())}, x)
	case 1:
		g.add("transpose", Attrs{Perm: g.perm(r)}, x)
	case 2:
		a := Attrs{}
		for _, n := range s {
			st := g.between(0, n-1)
			l := g.between(st, n)
			a.Start, a.Limit, a.Strides = append(a.Start, st), append(a.Limit, l), append(a.Strides, g.between(1, 3))
		}
		g.add("slice", a, x)
	case 3:
		a := Attrs{}
		for _, n := range s {
			it := 0
			if g.chance(0.3) {
				it = g.between(1, 2)
			}
			full := n + max(n-1, 0)*it
			lo := g.between(-min(1, full), 2)
			hi := g.between(-min(1, full+lo), 2)
			a.Cfg = append(a.Cfg, [3]int{lo, hi, it})
		}
		g.add("pad", a, x, g.input(nil, -1, 1))
	case 4:
		ax := g.intn(r)
		args := []int{x}
		for range g.between(1, 2) {
			o := slices.Clone([]int(s))
			o[ax] = g.between(1, 3)
			args = append(args, g.input(o, -2, 2))
		}
		g.r.Shuffle(len(args), func(i, j int) { args[i], args[j] = args[j], args[i] })
		g.add("concat", Attrs{Axis: ax}, args...)
	case 5:
		args := []int{x, g.input(s, -2, 2)}
		g.add("stack", Attrs{Axis: g.between(-r-1, r)}, args...)
	case 6:
		to := slices.Clone([]int(s)) // a shape x broadcasts to: grow 1s

		for i := range to {
			if to[i] == 1 {
				to[i] = g.between(1, 3)
			}
		}
		if g.chance(0.5) {
			to = append([]int{g.between(1, 3)}, to...)
		}
		if n, _ := tensor.Shape(to).Size(); n > g.limit {
			return false
		}
		g.add("broadcast_to", Attrs{Shape: to}, x)
	case 7:
		reps := make([]int, r)
		for i := range reps {
			reps[i] = g.between(1, 2)
		}
		if n, _ := tensor.Shape(s).Size(); n*4 > g.limit {
			return false
		}
		g.add("tile", Attrs{Reps: reps}, x)
	case 8:
		g.add("rev", Attrs{Dims: g.subset(r)}, x)
	case 9:
		op := "cumsum"
		if g.chance(0.5) {
			op = "cumprod"
		}
		g.add(op, Attrs{Axis: g.intn(r), Exclusive: g.chance(0.5), Reverse: g.chance(0.5)}, x)
	case 10:
		if r < 2 {
			g.add("roll", Attrs{K: g.between(-3, 3), Axis: g.between(-r, r-1)}, x)
			break
		}
		g.add([]string{"tril", "triu"}[g.intn(2)], Attrs{Axis: g.between(-2, 2)}, x)
	default:
		e := g.add("expand_dims", Attrs{Axis: g.between(-r-1, r)}, x)
		var ones []int
		for i, n := range g.value(e).Shape() {
			if n == 1 && g.chance(0.7) {
				ones = append(ones, i)
			}
		}
		if len(ones) > 0 {
			g.add("squeeze", Attrs{Axes: ones}, e)
		}
	}
	return true
}

func genMatMul(g *gen) bool {
	if g.chance(0.3) {
		return genEinsum(g)
	}
	m, k, n := g.size(5), g.size(5), g.size(5)
	var batch []int
	if g.chance(0.6) {
		batch = []int{g.between(1, 3)}
		if g.chance(0.3) {
			batch = append(batch, 2)
		}
	}
	ta, tb := g.chance(0.5), g.chance(0.5)
	as, bs := []int{m, k}, []int{k, n}
	if ta {
		as = []int{k, m}
	}
	if tb {
		bs = []int{n, k}
	}
	shareA, shareB := false, false
	if batch != nil {
		switch g.intn(3) {
		case 0:
			shareA = true
		case 1:
			shareB = true
		}
	}
	if !shareA {
		as = append(slices.Clone(batch), as...)
	}
	if !shareB {
		bs = append(slices.Clone(batch), bs...)
	}
	switch {
	case batch != nil && !shareA && !shareB && g.chance(0.3):
		// NumPy batch broadcasting: a dimension of 1 on one side, or a
		// leading dimension only one side has.
		if g.chance(0.5) {
			as[g.intn(len(batch))] = 1
		} else {
			bs = append([]int{g.between(2, 3)}, bs...)
		}
	case !ta && !tb && g.chance(0.2):
		// Vectors: a [k] row on the left or a [k] column on the right.
		if g.chance(0.5) {
			as = []int{k}
		} else {
			bs = []int{k}
		}
	}
	a := g.operandOf(as)
	b := g.input(bs, -1, 1)
	g.add("matmul", Attrs{TA: ta, TB: tb}, a, b)
	return true
}

// genLinalg factors m·mᵀ + n·I (its gradient reaching m through the
// product: TensorFlow's and PyTorch's symmetric rule and eagerflow's of
// the lower triangle agree there), solves with a triangle of a + 3·I in
// any of its forms, takes a + 3·I's determinant, log|det|, inverse or
// solve, factors a + 3·J by LU (its packed factors, a solve with them,
// or them unpacked), takes a matrix exponential, decomposes x + xᵀ, takes a trace or a diagonal, or
// factors QR or SVD, or takes a pseudo-inverse, a matrix norm or a
// least-squares solution.
func genLinalg(g *gen) bool {
	n := g.between(1, 5)
	var batch []int
	if g.chance(0.5) {
		batch = []int{g.between(1, 3)}
	}
	square := append(slices.Clone(batch), n, n)
	if g.chance(0.35) { // of a tall, square or wide matrix: QR (q or r), SVD (s, or u·diag(σ(s))·vt), Pinv, a MatrixNorm, Lstsq
		rows := g.between(1, 5)
		a := g.inputOf(append(slices.Clone(batch), rows, n), -1, 1, false)
		switch op := []string{"qr", "svd", "pinv", "matrix_norm", "lstsq"}[g.intn(5)]; op {
		case "matrix_norm":
			g.add(op, Attrs{Kind: []string{"fro", "nuc", "2", "-2", "1", "-1", "inf", "-inf"}[g.intn(8)]}, a)
		case "lstsq":
			g.add(op, Attrs{}, a, g.operandOf(append(slices.Clone(batch), rows, g.between(1, 3))))
		default:
			g.add(op, Attrs{K: g.intn(2)}, a)
		}
		return true
	}
	switch g.intn(9) {
	case 7: // the exponential, ‖a‖₁ up to 2n (squarings past 5.37)
		g.add("matrix_exp", Attrs{}, g.inputOf(square, -2, 2, false))
		return true
	case 0:
		g.add("cholesky_spd", Attrs{}, g.inputOf(square, -1, 1, false))
		return true
	case 4: // the trace or the diagonal
		name := "trace"
		if g.chance(0.5) {
			name = "diagonal"
		}
		g.add(name, Attrs{}, g.operandOf(square))
		return true
	case 5: // of x + xᵀ: the eigenvalues, or V·diag(σ(λ))·Vᵀ (the eigenvectors' signs cancel)
		name := "eigvalsh_sym"
		if g.chance(0.5) {
			name = "eigh_sigmoid_sym"
		}
		g.add(name, Attrs{}, g.inputOf(square, -1, 1, false))
		return true
	case 6: // LU of a + 3·J (its rows exchanged): the packed factors, solves with them, or p + l + u
		a := g.inputOf(square, -1, 1, false)
		switch g.intn(3) {
		case 0:
			g.add("lu_anti", Attrs{}, a)
		case 1:
			g.add("lu_solve_anti", Attrs{TA: g.chance(0.5)}, a, g.operandOf(append(slices.Clone(batch), n, g.between(1, 3))))
		default:
			g.add("lu_unpack_anti", Attrs{}, a)
		}
		return true
	case 1: // a well-conditioned a: its determinant and solves away from singular
		a := g.inputOf(square, -1, 1, false)
		switch g.intn(4) {
		case 0:
			g.add("det_shifted", Attrs{}, a)
		case 1:
			g.add("logabsdet_shifted", Attrs{}, a)
		case 2:
			g.add("inverse_shifted", Attrs{}, a)
		default:
			g.add("solve_shifted", Attrs{}, a, g.operandOf(append(slices.Clone(batch), n, g.between(1, 3))))
		}
		return true
	}
	a := g.inputOf(square, -1, 1, false)
	b := g.operandOf(append(slices.Clone(batch), n, g.between(1, 3)))
	g.add("trisolve", Attrs{Upper: g.chance(0.5), TA: g.chance(0.5), Unit: g.chance(0.3)}, a, b)
	return true
}

func genSoftmax(g *gen) bool {
	x := g.operand(1, 3, nil)
	s := g.value(x).Shape()
	if g.chance(0.3) {
		// Large logits, where x - max must be formed first.
		x = g.add("mul", Attrs{}, x, g.inputOf(nil, 200, 600, false))
	}
	switch g.intn(5) {
	case 0, 1:
		op := []string{"softmax", "log_softmax"}[g.intn(2)]
		g.add(op, Attrs{Axis: g.between(-s.Rank(), s.Rank()-1)}, x)
	case 2:
		labels := g.add("softmax", Attrs{Axis: -1}, g.input(s, -2, 2))
		g.add("xent", Attrs{}, x, labels)
	case 3:
		if s.Rank() != 2 {
			x = g.add("reshape", Attrs{Shape: []int{-1, s[s.Rank()-1]}}, x)
		}
		rows, classes := g.value(x).Dim(0), g.value(x).Dim(1)
		labels := make([]int, rows)
		for i := range labels {
			labels[i] = g.intn(classes)
		}
		g.add("sparse_xent", Attrs{Labels: labels}, x)
	default:
		g.add("l2_normalize", Attrs{Axis: g.intn(s.Rank()), Eps: 1e-12}, x)
	}
	return true
}

// genEinsum adds an Einsum of an operand (its dims lettered in a random
// order) and, mostly, a fresh input sharing some of its letters and
// holding new ones, its result a random choice of the letters in a random
// order ("cab,bd->dc").
func genEinsum(g *gen) bool {
	x := g.operand(1, 4, nil)
	letters := []rune("abcdefgh")
	g.r.Shuffle(len(letters), func(i, j int) { letters[i], letters[j] = letters[j], letters[i] })
	s := g.value(x).Shape()
	ax := letters[:s.Rank()]
	size := map[rune]int{}
	for i, l := range ax {
		size[l] = s[i]
	}
	all := slices.Clone(ax)
	var bx []rune // the second operand's letters, if any
	second := g.chance(0.7)
	if second {
		for _, l := range ax {
			if g.chance(0.5) {
				bx = append(bx, l)
			}
		}
		for _, l := range letters[s.Rank() : s.Rank()+g.between(0, 2)] {
			bx, size[l] = append(bx, l), g.size(4)
			all = append(all, l)
		}
		g.r.Shuffle(len(bx), func(i, j int) { bx[i], bx[j] = bx[j], bx[i] })
	}
	var out []rune
	for _, l := range all {
		if g.chance(0.5) {
			out = append(out, l)
		}
	}
	g.r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	count := func(ls []rune) int {
		n := 1
		for _, l := range ls {
			n *= size[l]
		}
		return n
	}
	if count(out) > g.limit || count(bx) > g.limit {
		return false
	}
	args, spec := []int{x}, string(ax)
	if second {
		shape := make([]int, len(bx))
		for i, l := range bx {
			shape[i] = size[l]
		}
		args = append(args, g.input(shape, -1, 1))
		spec += "," + string(bx)
	}
	g.add("einsum", Attrs{Spec: spec + "->" + string(out)}, args...)
	return true
}

// genTransformer adds a LayerNorm or RMSNorm over an operand's last
// dimension (with or without an offset), a BatchNorm over every dimension
// of an operand but one (each feature of two elements or more: one
// normalizes to exactly 0, whose gradient's rounding the references
// write differently), or scaled dot-product attention of new queries,
// keys and values (batch dims 0 to 2, causal or not, an explicit mask
// keeping key 0 of every row or none).
func genTransformer(g *gen) bool {
	if g.chance(0.2) {
		fits := func(s tensor.Shape) []int {
			var axes []int
			for a := range s.Rank() {
				if s[a] > 0 && s.NumElements()/s[a] >= 2 {
					axes = append(axes, a)
				}
			}
			return axes
		}
		x := g.operand(1, 3, func(s tensor.Shape) bool { return len(fits(s)) > 0 })
		s := g.value(x).Shape()
		axes := fits(s)
		if len(axes) == 0 { // a new input of a shape that fits none
			return false
		}
		axis := axes[g.intn(len(axes))]
		args := []int{x, g.input([]int{s[axis]}, 0.5, 1.5)}
		if g.chance(0.6) {
			args = append(args, g.input([]int{s[axis]}, -1, 1))
		}
		g.add("batch_norm", Attrs{Axis: axis, Eps: []float64{1e-5, 1e-3}[g.intn(2)]}, args...)
		return true
	}
	if g.chance(0.5) {
		x := g.operand(1, 3, func(s tensor.Shape) bool { return s[s.Rank()-1] > 0 })
		c := g.value(x).Dim(-1)
		kind := []string{"layer", "layer_no_offset", "rms"}[g.intn(3)]
		args := []int{x, g.input([]int{c}, 0.5, 1.5)}
		if kind == "layer" {
			args = append(args, g.input([]int{c}, -1, 1))
		}
		g.add("layer_norm", Attrs{Kind: kind, Eps: []float64{1e-5, 1e-3}[g.intn(2)]}, args...)
		return true
	}
	batch := g.randomShape(0, 2)
	tq, tk, d, dv := g.size(5), g.size(6), g.size(4), g.size(4)
	// Rows 16 wide without a mask: the flash kernels' calls where a
	// device has them (the GPU's half types, or float32 forced).
	flash := g.chance(0.25)
	if flash {
		d, dv = 16, 16
	}
	shape := func(t, d int) []int { return append(append([]int(nil), batch...), t, d) }
	q, k, v := g.input(shape(tq, d), -2, 2), g.input(shape(tk, d), -2, 2), g.input(shape(tk, dv), -2, 2)
	a := Attrs{Relu: g.chance(0.5)} // Relu: causal
	if !flash && g.chance(0.4) {
		rows := tq
		if g.chance(0.3) {
			rows = 1 // a row of keys for every query (key padding), broadcast
		}
		a.Labels = make([]int, rows*tk)
		for i := range a.Labels {
			if i%tk == 0 || g.chance(0.6) {
				a.Labels[i] = 1
			}
		}
	}
	g.add("attention", a, q, k, v)
	return true
}

// windowAttrs returns random 2-d padding, strides and dilations for a
// window of kh x kw over h x w such that every window position has an
// input element inside it.
func (g *gen) windowAttrs(h, w, kh, kw int, dilate bool) (Attrs, bool) {
	a := Attrs{Strides: []int{g.between(1, 3), g.between(1, 3)}, Dilations: []int{1, 1}, Format: "NHWC"}
	if dilate {
		a.Dilations = []int{g.between(1, 2), g.between(1, 2)}
	}
	a.Padding = []string{"valid", "same", "explicit"}[g.intn(3)]
	if a.Padding == "explicit" {
		for d, k := range []int{kh, kw} {
			a.Explicit[d] = [2]int{g.between(0, k-1), g.between(0, k-1)}
		}
	}
	spans := [2]int{(kh-1)*a.Dilations[0] + 1, (kw-1)*a.Dilations[1] + 1}
	for d, n := range []int{h, w} {
		pads := 0
		if a.Padding == "explicit" {
			pads = a.Explicit[d][0] + a.Explicit[d][1]
		}
		if a.Padding != "same" && n+pads < spans[d] {
			return a, false
		}
	}
	return a, true
}

func genConv(g *gen) bool {
	n, c, h, w, o := g.between(1, 2), g.size(3), g.size(6), g.size(6), g.size(3)
	kh, kw := g.between(1, 3), g.between(1, 3)
	a, ok := g.windowAttrs(h, w, kh, kw, true)
	if !ok {
		return false
	}
	xs := []int{n, h, w, c}
	if g.chance(0.5) {
		a.Format, xs = "NCHW", []int{n, c, h, w}
	}
	x := g.operandOf(xs)
	if g.chance(0.25) {
		m := g.between(1, 2)
		g.add("depthwise_conv2d", a, x, g.input([]int{kh, kw, c, m}, -1, 1))
		return true
	}
	f := g.input([]int{kh, kw, c, o}, -1, 1)
	if g.chance(0.4) {
		a.Relu = g.chance(0.5) && !g.smooth
		g.add("fused_conv2d", a, x, f, g.input([]int{o}, -1, 1))
		return true
	}
	g.add("conv2d", a, x, f)
	return true
}

func genPool(g *gen) bool {
	n, c, h, w := g.between(1, 2), g.size(3), g.size(6), g.size(6)
	kh, kw := g.between(1, 3), g.between(1, 3)
	a, ok := g.windowAttrs(h, w, kh, kw, false)
	if !ok {
		return false
	}
	a.Size = []int{kh, kw}
	if g.chance(0.3) {
		a.Strides = []int{0, 0} // the window size
	}
	xs := []int{n, h, w, c}
	if g.chance(0.5) {
		a.Format, xs = "NCHW", []int{n, c, h, w}
	}
	x := g.operandOf(xs)
	if a.Strides[0] == 0 {
		a.Strides = []int{kh, kw}
	}
	// max_unpool2d: the pooled values put back at their choices
	// (MaxPool2DWithArgmax, then MaxUnpool2D).
	op := []string{"max_pool2d", "avg_pool2d", "max_unpool2d"}[g.intn(3)]
	if g.smooth && op != "avg_pool2d" {
		x = g.input(xs, -2, 2)
	}
	g.add(op, a, x)
	return true
}

func genGather(g *gen) bool {
	x := g.operand(1, 3, nil)
	s := g.value(x).Shape()
	ax := g.intn(s.Rank())
	if g.chance(0.5) {
		is := slices.Clone([]int(s))
		is[ax] = g.between(1, 4)
		if d := g.intn(s.Rank()); d != ax && g.chance(0.4) {
			// NumPy broadcasting outside the axis: indices of 1 against
			// x's size, or more indices against x's 1.
			if s[d] == 1 {
				is[d] = g.between(2, 3)
			} else {
				is[d] = 1
			}
		}
		idx := make([]int, tensor.Shape(is).NumElements())
		for i := range idx {
			idx[i] = g.intn(s[ax])
		}
		g.add("take_along_axis", Attrs{Axis: ax, Indices: idx, IShape: is}, x)
		return true
	}
	is := g.randomShape(0, 2)
	if is == nil {
		is = []int{} // a scalar index: the axis goes
	}
	idx := make([]int, tensor.Shape(is).NumElements())
	for i := range idx {
		idx[i] = g.intn(s[ax])
	}
	g.add("gather", Attrs{Axis: ax, Indices: idx, IShape: is}, x)
	return true
}

func genSort(g *gen) bool {
	var x int
	if g.smooth {
		x = g.input(g.randomShape(1, 3), -2, 2)
	} else {
		x = g.operand(1, 3, nil)
	}
	s := g.value(x).Shape()
	if g.chance(0.3) {
		g.add("topk", Attrs{K: g.between(0, s[s.Rank()-1])}, x)
		return true
	}
	g.add("sort", Attrs{Axis: g.between(-s.Rank(), s.Rank()-1), Descending: g.chance(0.5)}, x)
	return true
}

func genSelect(g *gen) bool {
	x := g.operand(0, 4, nil)
	s := g.value(x).Shape()
	if g.chance(0.4) && !g.smooth {
		g.add("clip", Attrs{}, x, g.input(nil, -1, 0), g.input(nil, 0, 1))
		return true
	}
	if g.chance(0.4) {
		// Where with a constant mask and operands that broadcast.
		mshape, keep := g.mask(s)
		y := g.input(g.broadcastPartner(s), -2, 2)
		if g.chance(0.5) {
			g.add("where", Attrs{Labels: keep, IShape: mshape}, y, x)
		} else {
			g.add("where", Attrs{Labels: keep, IShape: mshape}, x, y)
		}
		return true
	}
	g.add("select", Attrs{}, g.input(s, -1, 1), g.input(s, -1, 1), x, g.input(s, -2, 2))
	return true
}

func genDotGeneral(g *gen) bool {
	// lhs [b, m, k] and rhs [b, k, n] in shuffled dimension orders.
	b, m, k, n := g.between(1, 3), g.between(1, 4), g.between(1, 4), g.between(1, 4)
	lp, rp := g.perm(3), g.perm(3)
	ls, rs := make([]int, 3), make([]int, 3)
	lsizes, rsizes := []int{b, m, k}, []int{b, k, n}
	for i, p := range lp {
		ls[p] = lsizes[i]
	}
	for i, p := range rp {
		rs[p] = rsizes[i]
	}
	a := Attrs{LhsBatch: []int{lp[0]}, LhsContract: []int{lp[2]}, RhsBatch: []int{rp[0]}, RhsContract: []int{rp[1]}}
	g.add("dot_general", a, g.input(ls, -1, 1), g.input(rs, -1, 1))
	return true
}

func genDynamic(g *gen) bool {
	x := g.operand(1, 3, nil)
	s := g.value(x).Shape()
	starts, sizes := make([]int, s.Rank()), make([]int, s.Rank())
	for i, n := range s {
		sizes[i] = g.between(1, n)
		starts[i] = g.between(-2, n+1) // clamped to fit, XLA's rule
	}
	if g.chance(0.5) {
		g.add("dynamic_slice", Attrs{Starts: starts, Sizes: sizes}, x)
		return true
	}
	g.add("dynamic_update_slice", Attrs{Starts: starts}, x, g.input(sizes, -2, 2))
	return true
}

// genScatter adds ScatterAdd (indices of 0 to 2 dims, repeats
// accumulating) or MaskedFill (a mask broadcast against x, a scalar
// value).
func genScatter(g *gen) bool {
	x := g.operand(1, 3, nil)
	s := g.value(x).Shape()
	switch g.intn(4) {
	case 0:
		mshape, keep := g.mask(s)
		g.add("masked_fill", Attrs{Labels: keep, IShape: mshape}, x, g.input(nil, -2, 2))
		return true
	case 1:
		mshape, keep := g.mask(s)
		a := Attrs{Labels: keep, IShape: mshape}
		if g.chance(0.5) {
			g.add("masked_select", a, x)
			return true
		}
		g.add("masked_scatter", a, x, g.input([]int{maskCount(keep, mshape, s) + g.between(0, 2)}, -2, 2))
		return true
	}
	ax := g.intn(s.Rank())
	is := g.randomShape(0, 2)
	if is == nil {
		is = []int{}
	}
	idx := make([]int, tensor.Shape(is).NumElements())
	for i := range idx {
		idx[i] = g.intn(s[ax])
	}
	us := slices.Concat(s[:ax], is, s[ax+1:])
	if tensor.Shape(us).NumElements() > g.limit {
		return false
	}
	g.add("scatter_add", Attrs{Axis: ax, Indices: idx, IShape: is}, x, g.input(us, -2, 2))
	return true
}

// mask draws a bool mask (as 0/1 labels) whose shape broadcasts to s:
// each dimension s's or 1.
func (g *gen) mask(s tensor.Shape) (shape, keep []int) {
	shape = slices.Clone([]int(s))
	for d := range shape {
		if g.chance(0.3) {
			shape[d] = 1
		}
	}
	keep = make([]int, tensor.Shape(shape).NumElements())
	for i := range keep {
		keep[i] = g.intn(2)
	}
	return shape, keep
}

// maskCount is the number of true elements of the mask broadcast to s.
func maskCount(keep, shape []int, s tensor.Shape) int {
	n := 0
	for i := range s.NumElements() {
		at, stride, rest := 0, 1, i
		for d := len(s) - 1; d >= 0; d-- {
			if shape[d] != 1 {
				at += rest % s[d] * stride
			}
			rest /= s[d]
			stride *= shape[d]
		}
		n += keep[at]
	}
	return n
}

// genLayers adds a layer's fused ops: FusedMatMul (bias, Relu or none),
// BiasAdd in either layout, one piece of a Split, the recurrent cells and
// one output of an LSTM's or a GRU's sequence, or the optimizers'
// multi-tensor ops:
// SumOfSquares of one to three values, one piece of ScaleEach.
func genLayers(g *gen) bool {
	switch g.intn(9) {
	case 8:
		n, t, h := g.size(3), g.size(3), g.size(3)
		xp, u := g.operandOf([]int{n, t, 3 * h}), g.operandOf([]int{h, 3 * h})
		g.add("gru_seq", Attrs{K: g.intn(2)}, xp, u, g.operandOf([]int{3 * h}), g.operandOf([]int{n, h}))
	case 7:
		n, t, h := g.size(3), g.size(3), g.size(3)
		xz, u := g.operandOf([]int{n, t, 4 * h}), g.operandOf([]int{h, 4 * h})
		g.add("lstm_seq", Attrs{K: g.intn(3)}, xz, u, g.operandOf([]int{n, h}), g.operandOf([]int{n, h}))
	case 5:
		n, h := g.size(4), g.size(3)
		xz, hz := g.operandOf([]int{n, 4 * h}), g.operandOf([]int{n, 4 * h})
		g.add("lstm_cell", Attrs{K: g.intn(2)}, xz, hz, g.operandOf([]int{n, h}))
	case 6:
		n, h := g.size(4), g.size(3)
		xp, hp := g.operandOf([]int{n, 3 * h}), g.operandOf([]int{n, 3 * h})
		g.add("gru_cell", Attrs{}, xp, hp, g.operandOf([]int{n, h}))
	case 3:
		xs := []int{g.operand(0, 3, nil)}
		for range g.intn(3) {
			xs = append(xs, g.operand(0, 3, nil))
		}
		g.add("sum_of_squares", Attrs{}, xs...)
	case 4:
		xs := []int{g.input(nil, -2, 2), g.operand(0, 3, nil)}
		for range g.intn(3) {
			xs = append(xs, g.operand(0, 3, nil))
		}
		g.add("scale_each", Attrs{K: g.intn(len(xs) - 1)}, xs...)
	case 0:
		k, n := g.size(5), g.size(5)
		x := g.operand(2, 2, func(s tensor.Shape) bool { return s[1] == k })
		g.add("fused_matmul", Attrs{Relu: g.chance(0.5) && !g.smooth}, x, g.input([]int{k, n}, -1, 1), g.input([]int{n}, -1, 1))
	case 1:
		x := g.operand(2, 4, nil)
		s := g.value(x).Shape()
		format, c := "NHWC", s[s.Rank()-1]
		if g.chance(0.5) {
			format, c = "NCHW", s[1]
		}
		g.add("bias_add", Attrs{Format: format}, x, g.input([]int{c}, -2, 2))
	default:
		x := g.operand(1, 3, func(s tensor.Shape) bool { return slices.Max([]int(s)) > 1 })
		s := g.value(x).Shape()
		ax := g.intn(s.Rank())
		var sizes []int
		for left := s[ax]; left > 0; {
			n := g.between(1, left)
			sizes = append(sizes, n)
			left -= n
		}
		g.add("split", Attrs{Axis: ax, Sizes: sizes, K: g.intn(len(sizes))}, x)
	}
	return true
}
