//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// log(1 + x), log₂ x and log₁₀ x of float32, four lanes at a time in
// float64.

CONST4(log1pAbs, 0x7fffffffffffffff)
CONST4(log1pMinusOne, 0xbff0000000000000)
CONST4(log1pInf, 0x7ff0000000000000)
CONST4(log1pTiny, 0x3e20000000000000)  // 2^-29
CONST4(log1pInvLn2, 0x3ff71547652b82fe)
CONST4(log1pInvLn10, 0x3fdbcb7b1526e50d)
CONST4(log1pLog10of2, 0x3fd34413509f79ff)

// func slogs4(dst, x *float32, n, mode int) int
// dst[i] = log(1 + x[i]) (mode 0), log₂ x[i] (1) or log₁₀ x[i] (2) for n
// a multiple of 4, four lanes at a time. u = 1 + x (mode 0: exact in
// float64 for a float32 x of 2⁻²⁹ or more; below, the result is x) or x
// (a float32 subnormal is a float64 normal); u = 2^e·m, m in [√½, √2),
// ln m = 2s + 2s·s²·(1/3 + s²/5 + ...) to s¹⁷, s = (m-1)/(m+1) (m - 1
// exact); then e·ln 2 + ln m, e + ln m/ln 2 (exact at the powers of 2)
// or e·log₁₀ 2 + ln m/ln 10. It stops before the first group holding an x
// outside the open domain (-1 or less for log1p, 0 or less for the
// others), +Inf or NaN, and returns how many it did.
TEXT ·slogs4(SB), NOSPLIT, $0-40
	LANES64_ARGS
	MOVQ    mode+24(FP), R8
	VMOVUPD lanesOne<>(SB), Y14

log1ploop:
	LANES64_HEAD(log1pdone)
	VCMPPD  $0, log1pInf<>(SB), Y0, Y2         // +Inf
	CMPQ    R8, $0
	JNE     logbase
	VCMPPD  $0x1a, log1pMinusOne<>(SB), Y0, Y1 // not x > -1 (NaN too)
	VORPD   Y2, Y1, Y1
	LANES64_STOP(Y1, log1pdone)
	VADDPD  Y14, Y0, Y1                        // u = 1 + x
	JMP     logparts

logbase:
	VXORPD  Y1, Y1, Y1
	VCMPPD  $0x1a, Y1, Y0, Y1                  // not x > 0 (NaN too)
	VORPD   Y2, Y1, Y1
	LANES64_STOP(Y1, log1pdone)
	VMOVAPD Y0, Y1                             // u = x

logparts:
	LN64(Y1, Y2, Y3, Y5, Y6, Y8, Y7)           // ln m, and u's exponent in Y2
	CMPQ    R8, $1
	JEQ     log2of
	JGT     log10of
	VFMADD231PD lanesLn2<>(SB), Y2, Y7        // + e·ln 2
	VANDPD  log1pAbs<>(SB), Y0, Y8
	VCMPPD  $0x11, log1pTiny<>(SB), Y8, Y8     // |x| < 2^-29: x
	VBLENDVPD Y8, Y0, Y7, Y7
	LANES64_NEXT(Y7, X7, log1ploop)

log2of:
	VFMADD231PD log1pInvLn2<>(SB), Y7, Y2      // e + ln m/ln 2
	LANES64_NEXT(Y2, X2, log1ploop)

log10of:
	VMULPD  log1pLog10of2<>(SB), Y2, Y2
	VFMADD231PD log1pInvLn10<>(SB), Y7, Y2     // e·log₁₀ 2 + ln m/ln 10
	LANES64_NEXT(Y2, X2, log1ploop)

log1pdone:
	SUBQ CX, BX
	MOVQ BX, ret+32(FP)
	VZEROUPPER
	RET
