//go:build amd64 && !purego

#include "textflag.h"
#include "math_amd64.h"

// The natural logarithm, eight float32 lanes at a time.

CONST8(logMinNorm, 0x00800000) // the smallest normal float32
CONST8(logTwo23, 0x4b000000)   // 2^23
CONST8(logSqrt2, 0x3fb504f3)
CONST8(logMant, 0x007fffff)
CONST8(logInf, 0x7f800000)
CONST8(logNegInf, 0xff800000)
CONST8(logNaN, 0x7fc00000)
CONST8(logC3, 0x3eaaaaab) // 1/3
CONST8(logC5, 0x3e4ccccd) // 1/5
CONST8(logC7, 0x3e124925) // 1/7
CONST8(logC9, 0x3de38e39) // 1/9
CONST8(logHalf, 0x3f000000)
CONST8(log23, 0x00000017) // 23
CONST8(log127, 0x0000007f)

// func slog8(dst, x *float32, n int)
// dst[i] = ln x[i] for n a multiple of 8, eight float32 lanes at a time:
// x = 2^e m with m in [sqrt(1/2), sqrt(2)) (denormals scaled by 2^23
// first), ln m = 2 atanh(s) with s = (m-1)/(m+1), |s| <= 0.172, by its odd
// series to s^9, and e ln 2 added in two parts. 0 gives -Inf, +Inf gives
// +Inf, negative numbers and NaN give NaN. TestLogVectorPath bounds the
// error at 2 ulp.
TEXT ·slog8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS f32One<>(SB), Y14

logloop:
	UNARY8_HEAD(logdone)
	VCMPPS  $0x11, logMinNorm<>(SB), Y0, Y1 // x < smallest normal (denormal, 0 or negative)
	VMULPS  logTwo23<>(SB), Y0, Y2
	VBLENDVPS Y1, Y2, Y0, Y2              // x, denormals scaled by 2^23
	VANDPS  log23<>(SB), Y1, Y3           // 23 where scaled (integer lanes)
	VPSRLD  $23, Y2, Y4
	VPSUBD  log127<>(SB), Y4, Y4
	VPSUBD  Y3, Y4, Y4                    // e
	VANDPS  logMant<>(SB), Y2, Y5
	VORPS   Y14, Y5, Y5                   // m in [1, 2)
	VCMPPS  $0x1e, logSqrt2<>(SB), Y5, Y6  // m > sqrt 2
	VMULPS  logHalf<>(SB), Y5, Y7
	VBLENDVPS Y6, Y7, Y5, Y5              // m in [sqrt(1/2), sqrt 2)
	VPSUBD  Y6, Y4, Y4                    // e + 1 there (the mask is -1)
	VCVTDQ2PS Y4, Y4                      // e as float
	VSUBPS  Y14, Y5, Y6                   // m - 1
	VADDPS  Y14, Y5, Y7                   // m + 1
	VDIVPS  Y7, Y6, Y6                    // s
	VMULPS  Y6, Y6, Y7                    // s²
	VMOVUPS logC9<>(SB), Y8
	VFMADD213PS logC7<>(SB), Y7, Y8
	VFMADD213PS logC5<>(SB), Y7, Y8
	VFMADD213PS logC3<>(SB), Y7, Y8
	VMULPS  Y7, Y8, Y8                    // s²(1/3 + s²/5 + ...)
	VADDPS  Y6, Y6, Y9                    // 2s
	VMULPS  Y9, Y8, Y8
	VADDPS  Y9, Y8, Y8                    // ln m = 2s + 2s·s²(...)
	VFMADD231PS expLn2Lo<>(SB), Y4, Y8   // + e ln2 (low part first)
	VFMADD231PS expLn2Hi<>(SB), Y4, Y8

	VXORPS  Y10, Y10, Y10
	VCMPPS  $0, Y10, Y0, Y11              // x == 0: -Inf
	VBLENDVPS Y11, logNegInf<>(SB), Y8, Y8
	VCMPPS  $0, logInf<>(SB), Y0, Y11     // x == +Inf: +Inf
	VBLENDVPS Y11, logInf<>(SB), Y8, Y8
	VCMPPS  $0x11, Y10, Y0, Y11           // x < 0: NaN
	VBLENDVPS Y11, logNaN<>(SB), Y8, Y8
	VCMPPS  $3, Y0, Y0, Y11               // NaN stays NaN
	VBLENDVPS Y11, Y0, Y8, Y8
	UNARY8_NEXT(Y8, logloop)

logdone:
	VZEROUPPER
	RET
