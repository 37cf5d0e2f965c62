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
