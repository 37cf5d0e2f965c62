//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// e^x - 1 of float32, four lanes at a time in float64.

CONST4(expm1Abs, 0x7fffffffffffffff)
CONST4(expm1Inf, 0x7ff0000000000000)
CONST4(expm1Lo, 0xc05b800000000000)   // -110: below, e^x - 1 rounds to -1 in float32
CONST4(expm1Hi, 0x4059000000000000)   // 100: above, it overflows float32
CONST4(expm1F12, 0x3e21eed8eff8d898)  // 1/12!
CONST4(expm1F13, 0x3de6124613a86d09)  // 1/13!

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
	VMOVUPD lanesOne<>(SB), Y14

expm1loop:
	LANES64_HEAD(expm1done)
	VANDPD  expm1Abs<>(SB), Y0, Y1
	VCMPPD  $0x15, expm1Inf<>(SB), Y1, Y2      // ±Inf, or NaN
	LANES64_STOP(Y2, expm1done)

	VMOVUPD expm1F13<>(SB), Y3                 // near 0: x + x²·(1/2! + x/3! + ...)
	VFMADD213PD expm1F12<>(SB), Y0, Y3
	VFMADD213PD lanesF11<>(SB), Y0, Y3
	VFMADD213PD lanesF10<>(SB), Y0, Y3
	VFMADD213PD lanesF9<>(SB), Y0, Y3
	VFMADD213PD lanesF8<>(SB), Y0, Y3
	VFMADD213PD lanesF7<>(SB), Y0, Y3
	VFMADD213PD lanesF6<>(SB), Y0, Y3
	VFMADD213PD lanesF5<>(SB), Y0, Y3
	VFMADD213PD lanesF4<>(SB), Y0, Y3
	VFMADD213PD lanesF3<>(SB), Y0, Y3
	VFMADD213PD lanesF2<>(SB), Y0, Y3
	VMULPD  Y0, Y0, Y4
	VFMADD213PD Y0, Y4, Y3                     // Y3 = the series

	VMAXPD  expm1Lo<>(SB), Y0, Y5
	VMINPD  expm1Hi<>(SB), Y5, Y5              // x clamped
	EXP64(Y5, Y6, Y7, Y8, X8)                  // e^x (x clamped)
	VSUBPD      Y14, Y7, Y7                    // e^x - 1

	VCMPPD    $0x11, lanesHalf<>(SB), Y1, Y9   // |x| < ½: the series
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
