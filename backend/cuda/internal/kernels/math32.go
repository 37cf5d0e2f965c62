package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// tanh and the logistic sigmoid in float32, for float32 and the half
// types (which compute in it), by the CPU's vector kernels' methods
// (backend/cpu's stanh8 and ssigmoid8) on exp32, the carried float32
// exponential; the float64 path (fm's tanh and sigmoid: float64's series
// and a float64 division) took 78 and 56 instructions an element, and
// their float64 divisions are a dozen instructions each on the hardware.
//
//	tanh     x + x³·P(x²) below |x| = 0.55 (the CPU's degree-4 fit,
//	         TestTanh32ConstantsAreTheCPUs), else x's sign on
//	         1 - 2/(e^(2a) + 1), a = min(|x|, 9.1) (tanh is 1 in float32
//	         from 9.01); at least ½ there, so 1 - q loses no bits.
//	sigmoid  t = e^-|x|: 1/(1 + t) for x ≥ 0, t/(1 + t) below, so neither
//	         side cancels.

// tanh32P is P's coefficients, lowest first, as float32 bits, and
// tanh32Small, tanh32Clamp where the pieces change and where tanh is 1.
var tanh32P = []uint32{0xbeaaaaa6, 0x3e0886a7, 0xbd5c970a, 0x3cacb335, 0xbbce0328}

const tanh32Small, tanh32Clamp = 0.55, 9.1

// f32Imm is v as a float32 immediate.
func f32Imm(v float64) string { return ptx.Imm(ptx.F32, v) }

// poly32 is Σ c[i]·z^i (c as float32 bits, lowest first) by Horner's FMAs.
func poly32(k *ptx.Kernel, z ptx.Reg, c []uint32) ptx.Reg {
	acc := k.Reg(ptx.F32)
	k.Op("mov.f32 %s, %s", acc, f32Imm(float64(math.Float32frombits(c[len(c)-1]))))
	for i := len(c) - 2; i >= 0; i-- {
		k.Op("fma.rn.f32 %s, %s, %s, %s", acc, acc, z, f32Imm(float64(math.Float32frombits(c[i]))))
	}
	return acc
}

// override32 sets the float32 r to v where a cmp b (a setp and a selp).
func override32(k *ptx.Kernel, r ptx.Reg, cmp string, a, b, v any) {
	p := k.Reg(ptx.Pred)
	k.Op("setp.%s.f32 %s, %v, %v", cmp, p, a, b)
	k.Op("selp.f32 %s, %v, %s, %s", r, v, r, p)
}

// tanh32 is tanh of the float32 x: -0 and NaN kept.
func tanh32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	a, y, q, t := k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("abs.f32 %s, %s", a, x)
	k.Op("min.f32 %s, %s, %s", y, a, f32Imm(tanh32Clamp))
	k.Op("add.rn.f32 %s, %s, %s", y, y, y)
	e := exp32(k, y)
	k.Op("add.rn.f32 %s, %s, %s", q, e, f32Imm(1))
	k.Op("div.rn.f32 %s, %s, %s", q, f32Imm(2), q)
	k.Op("sub.rn.f32 %s, %s, %s", t, f32Imm(1), q)
	z, x3 := k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("mul.rn.f32 %s, %s, %s", z, x, x)
	p := poly32(k, z, tanh32P)
	k.Op("mul.rn.f32 %s, %s, %s", x3, z, x)
	k.Op("fma.rn.f32 %s, %s, %s, %s", p, x3, p, x)
	override32(k, t, "lt", a, f32Imm(tanh32Small), p)
	k.Op("copysign.f32 %s, %s, %s", t, x, t) // x's sign on either piece (-0 stays -0)
	override32(k, t, "nan", x, x, x)
	return t
}

// sigmoid32 is 1/(1 + e^-x) of the float32 x; NaN kept.
func sigmoid32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	na, num, den := k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("abs.f32 %s, %s", na, x)
	k.Op("neg.f32 %s, %s", na, na)
	t := exp32(k, na)
	pos := k.Reg(ptx.Pred)
	k.Op("setp.ge.f32 %s, %s, 0f00000000", pos, x)
	k.Op("selp.f32 %s, %s, %s, %s", num, f32Imm(1), t, pos)
	k.Op("add.rn.f32 %s, %s, %s", den, t, f32Imm(1))
	k.Op("div.rn.f32 %s, %s, %s", num, num, den)
	return num
}

// activation is σ (sigmoid) or tanh of the float64 v in a kernel of dtype
// d, as float64: float32's (v rounded to float32 first, as the CPU's
// float32 cells take their float32 pre-activations) for float32 and the
// half types, float64's series for float64. The recurrent cells and
// sequences take it.
func activation(m fm, d DType, sigmoid bool, v ptx.Reg) ptx.Reg {
	if d.Compute() == F64 {
		if sigmoid {
			return m.sigmoid(v)
		}
		return m.tanh(v)
	}
	f := tanh32
	if sigmoid {
		f = sigmoid32
	}
	return widen(m.k, F32, f(m.k, narrow(m.k, F32, v)))
}

// erf32 is erf of the float32 x by the CPU's vector method (serf8): a·S(a²)
// below a = |x| = 1, 1 - e^(-b²)·B(1/b) for b = min(a, 3.92) above (erf is
// 1 in float32 from 3.92), x's sign; S and B the CPU's fits
// (TestErf32ConstantsAreTheCPUs). The float64 path (a series and a
// continued fraction, a division a step) took about 650 instructions an
// element.
func erf32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	a, z, b, t, nb2 := k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("abs.f32 %s, %s", a, x)
	k.Op("mul.rn.f32 %s, %s, %s", z, a, a)
	small := poly32(k, z, erf32S)
	k.Op("mul.rn.f32 %s, %s, %s", small, small, a)
	k.Op("min.f32 %s, %s, %s", b, a, f32Imm(erf32Clamp))
	k.Op("rcp.approx.f32 %s, %s", t, b) // within an ulp: B moves by parts in 10⁸, times e^-b² ≤ 0.37
	big := poly32(k, t, erf32B)
	k.Op("mul.rn.f32 %s, %s, %s", nb2, b, b)
	k.Op("neg.f32 %s, %s", nb2, nb2)
	e := exp32(k, nb2)
	k.Op("mul.rn.f32 %s, %s, %s", big, big, e)
	k.Op("sub.rn.f32 %s, %s, %s", big, f32Imm(1), big)
	override32(k, big, "lt", a, f32Imm(1), small)
	override32(k, big, "ge", a, f32Imm(erf32Clamp), f32Imm(1))
	k.Op("copysign.f32 %s, %s, %s", big, x, big)
	override32(k, big, "nan", x, x, x)
	return big
}

// erf32S and erf32B are S's and B's coefficients, lowest first, as
// float32 bits; erf32Clamp where erf is 1.
var (
	erf32S = []uint32{0x3f906eba, 0xbec0933a, 0x3de704a2, 0xbcdad1b5, 0x3ba12383, 0xba13a020}
	erf32B = []uint32{0x39b350ba, 0x3f0ecfa0, 0x3d4e0ef8, 0xbf00eeb9, 0x3f124c29, 0xbeb2e8e3, 0x3df1496e, 0xbc8c60e6}
)

const erf32Clamp = 3.92

// log32 is ln x of the float32 x by the CPU's vector method (slog8): x =
// 2^e·m with m in [√½, √2) (subnormals scaled by 2²³ first), ln m =
// 2·atanh(s), s = (m - 1)/(m + 1), by its odd series to s⁹, e·ln 2 added
// in two parts (the CPU's, TestLog32ConstantsAreTheCPUs); 0 gives -∞, +∞
// +∞, negative numbers and NaN NaN.
func log32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	r32 := func() ptx.Reg { return k.Reg(ptx.F32) }
	sub, p := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	xs := r32()
	k.Op("setp.lt.f32 %s, %s, 0f00800000", sub, x) // below the least normal
	k.Op("mul.rn.f32 %s, %s, 0f4b000000", xs, x)   // ·2²³
	k.Op("selp.f32 %s, %s, %s, %s", xs, xs, x, sub)
	bits, e, mb := k.Reg(ptx.U32), k.Reg(ptx.S32), k.Reg(ptx.U32)
	k.Op("mov.b32 %s, %s", bits, xs)
	k.Op("shr.u32 %s, %s, 23", e, bits)
	k.Op("sub.s32 %s, %s, 127", e, e)
	k.Op("@%s sub.s32 %s, %s, 23", sub, e, e)
	k.Op("and.b32 %s, %s, 8388607", mb, bits)
	k.Op("or.b32 %s, %s, 1065353216", mb, mb) // m in [1, 2)
	m, half := r32(), r32()
	k.Op("mov.b32 %s, %s", m, mb)
	k.Op("setp.gt.f32 %s, %s, %s", p, m, f32Imm(float64(float32(math.Sqrt2))))
	k.Op("mul.rn.f32 %s, %s, 0f3f000000", half, m)
	k.Op("selp.f32 %s, %s, %s, %s", m, half, m, p)
	k.Op("@%s add.s32 %s, %s, 1", p, e, e)
	ef, s, den, z := r32(), r32(), r32(), r32()
	k.Op("cvt.rn.f32.s32 %s, %s", ef, e)
	k.Op("sub.rn.f32 %s, %s, 0f3f800000", s, m)
	k.Op("add.rn.f32 %s, %s, 0f3f800000", den, m)
	k.Op("div.rn.f32 %s, %s, %s", s, s, den)
	k.Op("mul.rn.f32 %s, %s, %s", z, s, s)
	c := func(v float64) uint32 { return math.Float32bits(float32(v)) }
	t := poly32(k, z, []uint32{c(1.0 / 3), c(1.0 / 5), c(1.0 / 7), c(1.0 / 9)})
	k.Op("mul.rn.f32 %s, %s, %s", t, z, t)
	k.Op("add.rn.f32 %s, %s, %s", s, s, s)        // 2s
	k.Op("fma.rn.f32 %s, %s, %s, %s", t, s, t, s) // ln m = 2s + 2s·s²(1/3 + ...)
	k.Op("fma.rn.f32 %s, %s, %s, %s", t, ef, f32Imm(float64(math.Float32frombits(log32Ln2Lo))), t)
	k.Op("fma.rn.f32 %s, %s, %s, %s", t, ef, f32Imm(float64(math.Float32frombits(log32Ln2Hi))), t)
	override32(k, t, "eq", x, "0f00000000", "0fff800000")
	override32(k, t, "eq", x, "0f7f800000", "0f7f800000")
	override32(k, t, "ltu", x, "0f00000000", "0f7fffffff") // negative or NaN
	return t
}

// log32Ln2Hi and log32Ln2Lo are ln 2 in two float32 parts (the CPU's).
const log32Ln2Hi, log32Ln2Lo = 0x3f318000, 0xb95e8083

// expm1_32 is e^x - 1 of the float32 x: x·P(x), P the Taylor series of
// (e^x - 1)/x to x⁸/9!, below |x| = ½ (no cancelling; -0 kept), else
// e^x - 1 (at least 0.39 in size there, so nothing cancels).
func expm1_32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	c := make([]uint32, 9)
	f := 1.0
	for i := range c { // 1/(i+1)!
		f *= float64(i + 1)
		c[i] = math.Float32bits(float32(1 / f))
	}
	series := poly32(k, x, c)
	k.Op("mul.rn.f32 %s, %s, %s", series, series, x)
	big, a := expAny32(k, x), k.Reg(ptx.F32)
	k.Op("sub.rn.f32 %s, %s, 0f3f800000", big, big)
	k.Op("abs.f32 %s, %s", a, x)
	override32(k, big, "lt", a, "0f3f000000", series)
	return big
}

// log1p32 is ln(1 + x) of the float32 x: u = 1 + x rounded, then
// ln u·x/(u - 1), which cancels u's rounding (x itself where u is 1, +∞
// at +∞).
func log1p32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	u, d := k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("add.rn.f32 %s, %s, 0f3f800000", u, x)
	l := log32(k, u)
	k.Op("sub.rn.f32 %s, %s, 0f3f800000", d, u)
	k.Op("div.rn.f32 %s, %s, %s", d, x, d)
	k.Op("mul.rn.f32 %s, %s, %s", l, l, d)
	override32(k, l, "eq", u, "0f3f800000", x)
	override32(k, l, "eq", x, "0f7f800000", x)
	return l
}

// softplus32 is ln(1 + e^x) of the float32 x as max(x, 0) + ln(1 +
// e^-|x|), so that it neither overflows nor loses small values; NaN kept.
func softplus32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	na, m := k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("abs.f32 %s, %s", na, x)
	k.Op("neg.f32 %s, %s", na, na)
	l := log1p32(k, exp32(k, na))
	k.Op("max.f32 %s, %s, 0f00000000", m, x)
	k.Op("add.rn.f32 %s, %s, %s", l, l, m)
	override32(k, l, "nan", x, x, x)
	return l
}

// math32Funcs are the float32 functions by the unary op's name.
var math32Funcs = map[string]func(*ptx.Kernel, ptx.Reg) ptx.Reg{
	"exp": expAny32, "tanh": tanh32, "sigmoid": sigmoid32, "erf": erf32, "log": log32,
	"expm1": expm1_32, "log1p": log1p32, "softplus": softplus32,
}
