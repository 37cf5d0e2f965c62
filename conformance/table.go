package conformance

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The table: samples per op name. Each sample calls the public API; its
// first call of the op is what the checks run.

var seed atomic.Uint64

// r returns float64 values uniform in [lo, hi).
func r(lo, hi float64, shape ...int) T {
	return tensor.RandUniform(tensor.NewRNG(seed.Add(1)), tensor.Float64, lo, hi, shape...)
}

// of returns values for dtype dt in [lo, hi) (integers in a range that
// fits, bools half true).
func of(dt tensor.DType, lo, hi float64, shape ...int) T {
	switch dt {
	case tensor.Float64:
		return r(lo, hi, shape...)
	case tensor.Float32:
		return ops.Cast(r(lo, hi, shape...), dt)
	case tensor.BFloat16, tensor.Float16, tensor.Float8E4M3, tensor.Float8E5M2: // made on the host, so that a sample's first Cast is its own
		v := tensor.ToSlice[float64](r(lo, hi, shape...))
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return tensor.FromFloat32s(dt, f).View(tensor.Shape(shape), nil) // a scalar too
	case tensor.Uint8:
		return ops.Cast(ops.Floor(r(0, 9, shape...)), dt)
	case tensor.Bool:
		return ops.Gt(r(-1, 1, shape...), tensor.Scalar(0.0))
	}
	return ops.Cast(ops.Floor(r(-9, 9, shape...)), dt)
}

// tr returns x's values in a non-row-major layout (a transposed view).
func tr(x T) T {
	if x.Rank() < 2 {
		return x
	}
	perm := make([]int, x.Rank())
	for i := range perm {
		perm[i] = x.Rank() - 1 - i
	}
	return ops.Transpose(ops.Transpose(x, perm...).Contiguous(), perm...)
}

func idx(v ...int64) T { return tensor.FromSlice(v) }

var (
	// floats and numbers hold the half types, which compute through
	// float32 (eager/half.go) and are compared within one unit in their
	// last place (approx.Tolerance).
	floats  = []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16}
	numbers = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.BFloat16, tensor.Float16}
	every   = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool}
	// halves are the half-precision types.
	halves = []tensor.DType{tensor.BFloat16, tensor.Float16}
	// narrows are the half and 8-bit floats, which Cast and the layout
	// ops take; stored is every dtype.
	narrows = slices.Concat(halves, []tensor.DType{tensor.Float8E4M3, tensor.Float8E5M2})
	stored  = slices.Concat(every, narrows)
)

// ladder is the shapes elementwise ops run over: a scalar, empty, one
// element, small ones on both sides of the vector width, and rank 3.
var ladder = [][]int{{}, {0}, {1}, {3}, {2, 3}, {7}, {17}, {2, 1, 4}}

// unary samples fn over the ladder and a transposed layout in each dtype,
// values in [lo, hi); gradients in float64 where grad.
func unary(fn func(T) T, dts []tensor.DType, lo, hi float64, grad, second bool) []sample {
	var out []sample
	for _, dt := range dts {
		for _, s := range ladder {
			out = append(out, sample{name: fmt.Sprintf("%v%v", dt, s), call: func() { fn(of(dt, lo, hi, s...)) },
				grad: grad && dt == tensor.Float64 && len(s) > 0 && s[0] > 0, second: second})
		}
		out = append(out, sample{name: fmt.Sprintf("%v transposed", dt), call: func() { fn(tr(of(dt, lo, hi, 3, 4))) },
			grad: grad && dt == tensor.Float64, second: second})
	}
	return out
}

// binaryShapes are operand shape pairs: equal, broadcast either way, a
// scalar, empty.
var binaryShapes = [][2][]int{{{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {4}}, {{0, 3}, {3}}, {{17}, {17}}, {{1}, {}}}

// binary samples fn over binaryShapes and a transposed operand in each
// dtype, a in [alo, ahi) and b in [blo, bhi).
func binary(fn func(a, b T) T, dts []tensor.DType, alo, ahi, blo, bhi float64, grad, second bool) []sample {
	var out []sample
	for _, dt := range dts {
		for _, s := range binaryShapes {
			out = append(out, sample{name: fmt.Sprintf("%v%v%v", dt, s[0], s[1]),
				call: func() { fn(of(dt, alo, ahi, s[0]...), of(dt, blo, bhi, s[1]...)) },
				grad: grad && dt == tensor.Float64 && s[0] != nil && len(s[0]) > 0 && s[0][0] > 0, second: second})
		}
		out = append(out, sample{name: fmt.Sprintf("%v transposed", dt),
			call: func() { fn(tr(of(dt, alo, ahi, 3, 4)), of(dt, blo, bhi, 4)) }, grad: grad && dt == tensor.Float64, second: second})
	}
	return out
}

// one is a single sample.
func one(name string, call func(), grad, second bool) sample {
	return sample{name: name, call: call, grad: grad, second: second}
}

// underTape runs fn with x watched by a tape and asks the gradient of the
// sum of what fn returns: the backward ops' calls happen there.
func underTape(fn func(x []T) T, xs ...T) {
	tp := tape.New()
	tp.Watch(xs...)
	tp.Gradient(ops.Sum(fn(xs)), xs...)
}

// secondOrder runs fn under two tapes and differentiates the gradient's
// sum: the backward ops of the backward ops run there.
func secondOrder(fn func(x []T) T, xs ...T) {
	outer := tape.New()
	outer.Watch(xs...)
	inner := tape.New()
	inner.Watch(xs...)
	g := inner.Gradient(ops.Sum(fn(xs)), xs...)
	s := tensor.Scalar(0.0)
	for _, d := range g {
		if d != nil && d.DType() == tensor.Float64 {
			s = ops.Add(s, ops.Sum(ops.Square(d)))
		}
	}
	outer.Gradient(s, xs...)
}

func conv2D(format ops.DataFormat, o ops.Conv2DOpts, n, c, h, w, kh, kw, out int) (T, T, ops.Conv2DOpts) {
	o.Format = format
	x := r(-1, 1, n, h, w, c)
	if format == ops.NCHW {
		x = r(-1, 1, n, c, h, w)
	}
	return x, r(-1, 1, kh, kw, c, out), o
}

// dilatedWindow has strides, negative padding and both dilations.
var dilatedWindow = ops.Window{Dims: []int{2, 3}, Strides: []int{1, 2}, Padding: [][2]int{{1, 0}, {-1, 2}}, BaseDilation: []int{1, 2}, WindowDilation: []int{2, 1}}

var convCases = []ops.Conv2DOpts{
	{},
	{Padding: ops.Same, Strides: [2]int{2, 1}},
	{Padding: ops.Explicit, Explicit: [2][2]int{{1, 0}, {0, 2}}, Dilations: [2]int{1, 2}},
}

func samples() map[string][]sample {
	m := map[string][]sample{}
	add := func(name string, s ...sample) { m[name] = append(m[name], s...) }

	// Elementwise of one input.
	add("Neg", unary(ops.Neg, numbers, -2, 2, true, true)...)
	add("Abs", unary(ops.Abs, numbers, 0.1, 2, true, true)...)
	add("Abs", unary(ops.Abs, floats, -2, -0.1, true, true)...)
	add("Sign", unary(ops.Sign, numbers, -2, 2, true, true)...)
	add("Square", unary(ops.Square, numbers, -2, 2, true, true)...)
	add("Relu", unary(ops.Relu, numbers, -2, 2, false, false)...)
	add("Relu", one("away from 0", func() { ops.Relu(ops.Mul(ops.Sign(r(-1, 1, 9)), r(0.2, 1, 9))) }, true, true))
	add("ReluGrad", one("through Relu", func() {
		underTape(func(x []T) T { return ops.Mul(ops.Relu(x[0]), x[1]) }, ops.Mul(ops.Sign(r(-1, 1, 6)), r(0.2, 1, 6)), r(-1, 1, 6))
	}, true, true))
	add("ReluGrad", one("float32", func() { underTape(func(x []T) T { return ops.Relu(x[0]) }, ops.Cast(r(-1, 1, 20), tensor.Float32)) }, false, false))
	add("Exp", unary(ops.Exp, floats, -2, 2, true, true)...)
	add("Log", unary(ops.Log, floats, 0.2, 3, true, true)...)
	add("Sqrt", unary(ops.Sqrt, floats, 0.2, 3, true, true)...)
	add("Rsqrt", unary(ops.Rsqrt, floats, 0.2, 3, true, true)...)
	add("Tanh", unary(ops.Tanh, floats, -2, 2, true, true)...)
	add("Sigmoid", unary(ops.Sigmoid, floats, -4, 4, true, true)...)
	for _, op := range []struct {
		name string
		fn   func(T) T
	}{{"TanhGrad", ops.Tanh}, {"SigmoidGrad", ops.Sigmoid}, {"GeluTanhGrad", ops.GeluTanh}, {"GeluGrad", ops.Gelu},
		{"ErfcGrad", ops.Erfc}, {"ErfcxGrad", ops.Erfcx}, {"NdtrGrad", ops.Ndtr}, {"LogNdtrGrad", ops.LogNdtr}} {
		add(op.name, one("through "+op.name[:len(op.name)-4], func() {
			underTape(func(x []T) T { return ops.Mul(op.fn(x[0]), x[1]) }, r(-2, 2, 6), r(-1, 1, 6))
		}, true, true))
		add(op.name, one("float32 [3 4]", func() {
			underTape(func(x []T) T { return op.fn(x[0]) }, ops.Cast(of(tensor.Float64, -2, 2, 3, 4), tensor.Float32))
		}, false, false))
	}
	add("Softplus", unary(ops.Softplus, floats, -4, 4, true, true)...)
	add("Gelu", unary(ops.Gelu, floats, -3, 3, true, true)...)
	add("GeluTanh", unary(ops.GeluTanh, floats, -3, 3, true, true)...)
	activationSamples(add)
	linalgSamples(add)
	add("Sin", unary(ops.Sin, floats, -3, 3, true, true)...)
	add("Cos", unary(ops.Cos, floats, -3, 3, true, true)...)
	add("Log1p", unary(ops.Log1p, floats, -0.5, 2, true, true)...)
	add("Expm1", unary(ops.Expm1, floats, -2, 2, true, true)...)
	add("Erf", unary(ops.Erf, floats, -2, 2, true, true)...)
	add("Erfinv", unary(ops.Erfinv, floats, -0.9, 0.9, true, true)...)
	add("Erfc", unary(ops.Erfc, floats, -2, 3, true, true)...)
	add("BesselI0", unary(ops.BesselI0, floats, -3, 3, true, true)...)
	add("BesselI1", unary(ops.BesselI1, floats, -3, 3, true, true)...)
	add("BesselI0e", unary(ops.BesselI0e, floats, 0.2, 30, true, true)...)
	add("BesselI1e", unary(ops.BesselI1e, floats, -30, -0.2, true, true)...)
	add("Erfcx", unary(ops.Erfcx, floats, -1, 4, true, true)...)
	add("Ndtr", unary(ops.Ndtr, floats, -4, 3, true, true)...)
	add("LogNdtr", unary(ops.LogNdtr, floats, -6, 3, true, true)...)
	add("Ndtri", unary(ops.Ndtri, floats, 0.02, 0.98, true, true)...)
	add("NdtriGrad", one("through Ndtri", func() {
		underTape(func(x []T) T { return ops.Mul(ops.Ndtri(x[0]), x[1]) }, r(0.05, 0.95, 6), r(-1, 1, 6))
	}, true, true))
	add("Tan", unary(ops.Tan, floats, -1.3, 1.3, true, true)...)
	add("Asin", unary(ops.Asin, floats, -0.9, 0.9, true, true)...)
	add("Acos", unary(ops.Acos, floats, -0.9, 0.9, true, true)...)
	add("Atan", unary(ops.Atan, floats, -3, 3, true, true)...)
	add("Sinh", unary(ops.Sinh, floats, -3, 3, true, true)...)
	add("Cosh", unary(ops.Cosh, floats, -3, 3, true, true)...)
	add("Asinh", unary(ops.Asinh, floats, -3, 3, true, true)...)
	add("Acosh", unary(ops.Acosh, floats, 1.1, 4, true, true)...)
	add("Atanh", unary(ops.Atanh, floats, -0.9, 0.9, true, true)...)
	add("Log2", unary(ops.Log2, floats, 0.2, 3, true, true)...)
	add("Log10", unary(ops.Log10, floats, 0.2, 3, true, true)...)
	add("Exp2", unary(ops.Exp2, floats, -3, 3, true, true)...)
	add("Ceil", unary(ops.Ceil, floats, -3, 3, false, false)...)
	add("Floor", unary(ops.Floor, floats, -3, 3, false, false)...)
	add("Round", unary(ops.Round, floats, -3, 3, false, false)...)
	add("IsFinite", unary(ops.IsFinite, floats, -3, 3, false, false)...)
	add("IsFinite", one("non-finite", func() { ops.IsFinite(tensor.FromSlice([]float64{math.NaN(), math.Inf(1), 1, math.Inf(-1)})) }, false, false))
	add("LogicalNot", unary(ops.LogicalNot, []tensor.DType{tensor.Bool}, 0, 1, false, false)...)
	add("Identity", unary(ops.Identity, every, -2, 2, true, true)...)
	add("Identity", one("of a variable", func() { ops.Identity(tape.NewVariable("v", r(-1, 1, 3)).Value()) }, false, false))
	add("StopGradient", unary(ops.StopGradient, every, -2, 2, false, false)...)
	add("ToDevice", unary(func(x T) T { return ops.ToDevice(x, device.SecondCPU()) }, every, -2, 2, true, true)...)
	add("ToDevice", one("a transposed view", func() { ops.ToDevice(tr(r(-1, 1, 3, 4)), device.SecondCPU()) }, true, true),
		one("of a variable", func() { ops.ToDevice(tape.NewVariable("v", r(-1, 1, 3)).Value(), device.SecondCPU()) }, false, false))
	for _, to := range slices.Concat([]tensor.DType{tensor.Float32, tensor.Int64, tensor.Bool, tensor.Float64, tensor.Uint8}, narrows) {
		if to == tensor.Float64 || to == tensor.Uint8 { // these two from the narrow floats alone
			add("Cast", unary(func(x T) T { return ops.Cast(x, to) }, narrows, -3, 3, false, false)...)
			continue
		}
		add("Cast", unary(func(x T) T { return ops.Cast(x, to) }, stored, -3, 3, false, false)...)
	}
	// Rounding's edges: ties, overflow to infinity, float16's subnormals
	// and underflow, NaN and infinities, in both directions.
	edges := []float32{1 + 0x1p-8, 1 + 0x3p-8, 1 + 0x1p-11, 65504, 65520, 1e30, 3e38, 0x1p-24, 0x1p-25, 0x1.8p-25,
		-0x1p-20, float32(math.NaN()), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}
	for _, h := range narrows {
		add("Cast", one(fmt.Sprintf("float32 edges to %v", h), func() { ops.Cast(tensor.FromSlice(edges), h) }, false, false),
			one(fmt.Sprintf("%v edges to float32", h), func() { ops.Cast(tensor.FromFloat32s(h, edges), tensor.Float32) }, false, false))
	}
	add("Cast", one("float64 to float64", func() { ops.Cast(r(-1, 1, 5), tensor.Float64) }, true, true),
		one("float32 to uint8, out of range", func() { ops.Cast(tensor.FromSlice([]float32{-3, 300, 1e10, float32(math.NaN())}), tensor.Uint8) }, false, false))

	// Elementwise of two inputs, broadcasting.
	add("Add", binary(ops.Add, numbers, -2, 2, -2, 2, true, true)...)
	add("Sub", binary(ops.Sub, numbers, -2, 2, -2, 2, true, true)...)
	add("Mul", binary(ops.Mul, numbers, -2, 2, -2, 2, true, true)...)
	add("Div", binary(ops.Div, floats, -2, 2, 0.5, 2, true, true)...)
	add("Div", binary(ops.Div, []tensor.DType{tensor.Int32, tensor.Int64, tensor.Uint8}, -9, 9, -9, 9, false, false)...)
	add("Rem", binary(ops.Rem, floats, 1.1, 1.9, 0.6, 0.9, true, true)...)
	add("Rem", binary(ops.Rem, []tensor.DType{tensor.Int32, tensor.Int64, tensor.Uint8}, -9, 9, -9, 9, false, false)...)
	add("Max", binary(ops.Max, numbers, -2, 2, -2, 2, true, true)...)
	add("Min", binary(ops.Min, numbers, -2, 2, -2, 2, true, true)...)
	add("Pow", binary(ops.Pow, floats, 0.5, 2, -2, 2, true, true)...)
	add("Atan2", binary(ops.Atan2, floats, -2, 2, 0.3, 2, true, true)...)
	add("Atan2", binary(ops.Atan2, floats, -2, 2, -2, -0.3, true, true)...)
	add("Hypot", binary(ops.Hypot, floats, 0.3, 2, -2, -0.3, true, true)...)
	add("LogAddExp", binary(ops.LogAddExp, floats, -2, 2, -3, 3, true, true)...)
	add("Lgamma", unary(ops.Lgamma, floats, 0.2, 4, true, true)...)
	add("Lgamma", unary(ops.Lgamma, floats, -2.9, -2.1, true, true)...)
	add("Digamma", unary(ops.Digamma, floats, 0.3, 4, true, true)...)
	add("Digamma", unary(ops.Digamma, floats, -0.9, -0.1, true, true)...)
	add("Polygamma", unary(func(x T) T { return ops.Polygamma(1, x) }, floats, 0.3, 4, true, true)...)
	add("Polygamma", unary(func(x T) T { return ops.Polygamma(3, x) }, floats, -1.9, -1.1, true, true)...)
	add("Zeta", binary(ops.Zeta, floats, 1.5, 4, 0.3, 3, true, true)...)
	// The series' side (x ≤ a), the fraction's (x > a) and a < 1.
	add("Igamma", binary(ops.Igamma, floats, 0.3, 6, 0.2, 8, true, true)...)
	add("Igammac", binary(ops.Igammac, floats, 0.3, 6, 0.2, 8, true, true)...)
	add("Pow", binary(ops.Pow, []tensor.DType{tensor.Int32, tensor.Int64, tensor.Uint8}, 0, 4, 0, 4, false, false)...)
	for _, cmp := range []struct {
		name string
		fn   func(a, b T) T
		dts  []tensor.DType
	}{{"Eq", ops.Eq, every}, {"Ne", ops.Ne, every}, {"Lt", ops.Lt, numbers}, {"Le", ops.Le, numbers}, {"Gt", ops.Gt, numbers}, {"Ge", ops.Ge, numbers}} {
		add(cmp.name, binary(cmp.fn, cmp.dts, -2, 2, -2, 2, false, false)...)
	}
	add("LogicalAnd", binary(ops.LogicalAnd, []tensor.DType{tensor.Bool}, 0, 1, 0, 1, false, false)...)
	add("LogicalOr", binary(ops.LogicalOr, []tensor.DType{tensor.Bool}, 0, 1, 0, 1, false, false)...)
	for _, dt := range every {
		add("Select", one(fmt.Sprintf("%v same shapes", dt), func() { ops.Where(of(tensor.Bool, 0, 1, 2, 3), of(dt, -2, 2, 2, 3), of(dt, -2, 2, 2, 3)) }, dt == tensor.Float64, dt == tensor.Float64))
	}
	for _, dt := range every {
		add("Nonzero", one(fmt.Sprintf("%v[3 4]", dt), func() { ops.Nonzero(of(dt, -2, 2, 3, 4)) }, false, false),
			one(fmt.Sprintf("%v transposed", dt), func() { ops.Nonzero(tr(of(dt, -2, 2, 3, 4))) }, false, false))
	}
	add("Nonzero", one("scalar", func() { ops.Nonzero(tensor.Scalar(int64(3))) }, false, false),
		one("empty", func() { ops.Nonzero(tensor.Zeros(tensor.Float32, 0, 5)) }, false, false),
		one("rank 3, a mask", func() { ops.Nonzero(of(tensor.Bool, 0, 1, 2, 3, 5)) }, false, false))
	add("Select", one("scalar predicate", func() { ops.Where(of(tensor.Bool, 0, 1), r(-1, 1, 4), r(-1, 1, 4)) }, true, true),
		one("broadcast", func() { ops.Where(of(tensor.Bool, 0, 1, 2, 1), r(-1, 1, 1, 3), r(-1, 1, 2, 3)) }, true, true))

	// Reductions.
	for _, dt := range numbers {
		for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMax, ops.ReduceMin, ops.ReduceProd} {
			add("Reduce", one(fmt.Sprintf("%v kind %d", dt, kind), func() { ops.Reduce(of(dt, -2, 2, 2, 3, 4), ops.Reduction{Kind: kind, Dims: []int{0, 2}}) }, false, false))
		}
	}
	add("Reduce",
		one("sum all", func() { ops.Sum(r(-1, 1, 3, 4)) }, true, true),
		one("mean keepdims", func() {
			ops.Reduce(r(-1, 1, 2, 3, 4), ops.Reduction{Kind: ops.ReduceMean, Dims: []int{1}, KeepDims: true})
		}, true, true),
		one("max", func() { ops.Amax(r(-1, 1, 3, 5), 1) }, true, true),
		one("min transposed", func() { ops.Amin(tr(r(-1, 1, 4, 3)), 0) }, true, true),
		one("prod", func() { ops.Prod(r(0.5, 1.5, 3, 4), 0) }, true, true),
		one("prod with zeros", func() {
			ops.Prod(ops.Mul(r(0.5, 1.5, 2, 4), tensor.FromSlice([]float64{1, 0, 1, 1, 1, 1, 0, 0}, 2, 4)), 1)
		}, true, true),
		one("prod with three zeros", func() {
			ops.Prod(ops.Mul(r(0.5, 1.5, 2, 4), tensor.FromSlice([]float64{0, 0, 1, 0, 1, 1, 1, 1}, 2, 4)), 1)
		}, true, true),
		one("empty", func() { ops.Sum(r(-1, 1, 0, 3), 0) }, false, false),
		one("float32 long rows", func() { ops.Sum(ops.Cast(r(-1, 1, 3, 1000), tensor.Float32), 1) }, false, false),
		one("scalar", func() { ops.Sum(r(-1, 1)) }, true, true))
	add("Cumsum", one("axis 1", func() { ops.Cumsum(r(-1, 1, 3, 4), 1, false, false) }, true, true),
		one("exclusive reverse", func() { ops.Cumsum(r(-1, 1, 4, 3), 0, true, true) }, true, true),
		one("int64", func() { ops.Cumsum(of(tensor.Int64, 0, 9, 5), 0, false, true) }, false, false),
		one("empty", func() { ops.Cumsum(r(-1, 1, 0, 3), 0, false, false) }, false, false),
		one("empty rows", func() { ops.Cumsum(r(-1, 1, 3, 0), 1, true, false) }, false, false))
	add("Cumprod", one("axis 1", func() { ops.Cumprod(r(-2, 2, 3, 5), 1, false, false) }, true, true),
		one("exclusive reverse", func() { ops.Cumprod(r(-2, 2, 5, 3), 0, true, true) }, true, true),
		one("exclusive", func() { ops.Cumprod(r(-2, 2, 2, 6), 1, true, false) }, true, true),
		one("reverse, zeros", func() {
			ops.Cumprod(ops.Mul(r(-2, 2, 4, 3), tensor.FromSlice([]float64{1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1}, 4, 3)), 0, false, true)
		}, true, true),
		one("int64", func() { ops.Cumprod(of(tensor.Int64, 1, 5, 5), 0, false, true) }, false, false),
		one("empty", func() { ops.Cumprod(r(-1, 1, 0, 3), 0, false, false) }, false, false),
		one("empty rows", func() { ops.Cumprod(r(-1, 1, 3, 0), 1, false, true) }, false, false))

	// Shape and data movement.
	for _, dt := range stored {
		add("Reshape", one(fmt.Sprint(dt), func() { ops.Reshape(of(dt, -2, 2, 2, 6), 3, -1) }, dt == tensor.Float64, false))
		add("Transpose", one(fmt.Sprint(dt), func() { ops.Transpose(of(dt, -2, 2, 2, 3, 4), 2, 0, 1) }, dt == tensor.Float64, false))
		add("BroadcastTo", one(fmt.Sprint(dt), func() { ops.BroadcastTo(of(dt, -2, 2, 3, 1), 2, 3, 4) }, dt == tensor.Float64, false))
		add("Slice", one(fmt.Sprint(dt), func() { ops.Slice(of(dt, -2, 2, 6, 5), []int{1, 0}, []int{5, 4}, []int{2, 3}) }, dt == tensor.Float64, false))
		add("Pad", one(fmt.Sprint(dt), func() {
			ops.Pad(of(dt, -2, 2, 3, 4), of(dt, -1, 1), ops.PadDim{Low: -1, High: 2, Interior: 1}, ops.PadDim{Low: 1, High: -1, Interior: 2})
		}, dt == tensor.Float64, dt == tensor.Float64))
		add("Concatenate", one(fmt.Sprint(dt), func() { ops.Concatenate(1, of(dt, -2, 2, 2, 3), of(dt, -2, 2, 2, 1), of(dt, -2, 2, 2, 0)) }, dt == tensor.Float64, false))
		add("Split", one(fmt.Sprint(dt), func() { ops.Split(of(dt, -2, 2, 2, 6, 3), 1, []int{1, 0, 3, 2}) }, dt == tensor.Float64, dt == tensor.Float64))
		add("Rev", one(fmt.Sprint(dt), func() { ops.Rev(of(dt, -2, 2, 3, 4), 0, 1) }, dt == tensor.Float64, false))
		add("DynamicSlice", one(fmt.Sprint(dt), func() { ops.DynamicSlice(of(dt, -2, 2, 5, 4), idx(3, -1), 3, 2) }, dt == tensor.Float64, false))
		add("DynamicUpdateSlice", one(fmt.Sprint(dt), func() { ops.DynamicUpdateSlice(of(dt, -2, 2, 5, 4), of(dt, -2, 2, 2, 3), idx(4, 1)) }, dt == tensor.Float64, false))
		add("Gather", one(fmt.Sprint(dt), func() { ops.Gather(of(dt, -2, 2, 4, 3), idx(3, 0, 3, 1), 0) }, dt == tensor.Float64, false))
		add("Scatter", one(fmt.Sprint(dt), func() { ops.Scatter(of(dt, -2, 2, 4, 3), idx(2, 0), of(dt, -2, 2, 2, 3), 0) }, dt == tensor.Float64, false))
		add("TakeAlongAxis", one(fmt.Sprint(dt), func() {
			ops.TakeAlongAxis(of(dt, -2, 2, 3, 4), tensor.FromSlice([]int32{0, 3, 1, 1, 2, 0}, 3, 2), 1)
		}, dt == tensor.Float64, false))
		add("ExtractPatches", one(fmt.Sprint(dt), func() {
			ops.ExtractPatches(of(dt, -2, 2, 1, 5, 4, 2), of(dt, -1, 1), ops.Window{Dims: []int{1, 2, 3, 2}, Strides: []int{1, 2, 1, 1},
				Padding: [][2]int{{0, 0}, {1, 0}, {1, 1}, {0, 0}}})
		}, dt == tensor.Float64, false))
	}
	add("Reshape", one("transposed input", func() { ops.Reshape(tr(r(-1, 1, 3, 4)), 12) }, true, true),
		one("empty", func() { ops.Reshape(r(-1, 1, 0, 4), 2, 0, 2) }, false, false))
	add("Transpose", one("transposed input", func() { ops.Transpose(tr(r(-1, 1, 3, 4))) }, true, true))
	add("Slice", one("empty", func() { ops.Slice(r(-1, 1, 4, 3), []int{2, 0}, []int{2, 3}, nil) }, false, false))
	add("Split", one("unstack", func() { ops.Unstack(r(-1, 1, 3, 2), 0) }, true, true),
		one("transposed input", func() { ops.Split(tr(r(-1, 1, 3, 4)), 1, []int{3, 1}) }, true, true),
		one("empty", func() { ops.Split(r(-1, 1, 0, 4), 1, []int{3, 1}) }, false, false))
	add("Concatenate", one("transposed inputs", func() { ops.Concatenate(0, tr(r(-1, 1, 3, 2)), r(-1, 1, 1, 2)) }, true, true))
	add("DynamicSlice", one("int32 starts", func() { ops.DynamicSlice(r(-1, 1, 4), tensor.FromSlice([]int32{9}), 2) }, true, true))
	add("Gather", one("axis 1, indices [2 2]", func() { ops.Gather(r(-1, 1, 2, 4, 3), tensor.FromSlice([]int32{0, 3, 3, 1}, 2, 2), 1) }, true, true),
		one("scalar index", func() { ops.Gather(r(-1, 1, 4, 2), tensor.Scalar(int64(2)), 0) }, true, true))
	add("ScatterAdd", one("repeats", func() { ops.ScatterAdd(r(-1, 1, 4, 3), idx(1, 1, 3), r(-1, 1, 3, 3), 0) }, true, true))
	add("ScatterAddZeros", one("Gather's gradient, repeats", func() {
		underTape(func(x []T) T { return ops.Gather(x[0], idx(1, 1, 3), 0) }, r(-1, 1, 4, 3))
	}, true, true), one("axis 1, indices [2 2]", func() {
		underTape(func(x []T) T { return ops.Gather(x[0], tensor.FromSlice([]int32{0, 3, 3, 1}, 2, 2), 1) }, r(-1, 1, 2, 4, 3))
	}, true, true), one("float32 embedding", func() {
		underTape(func(x []T) T { return ops.Gather(x[0], idx(5, 0, 5, 2), 0) }, ops.Cast(r(-1, 1, 6, 4), tensor.Float32))
	}, false, false), one("bfloat16 embedding", func() {
		underTape(func(x []T) T { return ops.Gather(x[0], idx(5, 0, 5, 2), 0) }, ops.Cast(r(-1, 1, 6, 4), tensor.BFloat16))
	}, false, false))
	// The global norm's multi-tensor ops (nn.ClipByGlobalNorm): more
	// tensors than a GPU launch's table holds, an empty one, a transposed
	// one (summed in its row-major order, as its trace sums its copy),
	// float32.
	many := func(dt tensor.DType) []T {
		xs := []T{of(dt, -2, 2, 0, 3), tr(of(dt, -2, 2, 3, 5)), of(dt, -2, 2, 1100)}
		for len(xs) < 27 {
			xs = append(xs, of(dt, -2, 2, 1+len(xs)))
		}
		return xs
	}
	add("SumOfSquares", one("float64", func() { ops.SumOfSquares(r(-2, 2, 3, 4), r(-2, 2, 5)) }, true, true),
		one("float64, 27 tensors", func() { ops.SumOfSquares(many(tensor.Float64)...) }, false, false),
		one("float32, 27 tensors", func() { ops.SumOfSquares(many(tensor.Float32)...) }, false, false),
		one("bfloat16", func() { ops.SumOfSquares(of(tensor.BFloat16, -2, 2, 3, 4), of(tensor.BFloat16, -2, 2, 5)) }, false, false),
		one("float16", func() { ops.SumOfSquares(of(tensor.Float16, -2, 2, 3, 4), of(tensor.Float16, -2, 2, 5)) }, false, false),
		// SumOfSquaresAs: the same op, its sum rounded to a wider dtype.
		one("bfloat16 as float32, 27 tensors", func() { ops.SumOfSquaresAs(tensor.Float32, many(tensor.BFloat16)...) }, false, false),
		one("float16 as float32", func() {
			ops.SumOfSquaresAs(tensor.Float32, of(tensor.Float16, -2, 2, 3, 4), of(tensor.Float16, -2, 2, 5))
		}, false, false),
		one("float32 as float64", func() { ops.SumOfSquaresAs(tensor.Float64, of(tensor.Float32, -2, 2, 3, 4)) }, false, false))
	add("ScaleEach", one("float64", func() { ops.ScaleEach(r(0.5, 2), r(-2, 2, 3, 4), r(-2, 2, 5)) }, true, true),
		one("float64, 27 tensors", func() { ops.ScaleEach(r(0.5, 2), many(tensor.Float64)...) }, false, false),
		one("float32, 27 tensors", func() { ops.ScaleEach(of(tensor.Float32, 0.5, 2), many(tensor.Float32)...) }, false, false),
		one("bfloat16", func() {
			ops.ScaleEach(of(tensor.BFloat16, 0.5, 2), of(tensor.BFloat16, -2, 2, 3, 4), of(tensor.BFloat16, -2, 2, 5))
		}, false, false),
		one("float16", func() {
			ops.ScaleEach(of(tensor.Float16, 0.5, 2), of(tensor.Float16, -2, 2, 3, 4), of(tensor.Float16, -2, 2, 5))
		}, false, false))
	for _, dt := range numbers {
		add("ScatterAdd", one(fmt.Sprint(dt), func() { ops.ScatterAdd(of(dt, -2, 2, 3, 4), idx(3, 0), of(dt, -2, 2, 3, 2), 1) }, false, false))
	}
	// TakeAlongAxis's gradient (Sort's and TopK's): the op on every
	// numeric dtype, and through the gradients.
	putZeros := eager.Lookup("PutAlongAxisAddZeros")
	for _, dt := range numbers {
		add("PutAlongAxisAddZeros", one(fmt.Sprint(dt), func() {
			eager.Run(putZeros, opattr.ScatterZerosAttrs{Axis: 1, Size: 3}, of(dt, -2, 2, 2, 2), tensor.FromSlice([]int64{0, 0, 2, 1}, 2, 2))
		}, false, false))
	}
	add("PutAlongAxisAddZeros", one("through TakeAlongAxis", func() {
		underTape(func(x []T) T { return ops.TakeAlongAxis(x[0], tensor.FromSlice([]int64{0, 0, 2, 1}, 2, 2), 1) }, r(-1, 1, 2, 3))
	}, true, true), one("Sort's gradient", func() {
		underTape(func(x []T) T { return ops.Mul(ops.Sort(x[0], 1, false), x[1]) }, r(-1, 1, 3, 5), r(-1, 1, 3, 5))
	}, true, true), one("TopK's gradient, float32", func() {
		underTape(func(x []T) T { v, _ := ops.TopK(x[0], 2); return v }, ops.Cast(r(-1, 1, 4, 6), tensor.Float32))
	}, false, false), one("TakeAlongAxis's along axis 0, repeats", func() {
		underTape(func(x []T) T { return ops.TakeAlongAxis(x[0], tensor.FromSlice([]int64{2, 2, 0, 1, 0, 0}, 2, 3), 0) }, r(-1, 1, 3, 3))
	}, true, true))

	// Products.
	for _, dt := range numbers {
		add("MatMul", one(fmt.Sprint(dt), func() { ops.MatMul(of(dt, -2, 2, 3, 4), of(dt, -2, 2, 4, 5)) }, false, false))
	}
	for _, tt := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		add("MatMul", one(fmt.Sprintf("transposes %v", tt), func() {
			a, b := r(-1, 1, 2, 3, 4), r(-1, 1, 2, 4, 5)
			if tt[0] {
				a = r(-1, 1, 2, 4, 3)
			}
			if tt[1] {
				b = r(-1, 1, 2, 5, 4)
			}
			ops.MatMulT(a, b, tt[0], tt[1])
		}, true, true))
	}
	for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
		// Finite differences only without Relu, whose mask flips where a
		// result is exactly 0.
		add("FusedMatMul", one(fmt.Sprint(act), func() { ops.FusedMatMul(r(-1, 1, 3, 4), r(-1, 1, 4, 5), r(-1, 1, 5), act) }, act == ops.NoActivation, act == ops.NoActivation),
			one(fmt.Sprintf("float32 %v, rows over the workers", act), func() {
				ops.FusedMatMul(ops.Cast(r(-1, 1, 130, 33), tensor.Float32), ops.Cast(r(-1, 1, 33, 40), tensor.Float32), ops.Cast(r(-1, 1, 40), tensor.Float32), act)
			}, false, false),
			one(fmt.Sprintf("empty %v", act), func() { ops.FusedMatMul(r(-1, 1, 0, 3), r(-1, 1, 3, 2), r(-1, 1, 2), act) }, false, false),
			one(fmt.Sprintf("no contraction %v", act), func() { ops.FusedMatMul(r(-1, 1, 2, 0), r(-1, 1, 0, 3), r(-1, 1, 3), act) }, false, false))
	}
	// ScaledMatMul of 8-bit floats (torch._scaled_mm): every pair of
	// operand types and every out dtype; a shape of multiples of 16 (the
	// FP8 GEMM's, on the GPU; e5m2 by e5m2 is not one of its pairs), one
	// that is not, and empty ones. No gradient.
	f8 := []tensor.DType{tensor.Float8E4M3, tensor.Float8E5M2}
	for i, out := range []tensor.DType{tensor.BFloat16, tensor.Float32, tensor.Float16} {
		for _, pair := range [][2]tensor.DType{{f8[0], f8[0]}, {f8[0], f8[1]}, {f8[1], f8[0]}, {f8[1], f8[1]}} {
			scale := func(v float32) T { return tensor.Scalar(v) }
			gemm := one(fmt.Sprintf("%v by %v into %v", pair[0], pair[1], out), func() {
				ops.ScaledMatMul(of(pair[0], -4, 4, 32, 48), of(pair[1], -4, 4, 48, 16), scale(0.5), scale(float32(i)+0.25), out)
			}, false, false)
			gemm.tol = approx.FP8GEMM // the FP8 GEMM's own accumulation
			add("ScaledMatMul", gemm,
				one(fmt.Sprintf("%v by %v into %v, 3x5x7", pair[0], pair[1], out), func() {
					ops.ScaledMatMul(of(pair[0], -4, 4, 3, 5), of(pair[1], -4, 4, 5, 7), scale(2), scale(-1.5), out)
				}, false, false))
		}
		add("ScaledMatMul", one(fmt.Sprintf("empty into %v", out), func() {
			ops.ScaledMatMul(of(f8[0], -1, 1, 0, 16), of(f8[0], -1, 1, 16, 16), tensor.Scalar(float32(1)), tensor.Scalar(float32(1)), out)
		}, false, false),
			one(fmt.Sprintf("no contraction into %v", out), func() {
				ops.ScaledMatMul(of(f8[0], -1, 1, 16, 0), of(f8[1], -1, 1, 0, 16), tensor.Scalar(float32(1)), tensor.Scalar(float32(1)), out)
			}, false, false))
	}
	// Attention: the op and its backward (through its gradient); finite
	// differences on float64 (its mask picks keys, it does not threshold).
	causalMask := tensor.FromSlice([]bool{true, false, true, true, true, false, true, true, true, true, false, true}, 3, 4)
	padding := tensor.FromSlice([]bool{true, true, true, false, true, true, false, false}, 2, 1, 4) // each sequence's keys, broadcast over its queries
	for _, c := range []struct {
		name   string
		mask   T
		causal bool
	}{{"plain", nil, false}, {"causal", nil, true}, {"masked", causalMask, false}, {"key padding, causal", padding, true}} {
		add("ScaledDotProductAttention", one(c.name, func() {
			ops.Attention(r(-1, 1, 2, 3, 5), r(-1, 1, 2, 4, 5), r(-1, 1, 2, 4, 3), c.mask, c.causal, 0)
		}, true, true),
			one("float32 "+c.name, func() {
				f := func(x T) T { return ops.Cast(x, tensor.Float32) }
				ops.Attention(f(r(-1, 1, 2, 3, 5)), f(r(-1, 1, 2, 4, 5)), f(r(-1, 1, 2, 4, 3)), c.mask, c.causal, 0)
			}, false, false))
		add("ScaledDotProductAttentionBackprop", one(c.name, func() {
			underTape(func(in []T) T { return ops.Attention(in[0], in[1], in[2], c.mask, c.causal, 0) }, r(-1, 1, 2, 3, 5), r(-1, 1, 2, 4, 5), r(-1, 1, 2, 4, 3))
		}, true, true))
	}
	// Attention with its weights dropped: the op itself (ops.AttentionDropout
	// composes it on the CPU, so the samples call it), the draws from an
	// offset, and from a starts vector's slot; the gradients (through the
	// backward op's gradient, the mask drawn again, for the second).
	starts := tensor.FromSlice([]int64{4, 30})
	dropOp := eager.Lookup("ScaledDotProductAttentionDropout")
	fusedDrop := func(q, k, v, mask T, causal bool, rate float64, starts T, slot int, offset uint64, key [2]uint32) T {
		a := ops.AttentionDropoutAttrs{AttentionAttrs: ops.AttentionAttrs{Scale: 1 / math.Sqrt(float64(q.Dim(-1))), Causal: causal}, Rate: rate, Key: key, Slot: slot, Offset: offset}
		in := []T{q, k, v}
		for _, x := range []T{starts, mask} {
			if x != nil {
				in = append(in, x)
			}
		}
		return eager.Run(dropOp, a, in...)[0]
	}
	for _, c := range []struct {
		name   string
		starts T
		causal bool
		mask   T
	}{{"plain", nil, false, nil}, {"causal, from starts", starts, true, nil}, {"key padding, causal, from starts", starts, true, padding}} {
		drop := func(in []T) T {
			return fusedDrop(in[0], in[1], in[2], c.mask, c.causal, 0.4, c.starts, 1, 9, [2]uint32{5, 6})
		}
		add("ScaledDotProductAttentionDropout", one(c.name, func() { drop([]T{r(-1, 1, 2, 3, 5), r(-1, 1, 2, 4, 5), r(-1, 1, 2, 4, 3)}) }, true, true))
		add("ScaledDotProductAttentionDropoutBackprop", one(c.name, func() {
			underTape(drop, r(-1, 1, 2, 3, 5), r(-1, 1, 2, 4, 5), r(-1, 1, 2, 4, 3))
		}, true, true))
	}
	// The half types with heads of 16: a GPU's tensor-core flash kernels
	// (their probabilities rounded to the half type before the products).
	for _, h := range []struct {
		dt  tensor.DType
		tol float64
	}{{tensor.BFloat16, approx.HalfAttentionBF16}, {tensor.Float16, approx.HalfAttentionF16}} {
		qkv := func() (T, T, T) {
			c := func(x T) T { return ops.Cast(x, h.dt) }
			return c(r(-1, 1, 2, 5, 16)), c(r(-1, 1, 2, 7, 16)), c(r(-1, 1, 2, 7, 16))
		}
		mask := tensor.FromSlice([]bool{true, false, true, true, true, false, true, false, true, true, false, true, true, true, true, true, false, true, true, false, true, true, true, false, true, true, true, true, false, true, true, true, false, true, true}, 5, 7)
		fwd := one(fmt.Sprintf("%v causal, heads of 16", h.dt), func() { q, k, v := qkv(); ops.Attention(q, k, v, nil, true, 0) }, false, false)
		masked := one(fmt.Sprintf("%v masked, heads of 16", h.dt), func() { q, k, v := qkv(); ops.Attention(q, k, v, mask, false, 0) }, false, false)
		bwd := one(fmt.Sprintf("%v causal, heads of 16", h.dt), func() {
			q, k, v := qkv()
			underTape(func(in []T) T { return ops.Attention(in[0], in[1], in[2], nil, true, 0) }, q, k, v)
		}, false, false)
		fwd.tol, masked.tol, bwd.tol = h.tol, h.tol, h.tol
		add("ScaledDotProductAttention", fwd, masked)
		add("ScaledDotProductAttentionBackprop", bwd)
		dropped := func(in []T) T {
			return fusedDrop(in[0], in[1], in[2], nil, true, 0.3, nil, 0, 3, [2]uint32{1, 2})
		}
		dfwd := one(fmt.Sprintf("%v causal, heads of 16, dropped", h.dt), func() { q, k, v := qkv(); dropped([]T{q, k, v}) }, false, false)
		dbwd := one(fmt.Sprintf("%v causal, heads of 16, dropped", h.dt), func() { q, k, v := qkv(); underTape(dropped, q, k, v) }, false, false)
		dfwd.tol, dbwd.tol = h.tol, h.tol
		add("ScaledDotProductAttentionDropout", dfwd)
		add("ScaledDotProductAttentionDropoutBackprop", dbwd)
	}
	// LayerNorm and RMSNorm: the op and its backward (through its
	// gradient).
	f32 := func(x T) T { return ops.Cast(x, tensor.Float32) }
	add("LayerNorm", one("layer", func() { ops.LayerNorm(r(-1, 1, 3, 5), r(-1, 1, 5), r(-1, 1, 5), 1e-5) }, true, true),
		one("rms", func() { ops.RMSNorm(r(-1, 1, 2, 3, 4), r(-1, 1, 4), 1e-5) }, true, true),
		one("float32 no offset", func() { ops.LayerNorm(f32(r(-1, 1, 4, 7)), f32(r(-1, 1, 7)), nil, 1e-5) }, false, false),
		one("empty rows", func() { ops.LayerNorm(r(-1, 1, 0, 5), r(-1, 1, 5), r(-1, 1, 5), 1e-5) }, false, false),
		one("empty features", func() { ops.RMSNorm(r(-1, 1, 3, 0), r(-1, 1, 0), 1e-5) }, false, false),
		one("bfloat16", func() {
			h := func(x T) T { return ops.Cast(x, tensor.BFloat16) }
			ops.LayerNorm(h(r(-1, 1, 3, 8)), h(r(-1, 1, 8)), h(r(-1, 1, 8)), 1e-5)
		}, false, false),
		one("bfloat16 x, float32 parameters", func() {
			ops.LayerNorm(ops.Cast(r(-1, 1, 5, 12), tensor.BFloat16), f32(r(-1, 1, 12)), f32(r(-1, 1, 12)), 1e-5)
		}, false, false),
		one("float16 x, float32 scale (rms)", func() {
			ops.RMSNorm(ops.Cast(r(-1, 1, 4, 10), tensor.Float16), f32(r(-1, 1, 10)), 1e-5)
		}, false, false))
	// Its backward with float32 parameters of a half x (mixed
	// precision's norms): dx of x's dtype, the parameters' gradients in
	// float32.
	mixedNorm := func(in []T) T {
		return ops.Cast(ops.LayerNorm(ops.Cast(in[0], tensor.BFloat16), in[1], in[2], 1e-5), tensor.Float32)
	}
	add("LayerNormBackprop", one("bfloat16 x, float32 parameters, through its op", func() {
		underTape(mixedNorm, f32(r(-1, 1, 6, 16)), f32(r(-1, 1, 16)), f32(r(-1, 1, 16)))
	}, false, false))
	// LSTMCell: the op and its backward (through its gradient), float64
	// with finite differences, the other float dtypes, an empty batch.
	lstm := func(in []T) T { h, next := ops.LSTMCell(in[0], in[1], in[2]); return ops.Add(h, ops.Sin(next)) }
	add("LSTMCell", one("float64", func() { ops.LSTMCell(r(-3, 3, 3, 8), r(-2, 2, 3, 8), r(-2, 2, 3, 2)) }, true, true),
		one("empty batch", func() { ops.LSTMCell(r(-3, 3, 0, 8), r(-2, 2, 0, 8), r(-2, 2, 0, 2)) }, false, false))
	for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16, tensor.Float16} {
		add("LSTMCell", one(fmt.Sprint(dt), func() { ops.LSTMCell(of(dt, -3, 3, 4, 12), of(dt, -2, 2, 4, 12), of(dt, -2, 2, 4, 3)) }, false, false))
	}
	add("LSTMCellBackprop", one("through its op", func() { underTape(lstm, r(-3, 3, 3, 8), r(-2, 2, 3, 8), r(-2, 2, 3, 2)) }, true, true),
		one("float32 through its op", func() { underTape(lstm, f32(r(-3, 3, 5, 12)), f32(r(-2, 2, 5, 12)), f32(r(-2, 2, 5, 3))) }, false, false))
	// FusedMatMul's weight and bias gradients in one op (a GPU's one
	// GEMM): through FusedMatMul's gradient, float64 with finite
	// differences, float32, an empty batch, the half types.
	dense := func(in []T) T { return ops.Sin(ops.FusedMatMul(in[0], in[1], in[2], ops.ReluActivation)) }
	add("FusedMatMulWeightsGrad", one("through FusedMatMul's gradient", func() { underTape(dense, r(-1, 1, 5, 3), r(-1, 1, 3, 4), r(-1, 1, 4)) }, true, true),
		one("float32", func() { underTape(dense, f32(r(-1, 1, 7, 6)), f32(r(-1, 1, 6, 5)), f32(r(-1, 1, 5))) }, false, false),
		one("empty batch", func() { underTape(dense, r(-1, 1, 0, 3), r(-1, 1, 3, 4), r(-1, 1, 4)) }, false, false))
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		add("FusedMatMulWeightsGrad", one(fmt.Sprint(dt), func() { underTape(dense, of(dt, -1, 1, 6, 8), of(dt, -1, 1, 8, 4), of(dt, -1, 1, 4)) }, false, false))
	}
	// LSTMSequence: the op and its backward (through its gradient),
	// float64 with finite differences, five rows (a block of four and
	// one), the other float dtypes, no steps.
	seq := func(in []T) T {
		ys, h, c := ops.LSTMSequence(in[0], in[1], in[2], in[3])
		return ops.Add(ops.Sum(ops.Sin(ys)), ops.Sum(ops.Mul(h, c)))
	}
	add("LSTMSequence", one("float64", func() { ops.LSTMSequence(r(-2, 2, 5, 3, 12), r(-1, 1, 3, 12), r(-1, 1, 5, 3), r(-1, 1, 5, 3)) }, true, true),
		one("no steps", func() { ops.LSTMSequence(r(-2, 2, 2, 0, 8), r(-1, 1, 2, 8), r(-1, 1, 2, 2), r(-1, 1, 2, 2)) }, false, false))
	for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16, tensor.Float16} {
		add("LSTMSequence", one(fmt.Sprint(dt), func() {
			ops.LSTMSequence(of(dt, -2, 2, 6, 4, 20), of(dt, -1, 1, 5, 20), of(dt, -1, 1, 6, 5), of(dt, -1, 1, 6, 5))
		}, false, false))
	}
	add("LSTMSequenceBackprop", one("through its op", func() { underTape(seq, r(-2, 2, 3, 4, 8), r(-1, 1, 2, 8), r(-1, 1, 3, 2), r(-1, 1, 3, 2)) }, true, true),
		one("float32 through its op", func() {
			underTape(seq, f32(r(-2, 2, 5, 6, 12)), f32(r(-1, 1, 3, 12)), f32(r(-1, 1, 5, 3)), f32(r(-1, 1, 5, 3)))
		}, false, false))
	// GRUSequence likewise.
	gruSeq := func(in []T) T {
		ys, h := ops.GRUSequence(in[0], in[1], in[2], in[3])
		return ops.Add(ops.Sum(ops.Sin(ys)), ops.Sum(ops.Square(h)))
	}
	add("GRUSequence", one("float64", func() { ops.GRUSequence(r(-2, 2, 5, 3, 9), r(-1, 1, 3, 9), r(-1, 1, 9), r(-1, 1, 5, 3)) }, true, true),
		one("no steps", func() { ops.GRUSequence(r(-2, 2, 2, 0, 6), r(-1, 1, 2, 6), r(-1, 1, 6), r(-1, 1, 2, 2)) }, false, false))
	for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16, tensor.Float16} {
		add("GRUSequence", one(fmt.Sprint(dt), func() {
			ops.GRUSequence(of(dt, -2, 2, 6, 4, 15), of(dt, -1, 1, 5, 15), of(dt, -1, 1, 15), of(dt, -1, 1, 6, 5))
		}, false, false))
	}
	add("GRUSequenceBackprop", one("through its op", func() { underTape(gruSeq, r(-2, 2, 3, 4, 6), r(-1, 1, 2, 6), r(-1, 1, 6), r(-1, 1, 3, 2)) }, true, true),
		one("float32 through its op", func() {
			underTape(gruSeq, f32(r(-2, 2, 5, 6, 9)), f32(r(-1, 1, 3, 9)), f32(r(-1, 1, 9)), f32(r(-1, 1, 5, 3)))
		}, false, false))
	// GRUCell likewise.
	gru := func(in []T) T { return ops.Sin(ops.GRUCell(in[0], in[1], in[2])) }
	add("GRUCell", one("float64", func() { ops.GRUCell(r(-3, 3, 3, 6), r(-3, 3, 3, 6), r(-2, 2, 3, 2)) }, true, true),
		one("empty batch", func() { ops.GRUCell(r(-3, 3, 0, 6), r(-3, 3, 0, 6), r(-2, 2, 0, 2)) }, false, false))
	for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16, tensor.Float16} {
		add("GRUCell", one(fmt.Sprint(dt), func() { ops.GRUCell(of(dt, -3, 3, 4, 9), of(dt, -3, 3, 4, 9), of(dt, -2, 2, 4, 3)) }, false, false))
	}
	add("GRUCellBackprop", one("through its op", func() { underTape(gru, r(-3, 3, 3, 6), r(-3, 3, 3, 6), r(-2, 2, 3, 2)) }, true, true),
		one("float32 through its op", func() { underTape(gru, f32(r(-3, 3, 5, 9)), f32(r(-3, 3, 5, 9)), f32(r(-2, 2, 5, 3))) }, false, false))
	add("LayerNormBackprop", one("layer", func() {
		underTape(func(in []T) T { return ops.LayerNorm(in[0], in[1], in[2], 1e-5) }, r(-1, 1, 3, 5), r(-1, 1, 5), r(-1, 1, 5))
	}, true, true), one("rms", func() {
		underTape(func(in []T) T { return ops.RMSNorm(in[0], in[1], 1e-5) }, r(-1, 1, 2, 3, 4), r(-1, 1, 4))
	}, true, true), one("float32 rms", func() {
		underTape(func(in []T) T { return ops.RMSNorm(in[0], in[1], 1e-5) }, f32(r(-1, 1, 4, 6)), f32(r(-1, 1, 6)))
	}, false, false), one("float16 layer", func() {
		h := func(x T) T { return ops.Cast(x, tensor.Float16) }
		underTape(func(in []T) T { return ops.LayerNorm(in[0], in[1], in[2], 1e-5) }, h(r(-1, 1, 5, 6)), h(r(-1, 1, 6)), h(r(-1, 1, 6)))
	}, false, false))
	// BatchNorm: the op and its backward (through its gradient), features
	// last, in the middle and first.
	add("BatchNorm", one("NHWC", func() { ops.BatchNorm(r(-1, 1, 2, 3, 2, 4), r(-1, 1, 4), r(-1, 1, 4), -1, 1e-3) }, true, true),
		one("NCHW no offset", func() { ops.BatchNorm(r(-1, 1, 3, 2, 2, 3), r(-1, 1, 2), nil, 1, 1e-3) }, true, true),
		one("float32 features first", func() { ops.BatchNorm(f32(r(-1, 1, 5, 7)), f32(r(-1, 1, 5)), f32(r(-1, 1, 5)), 0, 1e-3) }, false, false),
		one("empty batch", func() { ops.BatchNorm(r(-1, 1, 0, 3), r(-1, 1, 3), r(-1, 1, 3), 1, 1e-3) }, false, false),
		one("no features", func() { ops.BatchNorm(r(-1, 1, 4, 0), r(-1, 1, 0), nil, 1, 1e-3) }, false, false),
		one("bfloat16", func() {
			h := func(x T) T { return ops.Cast(x, tensor.BFloat16) }
			ops.BatchNorm(h(r(-1, 1, 6, 4)), h(r(-1, 1, 4)), h(r(-1, 1, 4)), -1, 1e-3)
		}, false, false),
		one("bfloat16 x, float32 parameters, NHWC", func() {
			ops.BatchNorm(ops.Cast(r(-1, 1, 4, 3, 3, 5), tensor.BFloat16), f32(r(-1, 1, 5)), f32(r(-1, 1, 5)), -1, 1e-3)
		}, false, false),
		one("float16 x, float32 scale, NCHW", func() {
			ops.BatchNorm(ops.Cast(r(-1, 1, 2, 3, 4, 4), tensor.Float16), f32(r(-1, 1, 3)), nil, 1, 1e-3)
		}, false, false))
	mixedBN := func(in []T) T {
		y, _, _ := ops.BatchNorm(ops.Cast(in[0], tensor.BFloat16), in[1], in[2], -1, 1e-3)
		return ops.Cast(y, tensor.Float32)
	}
	add("BatchNormBackprop", one("bfloat16 x, float32 parameters, through its op", func() {
		underTape(mixedBN, f32(r(-1, 1, 6, 2, 4)), f32(r(-1, 1, 4)), f32(r(-1, 1, 4)))
	}, false, false))
	add("BatchNormBackprop", one("NHWC", func() {
		underTape(func(in []T) T { y, _, _ := ops.BatchNorm(in[0], in[1], in[2], -1, 1e-3); return y }, r(-1, 1, 3, 2, 5), r(-1, 1, 5), r(-1, 1, 5))
	}, true, true), one("NCHW", func() {
		underTape(func(in []T) T { y, _, _ := ops.BatchNorm(in[0], in[1], nil, 1, 1e-3); return y }, r(-1, 1, 2, 3, 2, 2), r(-1, 1, 3))
	}, true, true), one("float32 NCHW", func() {
		underTape(func(in []T) T { y, _, _ := ops.BatchNorm(in[0], in[1], nil, 1, 1e-3); return y }, f32(r(-1, 1, 2, 3, 4, 5)), f32(r(-1, 1, 3)))
	}, false, false), one("float16", func() {
		h := func(x T) T { return ops.Cast(x, tensor.Float16) }
		underTape(func(in []T) T { y, _, _ := ops.BatchNorm(in[0], in[1], in[2], -1, 1e-3); return y }, h(r(-1, 1, 5, 6)), h(r(-1, 1, 6)), h(r(-1, 1, 6)))
	}, false, false))
	add("MatMul", one("shared b", func() { ops.MatMulT(r(-1, 1, 2, 4, 3), r(-1, 1, 4, 5), true, false) }, true, true),
		one("shared a", func() { ops.MatMul(r(-1, 1, 3, 4), r(-1, 1, 2, 4, 2)) }, true, true),
		one("few rows, transposed b", func() {
			ops.MatMulT(ops.Cast(r(-1, 1, 2, 33), tensor.Float32), ops.Cast(r(-1, 1, 9, 33), tensor.Float32), false, true)
		}, false, false),
		one("float32 large", func() {
			ops.MatMul(ops.Cast(r(-1, 1, 65, 70), tensor.Float32), ops.Cast(r(-1, 1, 70, 33), tensor.Float32))
		}, false, false),
		one("empty", func() { ops.MatMul(r(-1, 1, 0, 3), r(-1, 1, 3, 2)) }, false, false),
		one("transposed inputs", func() { ops.MatMul(tr(r(-1, 1, 3, 4)), tr(r(-1, 1, 4, 2))) }, true, true))

	// Softmax and losses.
	for _, dt := range floats {
		g := dt == tensor.Float64
		add("Softmax", one(fmt.Sprint(dt), func() { ops.Softmax(of(dt, -2, 2, 3, 5), -1) }, g, g),
			one(fmt.Sprintf("%v axis 0, large", dt), func() { ops.Softmax(ops.Mul(of(dt, -2, 2, 4, 3), ops.Cast(tensor.Scalar(300.0), dt)), 0) }, false, false))
		add("LogSoftmax", one(fmt.Sprint(dt), func() { ops.LogSoftmax(of(dt, -2, 2, 3, 5), -1) }, g, g),
			one(fmt.Sprintf("%v long rows", dt), func() { ops.LogSoftmax(of(dt, -2, 2, 2, 700), -1) }, false, false))
		add("SparseSoftmaxCrossEntropy", one(fmt.Sprint(dt), func() { ops.SparseSoftmaxCrossEntropy(of(dt, -2, 2, 3, 4), idx(3, 0, 1)) }, g, g),
			one(fmt.Sprintf("%v int32 labels", dt), func() { ops.SparseSoftmaxCrossEntropy(of(dt, -2, 2, 2, 5), tensor.FromSlice([]int32{4, 4})) }, false, false))
	}
	add("Softmax", one("empty rows", func() { ops.Softmax(r(-1, 1, 0, 3), -1) }, false, false))
	for _, c := range []struct {
		op string
		fn func(*tensor.Tensor, int) *tensor.Tensor
	}{{"SoftmaxGrad", ops.Softmax}, {"LogSoftmaxGrad", ops.LogSoftmax}} {
		add(c.op, one("through its op", func() {
			underTape(func(x []T) T { return ops.Mul(c.fn(x[0], -1), x[1]) }, r(-2, 2, 3, 5), r(-1, 1, 3, 5))
		}, true, true), one("float32 long rows", func() {
			underTape(func(x []T) T { return ops.Mul(c.fn(x[0], -1), x[1]) }, ops.Cast(r(-2, 2, 2, 700), tensor.Float32), ops.Cast(r(-1, 1, 2, 700), tensor.Float32))
		}, false, false), one("bfloat16 along axis 0", func() {
			underTape(func(x []T) T { return ops.Mul(c.fn(x[0], 0), x[1]) }, ops.Cast(r(-2, 2, 4, 3), tensor.BFloat16), ops.Cast(r(-1, 1, 4, 3), tensor.BFloat16))
		}, false, false), one("empty rows", func() {
			underTape(func(x []T) T { return c.fn(x[0], -1) }, r(-1, 1, 0, 3))
		}, false, false))
	}
	add("SparseSoftmaxCrossEntropyGrad", one("through its op", func() {
		underTape(func(x []T) T { return ops.Mul(ops.SparseSoftmaxCrossEntropy(x[0], idx(3, 2, 0)), x[1]) }, r(-2, 2, 3, 4), r(-1, 1, 3))
	}, true, true), one("float32 [2 5]", func() {
		underTape(func(x []T) T { return ops.SparseSoftmaxCrossEntropy(x[0], tensor.FromSlice([]int32{4, 1})) }, ops.Cast(r(-2, 2, 2, 5), tensor.Float32))
	}, false, false), one("bfloat16 [3 6]", func() {
		underTape(func(x []T) T { return ops.SparseSoftmaxCrossEntropy(x[0], tensor.FromSlice([]int32{5, 0, 2})) }, ops.Cast(r(-2, 2, 3, 6), tensor.BFloat16))
	}, false, false), one("empty batch", func() {
		underTape(func(x []T) T { return ops.SparseSoftmaxCrossEntropy(x[0], tensor.FromSlice([]int64{})) }, r(-1, 1, 0, 3))
	}, false, false))
	add("SparseSoftmaxCrossEntropy", one("empty batch", func() { ops.SparseSoftmaxCrossEntropy(r(-1, 1, 0, 3), tensor.FromSlice([]int64{})) }, false, false))

	// Sorting.
	for _, dt := range numbers {
		add("ArgSort", one(fmt.Sprint(dt), func() { ops.ArgSort(of(dt, -5, 5, 3, 6), 1, dt == tensor.Int32) }, false, false))
		add("ArgTopK", one(fmt.Sprint(dt), func() { ops.TopK(of(dt, -5, 5, 3, 40), 2) }, false, false),
			one(fmt.Sprintf("%v all", dt), func() { ops.TopK(of(dt, -5, 5, 2, 6), 6) }, false, false))
		add("ArgMaxMin", one(fmt.Sprint(dt), func() { ops.ArgMax(of(dt, -5, 5, 4, 3), 0) }, false, false),
			one(fmt.Sprintf("%v min", dt), func() { ops.ArgMin(of(dt, -5, 5, 4, 3), -1) }, false, false))
	}
	// Draws at a position a tensor holds (a traced Dropout's mask).
	for _, dt := range append(slices.Clone(every), tensor.BFloat16, tensor.Float16) {
		add("RngBernoulliAt", one(fmt.Sprint(dt), func() {
			ops.RngBernoulliAt(tensor.FromSlice([]int64{5, 40}, 2), 1, 3, [2]uint32{7, 9}, dt, 0.3, 3, 5)
		}, false, false))
	}
	add("RngBernoulliAt", one("through DropoutAt's gradient", func() {
		starts := tensor.FromSlice([]int64{11}, 1)
		underTape(func(x []T) T { return ops.DropoutAt(x[0], 0.4, starts, 0, 0, [2]uint32{1, 2}) }, r(-1, 1, 4, 6))
	}, false, false))
	add("ArgSort", one("NaNs and ties", func() { ops.ArgSort(tensor.FromSlice([]float64{2, math.NaN(), 1, 2, -1}), 0, true) }, false, false))
	add("ArgTopK", one("NaNs and ties", func() { ops.TopK(tensor.FromSlice([]float64{2, math.NaN(), 1, 2, -1}), 3) }, false, false),
		one("bfloat16 through float32", func() { ops.TopK(ops.Cast(r(-1, 1, 2, 50), tensor.BFloat16), 4) }, false, false))
	add("TakeAlongAxis", one("sort", func() { ops.Sort(r(-1, 1, 3, 5), 1, false) }, true, true))

	// Windows and convolutions.
	for _, dt := range numbers {
		for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMax, ops.ReduceMin} {
			add("ReduceWindow", one(fmt.Sprintf("%v kind %d", dt, kind), func() {
				ops.ReduceWindow(of(dt, -2, 2, 1, 5, 6, 2), of(dt, 0, 1), kind, ops.Window{Dims: []int{1, 2, 3, 1}, Strides: []int{1, 2, 1, 1},
					Padding: [][2]int{{0, 0}, {0, 1}, {1, 1}, {0, 0}}})
			}, dt == tensor.Float64, dt == tensor.Float64)) // init wins some windows: its gradient and the operand's
		}
	}
	add("ReduceWindow", one("max pool", func() { ops.MaxPool2D(r(-1, 1, 2, 6, 6, 3), ops.PoolOpts{Size: [2]int{2, 2}}) }, true, true),
		one("max pool float32 2x2", func() {
			ops.MaxPool2D(ops.Cast(r(-1, 1, 1, 2, 8, 18), tensor.Float32), ops.PoolOpts{Size: [2]int{2, 2}, Format: ops.NCHW})
		}, false, false),
		one("avg pool same", func() {
			ops.AvgPool2D(r(-1, 1, 1, 5, 5, 2), ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same})
		}, true, true),
		one("dilations", func() {
			ops.ReduceWindow(r(-1, 1, 7, 6), tensor.Scalar(0.0), ops.ReduceSum, ops.Window{Dims: []int{2, 2}, BaseDilation: []int{2, 1}, WindowDilation: []int{1, 2}})
		}, true, true),
		one("rank 0", func() { ops.ReduceWindow(tensor.Scalar(2.0), tensor.Scalar(1.0), ops.ReduceSum, ops.Window{}) }, false, false),
		one("every window field", func() { ops.ReduceWindow(r(-1, 1, 4, 5), r(-1, 1), ops.ReduceSum, dilatedWindow) }, true, true),
		one("min padded", func() {
			ops.ReduceWindow(r(-1, 1, 4, 5), tensor.Scalar(1e9), ops.ReduceMin, ops.Window{Dims: []int{3, 2}, Padding: [][2]int{{1, 1}, {0, 1}}})
		}, true, true))
	add("ExtractPatches", one("every window field", func() { ops.ExtractPatches(r(-1, 1, 4, 5), r(-1, 1), dilatedWindow) }, true, true))
	add("SelectAndScatter", one("source and init", func() {
		ops.SelectAndScatter(tensor.FromSlice([]float64{1, 5, 2, 4, 3, 0, 7, 6, 8}, 3, 3), r(-1, 1, 2, 2), r(-1, 1), ops.SelectGE, ops.Window{Dims: []int{2, 2}})
	}, true, true))
	add("SelectAndScatter", one("through max pool", func() {
		underTape(func(x []T) T { return ops.MaxPool2D(x[0], ops.PoolOpts{Size: [2]int{2, 3}, Strides: [2]int{1, 2}}) }, r(-1, 1, 1, 5, 7, 2))
	}, true, true))
	for _, dt := range numbers {
		add("SelectAndScatter", one(fmt.Sprint(dt), func() {
			ops.SelectAndScatter(of(dt, -5, 5, 4, 6), of(dt, -2, 2, 2, 2), of(dt, 0, 1), ops.SelectGE, ops.Window{Dims: []int{2, 3}, Strides: []int{2, 3}})
		}, false, false))
	}
	for _, dt := range floats { // the pooling kernels' layouts, the half types' too
		add("SelectAndScatter", one(fmt.Sprintf("%v max pool NHWC", dt), func() {
			ops.SelectAndScatter(of(dt, -5, 5, 2, 4, 6, 3), of(dt, -2, 2, 2, 2, 2, 3), of(dt, 0, 1), ops.SelectGE,
				ops.Window{Dims: []int{1, 2, 3, 1}, Strides: []int{1, 2, 3, 1}})
		}, false, false), one(fmt.Sprintf("%v min pool NCHW", dt), func() {
			ops.SelectAndScatter(of(dt, -5, 5, 2, 3, 4, 6), of(dt, -2, 2, 2, 3, 2, 2), of(dt, 0, 1), ops.SelectLE,
				ops.Window{Dims: []int{1, 1, 2, 3}, Strides: []int{1, 1, 2, 3}})
		}, false, false))
		add("ReduceWindow", one(fmt.Sprintf("%v max pool NCHW", dt), func() {
			ops.MaxPool2D(of(dt, -2, 2, 2, 3, 5, 6), ops.PoolOpts{Size: [2]int{2, 2}, Format: ops.NCHW, Padding: ops.Same})
		}, false, false))
	}
	add("SelectAndGather", one("max pool second order", func() {
		secondOrder(func(x []T) T { return ops.Square(ops.MaxPool2D(x[0], ops.PoolOpts{Size: [2]int{2, 2}})) }, r(-1, 1, 1, 4, 4, 2))
	}, true, true))
	argmaxPool := ops.PoolOpts{Size: [2]int{3, 2}, Strides: [2]int{2, 1}, Padding: ops.Same}
	for _, dt := range numbers {
		add("MaxPool2DWithArgmax", one(fmt.Sprint(dt), func() { ops.MaxPool2DWithArgmax(of(dt, -5, 5, 2, 5, 4, 3), argmaxPool) }, false, false))
		add("MaxUnpool2D", one(fmt.Sprint(dt), func() {
			_, taps := ops.MaxPool2DWithArgmax(of(dt, -5, 5, 2, 5, 4, 3), argmaxPool)
			ops.MaxUnpool2D(of(dt, -2, 2, 2, 3, 4, 3), taps, []int{2, 5, 4, 3}, argmaxPool)
		}, false, false))
	}
	add("MaxPool2DWithArgmax", one("NCHW padded", func() {
		ops.MaxPool2DWithArgmax(r(-1, 1, 1, 2, 5, 6), ops.PoolOpts{Size: [2]int{2, 3}, Padding: ops.Explicit, Explicit: [2][2]int{{1, 1}, {0, 2}}, Format: ops.NCHW})
	}, true, true))
	add("MaxUnpool2D", one("through max pool's taps", func() {
		underTape(func(x []T) T { y, _ := ops.MaxPool2DWithArgmax(x[0], argmaxPool); return y }, r(-1, 1, 1, 5, 4, 2))
	}, true, true))
	add("MaxUnpool2DGather", one("max pool's taps second order", func() {
		secondOrder(func(x []T) T { y, _ := ops.MaxPool2DWithArgmax(x[0], argmaxPool); return ops.Square(y) }, r(-1, 1, 1, 5, 4, 2))
	}, true, true))
	add("ScatterPatches", one("through ExtractPatches", func() {
		underTape(func(x []T) T {
			return ops.ExtractPatches(x[0], tensor.Scalar(0.0), ops.Window{Dims: []int{2, 2}, Padding: [][2]int{{1, 0}, {0, 1}}})
		}, r(-1, 1, 3, 4))
	}, true, true))
	for _, dt := range numbers {
		add("ScatterPatches", one(fmt.Sprint(dt), func() { ops.ScatterPatches(of(dt, -2, 2, 2, 3, 2, 2), []int{3, 4}, ops.Window{Dims: []int{2, 2}}) }, false, false))
	}
	for i, o := range convCases {
		for _, f := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			add("Conv2DGemm", one(fmt.Sprintf("%v case %d", f, i), func() {
				x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, 4)
				ops.Conv2D(x, w, o)
			}, true, true))
			add("Conv2DGemmBackpropInput", one(fmt.Sprintf("%v case %d", f, i), func() {
				x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, 4)
				underTape(func(in []T) T { return ops.Conv2D(in[0], w, o) }, x)
			}, true, true))
			add("Conv2DGemmBackpropFilter", one(fmt.Sprintf("%v case %d", f, i), func() {
				x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, 4)
				underTape(func(in []T) T { return ops.Conv2D(x, in[0], o) }, w)
			}, true, true))
		}
	}
	// Depthwise convolutions (filter [KH, KW, C, M]: multipliers 1 and 2).
	for i, o := range convCases {
		for _, f := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			for _, m := range []int{1, 2} {
				name := fmt.Sprintf("%v case %d, multiplier %d", f, i, m)
				add("DepthwiseConv2DNative", one(name, func() {
					x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, m)
					ops.DepthwiseConv2D(x, w, o)
				}, true, true))
				add("DepthwiseConv2DNativeBackpropInput", one(name, func() {
					x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, m)
					underTape(func(in []T) T { return ops.DepthwiseConv2D(in[0], w, o) }, x)
				}, true, true))
				add("DepthwiseConv2DNativeBackpropFilter", one(name, func() {
					x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, m)
					underTape(func(in []T) T { return ops.DepthwiseConv2D(x, in[0], o) }, w)
				}, true, true))
			}
		}
	}
	for i, o := range convCases {
		for _, f := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
				add("FusedConv2D", one(fmt.Sprintf("%v %v case %d", f, act, i), func() {
					x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, 4)
					ops.FusedConv2D(x, w, r(-1, 1, 4), o, act)
				}, true, true))
				// Its backward op, from FusedConv2D's gradient; finite
				// differences only without Relu, whose mask flips where a
				// result is exactly 0.
				add("FusedConv2DBackprop", one(fmt.Sprintf("%v %v case %d", f, act, i), func() {
					x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, 4)
					underTape(func(in []T) T { return ops.FusedConv2D(in[0], in[1], in[2], o, act) }, x, w, r(-1, 1, 4))
				}, act == ops.NoActivation, act == ops.NoActivation))
			}
			// A first layer's: no input gradient.
			add("FusedConv2DBackprop", one(fmt.Sprintf("%v case %d, no input gradient", f, i), func() {
				x, w, o := conv2D(f, o, 2, 3, 5, 6, 3, 2, 4)
				underTape(func(in []T) T { return ops.FusedConv2D(x, in[0], in[1], o, ops.NoActivation) }, w, r(-1, 1, 4))
			}, true, true))
		}
	}
	add("FusedConv2D", one("float32 relu batch over the workers", func() {
		x, w, o := conv2D(ops.NHWC, ops.Conv2DOpts{Padding: ops.Same}, 4, 8, 9, 9, 3, 3, 16)
		ops.FusedConv2D(ops.Cast(x, tensor.Float32), ops.Cast(w, tensor.Float32), ops.Cast(r(-1, 1, 16), tensor.Float32), o, ops.ReluActivation)
	}, false, false))
	for _, f := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		add("FusedConv2DBackprop", one(fmt.Sprintf("float32 relu %v batch over the workers", f), func() {
			x, w, o := conv2D(f, ops.Conv2DOpts{Padding: ops.Same}, 4, 8, 9, 9, 3, 3, 16)
			underTape(func(in []T) T { return ops.FusedConv2D(in[0], in[1], in[2], o, ops.ReluActivation) },
				ops.Cast(x, tensor.Float32), ops.Cast(w, tensor.Float32), ops.Cast(r(-1, 1, 16), tensor.Float32))
		}, false, false))
	}
	add("Conv2DGemm", one("float32 batch over the workers", func() {
		x, w, o := conv2D(ops.NHWC, ops.Conv2DOpts{Padding: ops.Same}, 4, 8, 9, 9, 3, 3, 16)
		ops.Conv2D(ops.Cast(x, tensor.Float32), ops.Cast(w, tensor.Float32), o)
	}, false, false))

	// Collectives (package collective), on a communicator of one process:
	// each reduction is its input, a gather stacks it once; the gradient
	// rules' collectives run too.
	one1 := collective.Single()
	coll := func(f func() (T, error)) T {
		y, err := f()
		if err != nil {
			panic(err)
		}
		return y
	}
	// The collectives take no half types yet (issue 33's data-parallel
	// part).
	for _, op := range []collective.Op{collective.Sum, collective.Max, collective.Min} {
		add("AllReduce", unary(func(x T) T { return coll(func() (T, error) { return one1.AllReduce(x, op) }) }, numbers[:5], -2, 2, true, true)...)
	}
	add("AllReduce", unary(func(x T) T { return coll(func() (T, error) { return one1.AllReduce(x, collective.Mean) }) }, floats[:2], -2, 2, true, true)...)
	add("Broadcast", unary(func(x T) T { return coll(func() (T, error) { return one1.Broadcast(x, 0) }) }, every, -2, 2, true, true)...)
	add("AllGather", unary(func(x T) T { return coll(func() (T, error) { return one1.AllGather(x) }) }, every, -2, 2, true, true)...)
	for _, op := range []collective.Op{collective.Sum, collective.Mean, collective.Max} {
		for _, shape := range [][]int{{3}, {2, 3}, {0, 2}, {4, 1, 2}} {
			add("ReduceScatter", one(fmt.Sprintf("%v %v", op, shape), func() {
				coll(func() (T, error) { return one1.ReduceScatter(r(-2, 2, shape...), op) })
			}, shape[0] > 0, true))
		}
	}
	add("ReduceScatter", one("int32 transposed", func() {
		coll(func() (T, error) { return one1.ReduceScatter(tr(of(tensor.Int32, -9, 9, 3, 4)), collective.Sum) })
	}, false, false))

	// Send and Recv on a rendezvous of one in-process rank: the sends post
	// to this rank itself; the receives find 32 copies of one value posted
	// (the checks replay a call several times).
	self, err := collective.NewRendezvous(collective.Loopback(1)[0])
	if err != nil {
		panic(err)
	}
	add("Send", unary(func(x T) T {
		if err := self.Send(x, 0, "conformance"); err != nil {
			panic(err)
		}
		return nil
	}, every, -2, 2, false, false)...)
	for _, dt := range every {
		v := of(dt, -2, 2, 2, 3)
		add("Recv", one(fmt.Sprint(dt), func() {
			for range 32 {
				if err := self.Post(0, "posted "+dt.String()+"#", v, false); err != nil {
					panic(err)
				}
			}
			coll(func() (T, error) { return self.Recv(ops.ZerosLike(v), 0, "posted "+dt.String()) })
		}, false, false))
	}

	// Internal ops of other packages.
	add("Guard", one("a traced loop's decision", func() {
		f := trace.NewFunction(func(a []T) []T {
			tp := tape.New()
			tp.Watch(a[0])
			h := control.While(func(v []T) T { return ops.Lt(ops.Sum(v[0]), tensor.Scalar(10.0)) },
				func(v []T) []T { return []T{ops.Mul(v[0], ops.Add(a[0], tensor.Scalar(1.0)))} }, a)
			inner := tape.New()
			inner.Watch(a[0])
			g := tp.Gradient(ops.Sum(h[0]), a[0])[0]
			return []T{h[0], inner.Gradient(ops.Sum(ops.Square(g)), a[0])[0]}
		})
		x := r(0.5, 1, 2)
		f.Call(x) // the trace (loops unrolled, with guards)
		f.Call(x) // the graph: its guards run
	}, false, false))
	return m
}
