//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// log(1 + x), log₂ x and log₁₀ x of float32, four lanes at a time in
// float64.

CONST4(log1pAbs, 0x7fffffffffffffff)
CONST4(log1pOne, 0x3ff0000000000000)
CONST4(log1pMinusOne, 0xbff0000000000000)
CONST4(log1pInf, 0x7ff0000000000000)
CONST4(log1pTiny, 0x3e20000000000000)  // 2^-29
CONST4(log1pMant, 0x000fffffffffffff)
CONST4(log1pSqrt2, 0x3ff6a09e667f3bcd)
CONST4(log1pHalf, 0x3fe0000000000000)
CONST4(log1pBias, 0x00000000000003ff)  // 1023
CONST4(log1pLn2, 0x3fe62e42fefa39ef)
CONST4(log1pMagic, 0x4338000000000000) // 1.5·2^52: int64 to float64 by an add
CONST4(log1pInvLn2, 0x3ff71547652b82fe)
CONST4(log1pInvLn10, 0x3fdbcb7b1526e50d)
CONST4(log1pLog10of2, 0x3fd34413509f79ff)
CONST4(log1pC1, 0x3fd5555555555555)    // 1/3
CONST4(log1pC2, 0x3fc999999999999a)    // 1/5
CONST4(log1pC3, 0x3fc2492492492492)    // 1/7
CONST4(log1pC4, 0x3fbc71c71c71c71c)    // 1/9
CONST4(log1pC5, 0x3fb745d1745d1746)    // 1/11
CONST4(log1pC6, 0x3fb3b13b13b13b14)    // 1/13
CONST4(log1pC7, 0x3fb1111111111111)    // 1/15
CONST4(log1pC8, 0x3fae1e1e1e1e1e1e)    // 1/17

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
	VMOVUPD log1pOne<>(SB), Y14

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
	VPSRLQ  $52, Y1, Y2
	VPSUBQ  log1pBias<>(SB), Y2, Y2            // e (u is normal and positive)
	VANDPD  log1pMant<>(SB), Y1, Y3
	VORPD   Y14, Y3, Y3                        // m in [1, 2)
	VCMPPD  $0x1e, log1pSqrt2<>(SB), Y3, Y4    // m > √2
	VMULPD  log1pHalf<>(SB), Y3, Y5
	VBLENDVPD Y4, Y5, Y3, Y3                   // m in [√½, √2)
	VPSUBQ  Y4, Y2, Y2                         // e + 1 there (the mask is -1)
	VPADDQ  log1pMagic<>(SB), Y2, Y2
	VSUBPD  log1pMagic<>(SB), Y2, Y2           // e as float64
	VSUBPD  Y14, Y3, Y5                        // m - 1
	VADDPD  Y14, Y3, Y6
	VDIVPD  Y6, Y5, Y5                         // s
	VMULPD  Y5, Y5, Y6                         // z = s²
	VMOVUPD log1pC8<>(SB), Y7
	VFMADD213PD log1pC7<>(SB), Y6, Y7
	VFMADD213PD log1pC6<>(SB), Y6, Y7
	VFMADD213PD log1pC5<>(SB), Y6, Y7
	VFMADD213PD log1pC4<>(SB), Y6, Y7
	VFMADD213PD log1pC3<>(SB), Y6, Y7
	VFMADD213PD log1pC2<>(SB), Y6, Y7
	VFMADD213PD log1pC1<>(SB), Y6, Y7
	VADDPD  Y5, Y5, Y8                         // 2s
	VMULPD  Y8, Y6, Y6                         // 2s·z
	VFMADD213PD Y8, Y6, Y7                     // ln m
	CMPQ    R8, $1
	JEQ     log2of
	JGT     log10of
	VFMADD231PD log1pLn2<>(SB), Y2, Y7         // + e·ln 2
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
