package ops

import (
	"math"
	"unsafe"

	"github.com/chewxy/math32"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise binary arithmetic with NumPy broadcasting. Both operands must
// share a numeric dtype; the result has that dtype and the broadcast shape.
// BroadcastDims gives XLA's explicit broadcast_dimensions form.

func binaryOp(name string, grad eager.GradFunc, k cpuKernels) *eager.Op {
	return eager.Register(k.register(&eager.Op{
		Name: name, Inputs: 2, DTypes: numericTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			return c.Out1(c.Inputs[0].DType(), broadcastShapes(c, c.Inputs[0].Shape(), c.Inputs[1].Shape()))
		},
		Grad: grad,
	}))
}

// numKernels instantiates one generic loop set for every numeric dtype.
func numKernels(f32 binLoops[float32, float32], f64 binLoops[float64, float64],
	i32 binLoops[int32, int32], i64 binLoops[int64, int64], u8 binLoops[uint8, uint8]) cpuKernels {
	return cpuKernels{f32: binaryKernel(f32), f64: binaryKernel(f64), i32: binaryKernel(i32),
		i64: binaryKernel(i64), u8: binaryKernel(u8),
		elementwise: &eager.ElementwiseF32{VV: f32.vv, VS: f32.vs, SV: f32.sv}}
}

func addLoops[T tensor.Num]() binLoops[T, T] {
	return binLoops[T, T]{
		vv: func(o, a, b []T) {
			if o32, ok := any(o).([]float32); ok && haveVecKernels && len(o) > 0 {
				addF32(o32, any(a).([]float32), any(b).([]float32))
				return
			}
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] + b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			if vecScalar(o, a, b, sadds) {
				return
			}
			for i := range o {
				o[i] = a[i] + b
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			if vecScalar(o, b, a, sadds) { // commutative
				return
			}
			for i := range o {
				o[i] = a + b[i]
			}
		},
	}
}

// streamMin is the output length (float32 elements, 4 MiB) from which a
// kernel writes with non-temporal stores: such an output will not stay in
// the caches anyway, and bypassing them saves reading each line in before
// it is written (measured: a 4M-element add went from 31 to 66 GB/s).
const streamMin = 1 << 20

// addF32 sets o = a + b with the AVX2 kernels, streaming the stores of
// long outputs.
func addF32(o, a, b []float32) {
	n := len(o)
	if n < streamMin {
		sadd(&o[0], &a[0], &b[0], n)
		return
	}
	// Plain stores up to a 32-byte boundary of o and after the last whole
	// block of 32 elements; streaming stores in between.
	head := int((32 - uintptr(unsafe.Pointer(&o[0]))%32) % 32 / 4)
	mid := (n - head) &^ 31
	if head > 0 {
		sadd(&o[0], &a[0], &b[0], head)
	}
	saddnt(&o[head], &a[head], &b[head], mid)
	if rest := n - head - mid; rest > 0 {
		sadd(&o[head+mid], &a[head+mid], &b[head+mid], rest)
	}
}

// addInto sets dst += x, with the AVX2 kernel for float32.
func addInto[T tensor.Num](dst, x []T) {
	if d32, ok := any(dst).([]float32); ok && haveVecKernels && len(dst) > 0 {
		sadd(&d32[0], &d32[0], &any(x).([]float32)[0], len(d32))
		return
	}
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

// vecScalar sets o = v op s with k, an AVX2 float32 loop, when T is
// float32 and the kernels are there, and reports whether it did.
func vecScalar[T tensor.Num](o, v []T, s T, k func(dst, a *float32, s float32, n int)) bool {
	o32, ok := any(o).([]float32)
	if !ok || !haveVecKernels || len(o) == 0 {
		return false
	}
	k(&o32[0], &any(v).([]float32)[0], any(s).(float32), len(o))
	return true
}

func subLoops[T tensor.Num]() binLoops[T, T] {
	return binLoops[T, T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] - b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = a[i] - b
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = a - b[i]
			}
		},
	}
}

func mulLoops[T tensor.Num]() binLoops[T, T] {
	return binLoops[T, T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] * b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			if vecScalar(o, a, b, smuls) {
				return
			}
			for i := range o {
				o[i] = a[i] * b
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			if vecScalar(o, b, a, smuls) { // commutative
				return
			}
			for i := range o {
				o[i] = a * b[i]
			}
		},
	}
}

func divFloatLoops[T tensor.Float]() binLoops[T, T] {
	return binLoops[T, T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] / b[i]
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = a[i] / b
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = a / b[i]
			}
		},
	}
}

// scalarLoops builds the three loops from a function of two elements.
func scalarLoops[T, R any](f func(a, b T) R) binLoops[T, R] {
	return binLoops[T, R]{
		vv: func(o []R, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = f(a[i], b[i])
			}
		},
		vs: func(o []R, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = f(a[i], b)
			}
		},
		sv: func(o []R, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = f(a, b[i])
			}
		},
	}
}

type integer interface{ int32 | int64 | uint8 }

// Integer division and remainder follow XLA: x/0 is -1 (all bits set) and
// x%0 is x; the remainder has the sign of the dividend (Go's %).
func intDiv[T integer](a, b T) T {
	if b == 0 {
		return ^T(0)
	}
	return a / b
}

func intRem[T integer](a, b T) T {
	if b == 0 {
		return a
	}
	return a % b
}

func intPow[T integer](a, b T) T {
	if b < 0 {
		switch {
		case a == 1:
			return 1
		case a == ^T(0) && T(0)-1 < 0: // -1 for signed types
			if b%2 == 0 {
				return 1
			}
			return a
		}
		return 0
	}
	r := T(1)
	for b > 0 {
		if b&1 == 1 {
			r *= a
		}
		a *= a
		b >>= 1
	}
	return r
}

func maxOf[T tensor.Num](a, b T) T { return max(a, b) }
func minOf[T tensor.Num](a, b T) T { return min(a, b) }

var addOp, subOp, mulOp, divOp, remOp, maxOp, minOp, powOp *eager.Op

func init() {
	addOp = binaryOp("Add", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{g.OutGrads[0], g.OutGrads[0]}
	}, numKernels(addLoops[float32](), addLoops[float64](), addLoops[int32](), addLoops[int64](), addLoops[uint8]()))

	subOp = binaryOp("Sub", func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{g.OutGrads[0], when(g.Needs[1], func() *tensor.Tensor { return Neg(g.OutGrads[0]) })}
	}, numKernels(subLoops[float32](), subLoops[float64](), subLoops[int32](), subLoops[int64](), subLoops[uint8]()))

	addOp.GradReads, subOp.GradReads = eager.ReadsNothing, eager.ReadsNothing

	mulOp = binaryOp("Mul", func(g *eager.Grad) []*tensor.Tensor {
		a, b, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return Mul(dy, b) }),
			when(g.Needs[1], func() *tensor.Tensor { return Mul(dy, a) }),
		}
	}, numKernels(mulLoops[float32](), mulLoops[float64](), mulLoops[int32](), mulLoops[int64](), mulLoops[uint8]()))
	mulOp.GradReads = eager.ReadsInputs

	divOp = binaryOp("Div", func(g *eager.Grad) []*tensor.Tensor {
		a, b, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor { return Div(dy, b) }),
			when(g.Needs[1], func() *tensor.Tensor { return Neg(Div(Mul(dy, a), Square(b))) }),
		}
	}, numKernels(divFloatLoops[float32](), divFloatLoops[float64](), scalarLoops(intDiv[int32]),
		scalarLoops(intDiv[int64]), scalarLoops(intDiv[uint8])))

	remOp = binaryOp("Rem", func(g *eager.Grad) []*tensor.Tensor {
		// a = trunc(a/b)*b + rem, so d/da = 1 and d/db = -trunc(a/b).
		a, b, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
		return []*tensor.Tensor{dy, when(g.Needs[1], func() *tensor.Tensor {
			return Neg(Mul(dy, Div(Sub(a, g.Outputs[0]), b)))
		})}
	}, numKernels(scalarLoops(math32.Mod), scalarLoops(math.Mod), scalarLoops(intRem[int32]),
		scalarLoops(intRem[int64]), scalarLoops(intRem[uint8])))

	maxOp = binaryOp("Max", func(g *eager.Grad) []*tensor.Tensor {
		return minMaxGrad(g, Ge(g.Inputs[0], g.Inputs[1]))
	}, numKernels(scalarLoops(maxOf[float32]), scalarLoops(maxOf[float64]), scalarLoops(maxOf[int32]),
		scalarLoops(maxOf[int64]), scalarLoops(maxOf[uint8])))

	minOp = binaryOp("Min", func(g *eager.Grad) []*tensor.Tensor {
		return minMaxGrad(g, Le(g.Inputs[0], g.Inputs[1]))
	}, numKernels(scalarLoops(minOf[float32]), scalarLoops(minOf[float64]), scalarLoops(minOf[int32]),
		scalarLoops(minOf[int64]), scalarLoops(minOf[uint8])))

	powOp = binaryOp("Pow", func(g *eager.Grad) []*tensor.Tensor {
		a, b, y, dy := g.Inputs[0], g.Inputs[1], g.Outputs[0], g.OutGrads[0]
		return []*tensor.Tensor{
			when(g.Needs[0], func() *tensor.Tensor {
				return Mul(dy, Mul(b, Pow(a, Sub(b, ScalarLike(b, 1)))))
			}),
			when(g.Needs[1], func() *tensor.Tensor {
				// d/db a^b = a^b log a, taken as 0 where a <= 0.
				pos := Gt(a, ScalarLike(a, 0))
				safe := Select(pos, a, OnesLike(a))
				return Mul(dy, Mul(y, Select(pos, Log(safe), ZerosLike(safe))))
			}),
		}
	}, numKernels(scalarLoops(func(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) }), scalarLoops(math.Pow), scalarLoops(intPow[int32]),
		scalarLoops(intPow[int64]), scalarLoops(intPow[uint8])))
}

// minMaxGrad sends the gradient to the operand that was chosen (the first on
// ties, as pick marks).
func minMaxGrad(g *eager.Grad, pick *tensor.Tensor) []*tensor.Tensor {
	dy := g.OutGrads[0]
	z := ZerosLike(dy)
	return []*tensor.Tensor{
		when(g.Needs[0], func() *tensor.Tensor { return Select(pick, dy, z) }),
		when(g.Needs[1], func() *tensor.Tensor { return Select(pick, z, dy) }),
	}
}

// when returns f() if need, else nil: gradient rules skip unwanted inputs.
func when(need bool, f func() *tensor.Tensor) *tensor.Tensor {
	if !need {
		return nil
	}
	return f()
}

// Add returns a + b elementwise. a, b: same numeric dtype, broadcastable
// shapes -> broadcast shape. Panics with a *tensor.Error otherwise.
func Add(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(addOp, nil, a, b) }

// Sub returns a - b elementwise, with broadcasting as Add.
func Sub(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(subOp, nil, a, b) }

// Mul returns a * b elementwise, with broadcasting as Add.
func Mul(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(mulOp, nil, a, b) }

// Div returns a / b elementwise, with broadcasting as Add. Integer division
// truncates; an integer divided by zero gives -1 (all bits set), as XLA
// defines it. Float division by zero gives ±Inf or NaN.
func Div(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(divOp, nil, a, b) }

// Rem returns the remainder of a / b with the sign of the dividend a, as
// XLA's Rem (C's fmod); an integer remainder by zero gives a.
func Rem(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(remOp, nil, a, b) }

// Max returns the elementwise maximum; NaN wins over numbers.
func Max(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(maxOp, nil, a, b) }

// Min returns the elementwise minimum; NaN wins over numbers.
func Min(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(minOp, nil, a, b) }

// Pow returns a raised to b elementwise. For integers a negative exponent
// gives 0 unless |a| is 1.
func Pow(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(powOp, nil, a, b) }

// BroadcastDims applies a binary op in XLA's explicit form Op(lhs, rhs,
// broadcast_dimensions): dims maps each dimension of the lower-rank operand
// to a dimension of the higher-rank one; that operand's other dimensions are
// treated as size 1 and broadcast. For example, with m: [2 3] and v: [2],
// BroadcastDims(Add, m, v, 0) adds v[i] to row i. It panics with a
// *tensor.Error if dims does not fit.
func BroadcastDims(op func(a, b *tensor.Tensor) *tensor.Tensor, lhs, rhs *tensor.Tensor, dims ...int) *tensor.Tensor {
	lo, hi, loIsLHS := rhs, lhs, false
	if lhs.Rank() < rhs.Rank() {
		lo, hi, loIsLHS = lhs, rhs, true
	}
	in := []*tensor.Tensor{lhs, rhs}
	attrs := "broadcast_dimensions=" + tensor.Shape(dims).String()
	if len(dims) != lo.Rank() {
		tensor.Panicf("ops", "BroadcastDims", tensor.ErrAttr, in, attrs,
			"%d broadcast dimensions for an operand of rank %d", len(dims), lo.Rank())
	}
	shape := make([]int, hi.Rank())
	for i := range shape {
		shape[i] = 1
	}
	for i, d := range dims {
		if d < 0 || d >= hi.Rank() || (i > 0 && d <= dims[i-1]) {
			tensor.Panicf("ops", "BroadcastDims", tensor.ErrAxis, in, attrs,
				"broadcast dimensions must be increasing and within rank %d", hi.Rank())
		}
		if lo.Dim(i) != hi.Dim(d) && lo.Dim(i) != 1 {
			tensor.Panicf("ops", "BroadcastDims", tensor.ErrShape, in, attrs,
				"dimension %d (size %d) cannot map to dimension %d (size %d)", i, lo.Dim(i), d, hi.Dim(d))
		}
		shape[d] = lo.Dim(i)
	}
	lo = Reshape(lo, shape...)
	if loIsLHS {
		return op(lo, hi)
	}
	return op(hi, lo)
}
