package cpu

import (
	"github.com/eagerflow/eagerflow/internal/mathx"
	"math"
	"unsafe"

	"github.com/chewxy/math32"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the elementwise binary ops (ops/binary.go).

// numKernels instantiates one generic loop set for every numeric dtype.
func numKernels(f32 binLoops[float32, float32], f64 binLoops[float64, float64],
	i32 binLoops[int32, int32], i64 binLoops[int64, int64], u8 binLoops[uint8, uint8]) kernels {
	return kernels{f32: binaryKernel(f32), f64: binaryKernel(f64), i32: binaryKernel(i32),
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
		vs: addScalar[T],
		sv: func(o []T, a T, b []T) { addScalar(o, b, a) }, // commutative
	}
}

// addScalar sets o = a + s elementwise (o may be a).
func addScalar[T tensor.Num](o, a []T, s T) {
	a = a[:len(o)]
	if vecScalar(o, a, s, sadds) {
		return
	}
	for i := range o {
		o[i] = a[i] + s
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

// vecVV sets o = a op b with k, an AVX2 float32 loop, when T is float32
// and the kernels are there, and reports whether it did.
func vecVV[T tensor.Num](o, a, b []T, k func(dst, a, b *float32, n int)) bool {
	o32, ok := any(o).([]float32)
	if !ok || !haveVecKernels || len(o) == 0 {
		return false
	}
	k(&o32[0], &any(a).([]float32)[:len(o)][0], &any(b).([]float32)[:len(o)][0], len(o))
	return true
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
			if vecVV(o, a, b, ssub) {
				return
			}
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = a[i] - b[i]
			}
		},
		vs: func(o, a []T, b T) {
			if vecScalar(o, a, -b, sadds) { // a + (-b) is a - b, bit for bit
				return
			}
			a = a[:len(o)]
			for i := range o {
				o[i] = a[i] - b
			}
		},
		sv: func(o []T, a T, b []T) {
			if o32, ok := any(o).([]float32); ok && haveVecKernels && len(o) > 0 { // -b + a, bit for bit a - b
				smuls(&o32[0], &any(b).([]float32)[0], -1, len(o))
				sadds(&o32[0], &o32[0], any(a).(float32), len(o))
				return
			}
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
			if vecVV(o, a, b, smul) {
				return
			}
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
			if vecVV(o, a, b, sdiv) {
				return
			}
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

// powLoops32 are float32's Pow loops: math.Pow in float64, rounded,
// except for a power of 1, 2 or 3 (x², x³ are common), which are x, and
// x's square or cube in float64 rounded once: the bits math.Pow gives
// (a float32's square is exact in float64, and Pow multiplies out
// integer powers, every special case included), at a nanosecond an
// element where math.Pow took about 35.
func powLoops32() binLoops[float32, float32] {
	l := scalarLoops(func(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) })
	general := l.vs
	l.vs = func(o, a []float32, b float32) {
		a = a[:len(o)]
		switch b {
		case 1:
			copy(o, a)
		case 2: // the exact square rounded once: float32's own product
			if vecVV(o, a, a, smul) {
				return
			}
			for i, v := range a {
				w := float64(v)
				o[i] = float32(w * w)
			}
		case 3:
			for i, v := range a {
				w := float64(v)
				o[i] = float32(w * w * w)
			}
		default:
			general(o, a, b)
		}
	}
	return l
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

func init() {
	numKernels(addLoops[float32](), addLoops[float64](), addLoops[int32](), addLoops[int64](), addLoops[uint8]()).register("Add")
	numKernels(subLoops[float32](), subLoops[float64](), subLoops[int32](), subLoops[int64](), subLoops[uint8]()).register("Sub")
	numKernels(mulLoops[float32](), mulLoops[float64](), mulLoops[int32](), mulLoops[int64](), mulLoops[uint8]()).register("Mul")
	numKernels(divFloatLoops[float32](), divFloatLoops[float64](), scalarLoops(intDiv[int32]),
		scalarLoops(intDiv[int64]), scalarLoops(intDiv[uint8])).register("Div")
	numKernels(scalarLoops(math32.Mod), scalarLoops(math.Mod), scalarLoops(intRem[int32]),
		scalarLoops(intRem[int64]), scalarLoops(intRem[uint8])).register("Rem")
	numKernels(scalarLoops(maxOf[float32]), scalarLoops(maxOf[float64]), scalarLoops(maxOf[int32]),
		scalarLoops(maxOf[int64]), scalarLoops(maxOf[uint8])).register("Max")
	numKernels(scalarLoops(minOf[float32]), scalarLoops(minOf[float64]), scalarLoops(minOf[int32]),
		scalarLoops(minOf[int64]), scalarLoops(minOf[uint8])).register("Min")
	numKernels(powLoops32(),
		scalarLoops(mathx.Pow), scalarLoops(intPow[int32]), scalarLoops(intPow[int64]), scalarLoops(intPow[uint8])).register("Pow")
}
