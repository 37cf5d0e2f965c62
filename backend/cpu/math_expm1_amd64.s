//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// e^x - 1 of float32, four lanes at a time in float64.

CONST4(expm1Abs, 0x7fffffffffffffff)
CONST4(expm1Inf, 0x7ff0000000000000)
CONST4(expm1One, 0x3ff0000000000000)
CONST4(expm1Half, 0x3fe0000000000000)
CONST4(expm1Lo, 0xc05b800000000000)   // -110: below, e^x - 1 rounds to -1 in float32
CONST4(expm1Hi, 0x4059000000000000)   // 100: above, it overflows float32
CONST4(expm1Log2e, 0x3ff71547652b82fe)
CONST4(expm1Ln2Hi, 0x3fe62e42fee00000) // ln 2 = hi + lo, k·hi exact for |k| < 2^11
CONST4(expm1Ln2Lo, 0x3dea39ef35793c76)
CONST4(expm1Bias, 0x00000000000003ff)
CONST4(expm1F2, 0x3fe0000000000000)    // 1/2!
CONST4(expm1F3, 0x3fc5555555555555)    // 1/3!
CONST4(expm1F4, 0x3fa5555555555555)    // 1/4!
CONST4(expm1F5, 0x3f81111111111111)    // 1/5!
CONST4(expm1F6, 0x3f56c16c16c16c17)    // 1/6!
CONST4(expm1F7, 0x3f2a01a01a01a01a)    // 1/7!
CONST4(expm1F8, 0x3efa01a01a01a01a)    // 1/8!
CONST4(expm1F9, 0x3ec71de3a556c734)    // 1/9!
CONST4(expm1F10, 0x3e927e4fb7789f5c)   // 1/10!
CONST4(expm1F11, 0x3e5ae64567f544e4)   // 1/11!
CONST4(expm1F12, 0x3e21eed8eff8d898)   // 1/12!
CONST4(expm1F13, 0x3de6124613a86d09)   // 1/13!

// func sexpm1_4(dst, x *float32, n int) int
// dst[i] = e^x[i] - 1 for n a multiple of 4, four lanes at a time: below
// |x| = ½ by its Taylor series x + x²·(1/2! + x/3! + ...) to x¹³ (no
// cancelling near 0); above, e^x - 1 with e^x = 2^k·e^r, k = round(x/ln 2),
// r = x - k·ln 2 (ln 2 in two parts, |r| ≤ 0.35), e^r by its series to
// r¹¹, x first clamped to [-110, 100] (float32's results there are -1 and
// +Inf). ±0 kept. It stops before the first group holding an infinity or
// NaN and returns how many it did.
TEXT ·sexpm1_4(SB), NOSPLIT, $0-32
	LANES64_ARGS
	VMOVUPD expm1One<>(SB), Y14

expm1loop:
	LANES64_HEAD(expm1done)
	VANDPD  expm1Abs<>(SB), Y0, Y1
	VCMPPD  $0x15, expm1Inf<>(SB), Y1, Y2      // ±Inf, or NaN
	LANES64_STOP(Y2, expm1done)

	VMOVUPD expm1F13<>(SB), Y3                 // near 0: x + x²·(1/2! + x/3! + ...)
	VFMADD213PD expm1F12<>(SB), Y0, Y3
	VFMADD213PD expm1F11<>(SB), Y0, Y3
	VFMADD213PD expm1F10<>(SB), Y0, Y3
	VFMADD213PD expm1F9<>(SB), Y0, Y3
	VFMADD213PD expm1F8<>(SB), Y0, Y3
	VFMADD213PD expm1F7<>(SB), Y0, Y3
	VFMADD213PD expm1F6<>(SB), Y0, Y3
	VFMADD213PD expm1F5<>(SB), Y0, Y3
	VFMADD213PD expm1F4<>(SB), Y0, Y3
	VFMADD213PD expm1F3<>(SB), Y0, Y3
	VFMADD213PD expm1F2<>(SB), Y0, Y3
	VMULPD  Y0, Y0, Y4
	VFMADD213PD Y0, Y4, Y3                     // Y3 = the series

	VMAXPD  expm1Lo<>(SB), Y0, Y5
	VMINPD  expm1Hi<>(SB), Y5, Y5              // x clamped
	VMULPD  expm1Log2e<>(SB), Y5, Y6
	VROUNDPD $0, Y6, Y6                        // k
	VFNMADD231PD expm1Ln2Hi<>(SB), Y6, Y5
	VFNMADD231PD expm1Ln2Lo<>(SB), Y6, Y5      // r
	VMOVUPD expm1F11<>(SB), Y7                 // e^r = 1 + r + r²/2! + ...
	VFMADD213PD expm1F10<>(SB), Y5, Y7
	VFMADD213PD expm1F9<>(SB), Y5, Y7
	VFMADD213PD expm1F8<>(SB), Y5, Y7
	VFMADD213PD expm1F7<>(SB), Y5, Y7
	VFMADD213PD expm1F6<>(SB), Y5, Y7
	VFMADD213PD expm1F5<>(SB), Y5, Y7
	VFMADD213PD expm1F4<>(SB), Y5, Y7
	VFMADD213PD expm1F3<>(SB), Y5, Y7
	VFMADD213PD expm1F2<>(SB), Y5, Y7
	VFMADD213PD Y14, Y5, Y7
	VFMADD213PD Y14, Y5, Y7
	VCVTPD2DQY  Y6, X8
	VPMOVSXDQ   X8, Y8
	VPADDQ      expm1Bias<>(SB), Y8, Y8
	VPSLLQ      $52, Y8, Y8                    // 2^k (k in [-159, 145]: normal)
	VMULPD      Y8, Y7, Y7
	VSUBPD      Y14, Y7, Y7                    // e^x - 1

	VCMPPD    $0x11, expm1Half<>(SB), Y1, Y9   // |x| < ½: the series
	VBLENDVPD Y9, Y3, Y7, Y7
	VXORPD    Y10, Y10, Y10
	VCMPPD    $0, Y10, Y0, Y10                 // ±0 kept
	VBLENDVPD Y10, Y0, Y7, Y7
	LANES64_NEXT(Y7, X7, expm1loop)

expm1done:
	SUBQ CX, BX
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET
