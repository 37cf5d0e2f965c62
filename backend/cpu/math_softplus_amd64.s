//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// log(1 + e^x) of float32, four lanes at a time in float64.

CONST4(spAbs, 0x7fffffffffffffff)
CONST4(spInf, 0x7ff0000000000000)
CONST4(spOne, 0x3ff0000000000000)
CONST4(spLo, 0xc05b800000000000)     // -110: below, e^t is far below float32's range
CONST4(spLog2e, 0x3ff71547652b82fe)
CONST4(spLn2Hi, 0x3fe62e42fee00000)  // ln 2 = hi + lo, k·hi exact for |k| < 2^11
CONST4(spLn2Lo, 0x3dea39ef35793c76)
CONST4(spLn2, 0x3fe62e42fefa39ef)
CONST4(spBias, 0x00000000000003ff)
CONST4(spMant, 0x000fffffffffffff)
CONST4(spSqrt2, 0x3ff6a09e667f3bcd)
CONST4(spHalf, 0x3fe0000000000000)
CONST4(spMagic, 0x4338000000000000)  // 1.5·2^52: int64 to float64 by an add
CONST4(spF2, 0x3fe0000000000000)     // 1/2!
CONST4(spF3, 0x3fc5555555555555)     // 1/3!
CONST4(spF4, 0x3fa5555555555555)     // 1/4!
CONST4(spF5, 0x3f81111111111111)     // 1/5!
CONST4(spF6, 0x3f56c16c16c16c17)     // 1/6!
CONST4(spF7, 0x3f2a01a01a01a01a)     // 1/7!
CONST4(spF8, 0x3efa01a01a01a01a)     // 1/8!
CONST4(spF9, 0x3ec71de3a556c734)     // 1/9!
CONST4(spF10, 0x3e927e4fb7789f5c)    // 1/10!
CONST4(spF11, 0x3e5ae64567f544e4)    // 1/11!
CONST4(spC1, 0x3fd5555555555555)     // 1/3
CONST4(spC2, 0x3fc999999999999a)     // 1/5
CONST4(spC3, 0x3fc2492492492492)     // 1/7
CONST4(spC4, 0x3fbc71c71c71c71c)     // 1/9
CONST4(spC5, 0x3fb745d1745d1746)     // 1/11
CONST4(spC6, 0x3fb3b13b13b13b14)     // 1/13
CONST4(spC7, 0x3fb1111111111111)     // 1/15
CONST4(spC8, 0x3fae1e1e1e1e1e1e)     // 1/17

// func ssoftplus4(dst, x *float32, n int) int
// dst[i] = log(1 + e^x[i]) for n a multiple of 4, four lanes at a time,
// as max(x, 0) + log1p(e^-|x|): e = e^t, t = -|x| (from -110 on), by 2^k·e^r
// (r = t - k·ln 2, its series to r¹¹); log1p(e) as ln u·e/(u - 1), u = 1 +
// e (e where u is 1), ln u by its series in s = (m-1)/(m+1) to s¹⁷. It
// stops before the first group holding an infinity or NaN and returns
// how many it did.
TEXT ·ssoftplus4(SB), NOSPLIT, $0-32
	LANES64_ARGS
	VMOVUPD spOne<>(SB), Y14

sploop:
	LANES64_HEAD(spdone)
	VANDPD  spAbs<>(SB), Y0, Y1
	VCMPPD  $0x15, spInf<>(SB), Y1, Y2         // ±Inf, or NaN
	LANES64_STOP(Y2, spdone)

	VXORPD  Y2, Y2, Y2
	VSUBPD  Y1, Y2, Y1                         // t = -|x|
	VMAXPD  spLo<>(SB), Y1, Y1
	VMULPD  spLog2e<>(SB), Y1, Y3
	VROUNDPD $0, Y3, Y3                        // k
	VFNMADD231PD spLn2Hi<>(SB), Y3, Y1
	VFNMADD231PD spLn2Lo<>(SB), Y3, Y1         // r
	VMOVUPD spF11<>(SB), Y4                    // e^r
	VFMADD213PD spF10<>(SB), Y1, Y4
	VFMADD213PD spF9<>(SB), Y1, Y4
	VFMADD213PD spF8<>(SB), Y1, Y4
	VFMADD213PD spF7<>(SB), Y1, Y4
	VFMADD213PD spF6<>(SB), Y1, Y4
	VFMADD213PD spF5<>(SB), Y1, Y4
	VFMADD213PD spF4<>(SB), Y1, Y4
	VFMADD213PD spF3<>(SB), Y1, Y4
	VFMADD213PD spF2<>(SB), Y1, Y4
	VFMADD213PD Y14, Y1, Y4
	VFMADD213PD Y14, Y1, Y4
	VCVTPD2DQY  Y3, X5
	VPMOVSXDQ   X5, Y5
	VPADDQ      spBias<>(SB), Y5, Y5
	VPSLLQ      $52, Y5, Y5                    // 2^k (k in [-159, 0])
	VMULPD      Y5, Y4, Y4                     // e = e^-|x|, in (0, 1]

	VADDPD  Y14, Y4, Y1                        // u = 1 + e, in [1, 2]
	VPSRLQ  $52, Y1, Y2
	VPSUBQ  spBias<>(SB), Y2, Y2               // u's exponent
	VANDPD  spMant<>(SB), Y1, Y3
	VORPD   Y14, Y3, Y3                        // m in [1, 2)
	VCMPPD  $0x1e, spSqrt2<>(SB), Y3, Y5       // m > √2
	VMULPD  spHalf<>(SB), Y3, Y6
	VBLENDVPD Y5, Y6, Y3, Y3                   // m in [√½, √2)
	VPSUBQ  Y5, Y2, Y2
	VPADDQ  spMagic<>(SB), Y2, Y2
	VSUBPD  spMagic<>(SB), Y2, Y2              // the exponent as float64
	VSUBPD  Y14, Y3, Y5                        // m - 1
	VADDPD  Y14, Y3, Y6
	VDIVPD  Y6, Y5, Y5                         // s
	VMULPD  Y5, Y5, Y6                         // z = s²
	VMOVUPD spC8<>(SB), Y7
	VFMADD213PD spC7<>(SB), Y6, Y7
	VFMADD213PD spC6<>(SB), Y6, Y7
	VFMADD213PD spC5<>(SB), Y6, Y7
	VFMADD213PD spC4<>(SB), Y6, Y7
	VFMADD213PD spC3<>(SB), Y6, Y7
	VFMADD213PD spC2<>(SB), Y6, Y7
	VFMADD213PD spC1<>(SB), Y6, Y7
	VADDPD  Y5, Y5, Y8                         // 2s
	VMULPD  Y8, Y6, Y6
	VFMADD213PD Y8, Y6, Y7                     // ln m
	VFMADD231PD spLn2<>(SB), Y2, Y7            // ln u
	VSUBPD  Y14, Y1, Y8                        // u - 1 (exact)
	VDIVPD  Y8, Y4, Y9                         // e/(u - 1)
	VMULPD  Y9, Y7, Y7                         // log1p(e)
	VCMPPD  $0, Y14, Y1, Y9                    // u = 1: log1p(e) is e
	VBLENDVPD Y9, Y4, Y7, Y7
	VXORPD  Y9, Y9, Y9
	VMAXPD  Y9, Y0, Y9                         // max(x, 0)
	VADDPD  Y9, Y7, Y7
	LANES64_NEXT(Y7, X7, sploop)

spdone:
	SUBQ CX, BX
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET
