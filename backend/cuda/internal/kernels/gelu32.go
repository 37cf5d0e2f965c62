package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// GeluTanh and its gradient in float32, for float32 and the half types
// (which compute in it); float64 takes fm's, the same form in float64. x/2·(1 + tanh u), u =
// √(2/π)(x + 0.044715x³), is x·σ, σ = 1/(1 + e), e = e^(−2u) =
// 2^(−2u·log₂e): one ex2.approx (relative error about 2⁻²²) and one
// rcp.approx (1 ulp), so the result is within a few float32 roundings of
// itself, relative, at every x (no 1 + tanh u cancelling where tanh u
// nears −1: the CPU's float32 loop is held to 3e-7 of max(1, |x|)
// absolute there). The float64 path's series and divisions took about 90
// instructions an element. The gradient is dy·(σ + x·2u'·σ·(1 − σ)), u'
// = √(2/π)(1 + 3·0.044715x²), 1 − σ = e·σ (1 where e overflows, σ 0);
// at ±∞ its limits, 1 and 0.

// geluSaturates is where σ is 0 or 1 in float32 (e^(−2u) overflows, or
// underflows to 0): the kernels compute σ and the slope from x clamped to
// it, so that x³ does not overflow (their products with 0 NaN).
const geluSaturates = 20

// geluSigma32 is σ and e for x (float32 registers), and x clamped to
// ±geluSaturates (a NaN to +geluSaturates: PTX's min and max).
func geluSigma32(k *ptx.Kernel, x ptx.Reg) (sigma, e, xc ptx.Reg) {
	f := func(v float64) string { return ptx.Imm(ptx.F32, v) }
	xc = k.Reg(ptx.F32)
	k.Op("min.f32 %s, %s, %s", xc, x, f(geluSaturates))
	k.Op("max.f32 %s, %s, %s", xc, xc, f(-geluSaturates))
	cubic, z := k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("mul.rn.f32 %s, %s, %s", cubic, xc, xc)
	k.Op("fma.rn.f32 %s, %s, %s, %s", cubic, cubic, f(geluA), f(1)) // 1 + 0.044715x²
	k.Op("mul.rn.f32 %s, %s, %s", z, xc, cubic)                     // u/√(2/π)
	k.Op("mul.rn.f32 %s, %s, %s", z, z, f(-2*geluK*math.Log2E))     // −2u·log₂e
	e, sigma = k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("ex2.approx.f32 %s, %s", e, z)
	k.Op("add.rn.f32 %s, %s, %s", sigma, e, f(1))
	k.Op("rcp.approx.f32 %s, %s", sigma, sigma)
	return sigma, e, xc
}

// geluTanh32 is GeluTanh of the float32 x.
func geluTanh32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	s, _, _ := geluSigma32(k, x)
	r, zero := k.Reg(ptx.F32), k.Reg(ptx.Pred) // x·σ: NaN for a NaN x; −0 where σ is 0 (at −∞ the limit, not −∞·0)
	k.Op("mul.rn.f32 %s, %s, %s", r, x, s)
	k.Op("setp.eq.f32 %s, %s, %s", zero, s, ptx.Imm(ptx.F32, 0))
	k.Op("selp.f32 %s, %s, %s, %s", r, ptx.Imm(ptx.F32, math.Copysign(0, -1)), r, zero)
	return r
}

// geluTanhGrad32 is dy·GeluTanh'(x) of the float32 x and dy.
func geluTanhGrad32(k *ptx.Kernel, x, dy ptx.Reg) ptx.Reg {
	f := func(v float64) string { return ptx.Imm(ptx.F32, v) }
	s, e, xc := geluSigma32(k, x)
	rest, inf := k.Reg(ptx.F32), k.Reg(ptx.Pred) // 1 − σ
	k.Op("mul.rn.f32 %s, %s, %s", rest, e, s)
	k.Op("setp.eq.f32 %s, %s, %s", inf, e, f(math.Inf(1)))
	k.Op("selp.f32 %s, %s, %s, %s", rest, f(1), rest, inf)
	slope := k.Reg(ptx.F32) // 2u'·x = 2√(2/π)(1 + 3·0.044715x²)·x
	k.Op("mul.rn.f32 %s, %s, %s", slope, xc, xc)
	k.Op("fma.rn.f32 %s, %s, %s, %s", slope, slope, f(6*geluA*geluK), f(2*geluK))
	k.Op("mul.rn.f32 %s, %s, %s", slope, slope, xc)
	k.Op("mul.rn.f32 %s, %s, %s", slope, slope, rest)
	r, nan := k.Reg(ptx.F32), k.Reg(ptx.Pred) // σ·(1 + slope·(1 − σ)); NaN for a NaN x
	k.Op("fma.rn.f32 %s, %s, %s, %s", r, slope, s, s)
	k.Op("setp.nan.f32 %s, %s, %s", nan, x, x)
	k.Op("selp.f32 %s, %s, %s, %s", r, x, r, nan)
	k.Op("mul.rn.f32 %s, %s, %s", r, r, dy)
	return r
}

// Gelu (x·Φ(x)) and its gradient (Φ(x) + x·φ(x)) in float32, for float32
// and the half types, by the CPU's vector Φ (backend/cpu's sphi8, the
// same constants: TestPhi32ConstantsAreTheCPUs holds them to it): 1/2 +
// x·P(x²) below |x| = 0.75; beyond, Φ(-y) = e^(-y²/2)·R(v) for y = |x|
// (clamped at 14.2, past which Φ(-y) is below float32's least value), v
// an affine map of u = 1/(1 + y/2), y² split exactly as h + l and
// e^(-l/2) as 1 - l/2; Φ(x) = Φ(-y) for x < 0 and 1 - Φ(-y) above, so
// neither tail cancels. The float64 path (fm's gelu: a continued
// fraction and a series, each division a step) took about 915
// instructions an element, its gradient 484.

// phi32P and phi32R are P's and R's coefficients, lowest first, and
// phi32Scale, phi32Shift v's map, as float32 bits.
var (
	phi32P                 = []uint32{0x3ecc422a, 0xbd882c1c, 0x3c236806, 0xba9b99bf, 0x38f0b550, 0xb70cbcc3}
	phi32R                 = []uint32{0x3e07d585, 0x3e0a8a5a, 0x3d05e273, 0x3a5cedf1, 0xbaae0635, 0x377446df, 0x38be65d9, 0xb7801854, 0xb6b98b34, 0x36106fd3, 0x343504b6}
	phi32Scale, phi32Shift = uint32(0x4053fc31), uint32(0xbfb4578e)
)

// phi32Split and phi32Clamp are where Φ's pieces change and where it is 0
// or 1 in float32.
const phi32Split, phi32Clamp = 0.75, 14.2

// phi32 is Φ(x) of the float32 x, φ(x)·√(2π) = e^(-x²/2) and x clamped to
// ±14.2 (for the gradient: φ is 0 past the clamp, where the gradient is
// Φ's 0 or 1 alone, and the clamped x keeps ±∞·0 out).
func phi32(k *ptx.Kernel, x ptx.Reg) (phi, pdf, xc ptx.Reg) {
	f := f32Imm
	bits := func(b uint32) string { return f(float64(math.Float32frombits(b))) }
	r32 := func() ptx.Reg { return k.Reg(ptx.F32) }
	a, z := r32(), r32()
	k.Op("abs.f32 %s, %s", a, x)
	k.Op("mul.rn.f32 %s, %s, %s", z, a, a)
	small := poly32(k, z, phi32P)
	k.Op("fma.rn.f32 %s, %s, %s, %s", small, small, x, f(0.5)) // 1/2 + x·P(x²)
	y, u, v := r32(), r32(), r32()
	k.Op("min.f32 %s, %s, %s", y, a, f(phi32Clamp))
	k.Op("fma.rn.f32 %s, %s, %s, %s", u, y, f(0.5), f(1))
	k.Op("rcp.approx.f32 %s, %s", u, u) // within an ulp: R moves by a few parts in 10⁸
	k.Op("fma.rn.f32 %s, %s, %s, %s", v, u, bits(phi32Scale), bits(phi32Shift))
	rv := poly32(k, v, phi32R)
	h, l, nh := r32(), r32(), r32()
	k.Op("mul.rn.f32 %s, %s, %s", h, y, y)
	k.Op("neg.f32 %s, %s", nh, h)
	k.Op("fma.rn.f32 %s, %s, %s, %s", l, y, y, nh) // y² - h, exactly
	k.Op("mul.rn.f32 %s, %s, %s", nh, nh, f(0.5))
	pdf = exp32(k, nh)                                  // e^(-h/2)
	k.Op("mul.rn.f32 %s, %s, %s", l, l, f(-0.5))        // -l/2
	k.Op("fma.rn.f32 %s, %s, %s, %s", pdf, pdf, l, pdf) // e^(-y²/2)
	q := r32()
	k.Op("mul.rn.f32 %s, %s, %s", q, pdf, rv) // Φ(-y)
	far, neg, near, nan := k.Reg(ptx.Pred), k.Reg(ptx.Pred), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.ge.f32 %s, %s, %s", far, a, f(phi32Clamp))
	k.Op("selp.f32 %s, 0f00000000, %s, %s", q, q, far)
	k.Op("selp.f32 %s, 0f00000000, %s, %s", pdf, pdf, far)
	phi = r32()
	k.Op("sub.rn.f32 %s, %s, %s", phi, f(1), q)
	k.Op("setp.lt.f32 %s, %s, 0f00000000", neg, x)
	k.Op("selp.f32 %s, %s, %s, %s", phi, q, phi, neg)
	k.Op("setp.lt.f32 %s, %s, %s", near, a, f(phi32Split))
	k.Op("selp.f32 %s, %s, %s, %s", phi, small, phi, near)
	k.Op("setp.nan.f32 %s, %s, %s", nan, x, x)
	k.Op("selp.f32 %s, %s, %s, %s", phi, x, phi, nan)
	xc = r32()
	k.Op("copysign.f32 %s, %s, %s", xc, x, y)
	return phi, pdf, xc
}

// gelu32 is Gelu of the float32 x: x·Φ(x), -0 where Φ is 0 (at -∞ the
// limit, not -∞·0).
func gelu32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	phi, _, _ := phi32(k, x)
	r, zero := k.Reg(ptx.F32), k.Reg(ptx.Pred)
	k.Op("mul.rn.f32 %s, %s, %s", r, x, phi)
	k.Op("setp.eq.f32 %s, %s, 0f00000000", zero, phi)
	k.Op("selp.f32 %s, 0f80000000, %s, %s", r, r, zero)
	return r
}

// geluGrad32 is dy·(Φ(x) + x·φ(x)) of the float32 x and dy: Φ's 1 or 0
// alone past the clamp (and at ±∞).
func geluGrad32(k *ptx.Kernel, x, dy ptx.Reg) ptx.Reg {
	phi, pdf, xc := phi32(k, x)
	r := k.Reg(ptx.F32)
	k.Op("mul.rn.f32 %s, %s, %s", r, xc, pdf)
	k.Op("fma.rn.f32 %s, %s, %s, %s", r, r, ptx.Imm(ptx.F32, 1/math.Sqrt(2*math.Pi)), phi)
	k.Op("mul.rn.f32 %s, %s, %s", r, r, dy)
	return r
}
