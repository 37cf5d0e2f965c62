//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// log(1 + e^x) of float32, four lanes at a time in float64.

CONST4(spAbs, 0x7fffffffffffffff)
CONST4(spInf, 0x7ff0000000000000)
CONST4(spLo, 0xc05b800000000000)     // -110: below, e^t is far below float32's range

// func ssoftplus4(dst, x *float32, n int) int
// dst[i] = log(1 + e^x[i]) for n a multiple of 4, four lanes at a time,
// as max(x, 0) + log1p(e^-|x|): e = e^t, t = -|x| (from -110 on), by 2^k·e^r
// (r = t - k·ln 2, its series to r¹¹); log1p(e) as ln u·e/(u - 1), u = 1 +
// e (e where u is 1), ln u by its series in s = (m-1)/(m+1) to s¹⁷. It
// stops before the first group holding an infinity or NaN and returns
// how many it did.
TEXT ·ssoftplus4(SB), NOSPLIT, $0-32
	LANES64_ARGS
	VMOVUPD lanesOne<>(SB), Y14

sploop:
	LANES64_HEAD(spdone)
	VANDPD  spAbs<>(SB), Y0, Y1
	VCMPPD  $0x15, spInf<>(SB), Y1, Y2         // ±Inf, or NaN
	LANES64_STOP(Y2, spdone)

	VXORPD  Y2, Y2, Y2
	VSUBPD  Y1, Y2, Y1                         // t = -|x|
	VMAXPD  spLo<>(SB), Y1, Y1
	EXP64(Y1, Y3, Y4, Y5, X5)                  // e = e^t, in (0, 1]
	VADDPD  Y14, Y4, Y1                        // u = 1 + e, in [1, 2]
	LN64(Y1, Y2, Y3, Y5, Y6, Y8, Y7)           // ln m, and u's exponent in Y2
	VFMADD231PD lanesLn2<>(SB), Y2, Y7         // ln u
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
