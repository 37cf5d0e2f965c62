//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// The arctangent of float32, four lanes at a time in float64.

CONST4(atanAbs, 0x7fffffffffffffff)
CONST4(atanSign, 0x8000000000000000)
CONST4(atanOne, 0x3ff0000000000000)
CONST4(atanTanPi8, 0x3fda827999fcef34) // tan(π/8) = √2 - 1
CONST4(atanPi4, 0x3fe921fb54442d18)
CONST4(atanPi2Hi, 0x3ff921fb54442d18)  // π/2 = hi + lo
CONST4(atanPi2Lo, 0x3c91a62633145c07)
CONST4(atanC1, 0xbfd5555555555555)  // -1/3
CONST4(atanC2, 0x3fc999999999999a)  // 1/5
CONST4(atanC3, 0xbfc2492492492492)  // -1/7
CONST4(atanC4, 0x3fbc71c71c71c71c)  // 1/9
CONST4(atanC5, 0xbfb745d1745d1746)  // -1/11
CONST4(atanC6, 0x3fb3b13b13b13b14)  // 1/13
CONST4(atanC7, 0xbfb1111111111111)  // -1/15
CONST4(atanC8, 0x3fae1e1e1e1e1e1e)  // 1/17
CONST4(atanC9, 0xbfaaf286bca1af28)  // -1/19
CONST4(atanC10, 0x3fa8618618618618) // 1/21
CONST4(atanC11, 0xbfa642c8590b2164) // -1/23
CONST4(atanC12, 0x3fa47ae147ae147b) // 1/25
CONST4(atanC13, 0xbfa2f684bda12f68) // -1/27
CONST4(atanC14, 0x3fa1a7b9611a7b96) // 1/29
CONST4(atanC15, 0xbfa0842108421084) // -1/31
CONST4(atanC16, 0x3f9f07c1f07c1f08) // 1/33

// func satan4(dst, x *float32, n int) int
// dst[i] = atan x[i] for n a multiple of 4, four lanes at a time: a = |x|,
// t = a or 1/a past 1, v = t or (t-1)/(t+1) past tan(π/8), atan v = v +
// v·v²·(-1/3 + v²/5 - ...) to v³³ (|v| ≤ 0.4143: the rest below 2⁻⁵⁰),
// then π/4 + and π/2 - where reduced, and x's sign (±0 kept). It stops
// before the first group holding a NaN and returns how many it did.
TEXT ·satan4(SB), NOSPLIT, $0-32
	LANES64_ARGS
	VMOVUPD atanOne<>(SB), Y14

atanloop:
	LANES64_HEAD(atandone)
	VCMPPD $3, Y0, Y0, Y1                      // NaN
	LANES64_STOP(Y1, atandone)
	VANDPD  atanAbs<>(SB), Y0, Y1               // a
	VCMPPD  $0x1e, Y14, Y1, Y2                  // a > 1
	VDIVPD  Y1, Y14, Y3
	VBLENDVPD Y2, Y3, Y1, Y3                    // t
	VCMPPD  $0x1e, atanTanPi8<>(SB), Y3, Y4     // t > tan(π/8)
	VSUBPD  Y14, Y3, Y5
	VADDPD  Y14, Y3, Y6
	VDIVPD  Y6, Y5, Y5
	VBLENDVPD Y4, Y5, Y3, Y3                    // v
	VMULPD  Y3, Y3, Y5                          // z = v²
	VMOVUPD atanC16<>(SB), Y6
	VFMADD213PD atanC15<>(SB), Y5, Y6
	VFMADD213PD atanC14<>(SB), Y5, Y6
	VFMADD213PD atanC13<>(SB), Y5, Y6
	VFMADD213PD atanC12<>(SB), Y5, Y6
	VFMADD213PD atanC11<>(SB), Y5, Y6
	VFMADD213PD atanC10<>(SB), Y5, Y6
	VFMADD213PD atanC9<>(SB), Y5, Y6
	VFMADD213PD atanC8<>(SB), Y5, Y6
	VFMADD213PD atanC7<>(SB), Y5, Y6
	VFMADD213PD atanC6<>(SB), Y5, Y6
	VFMADD213PD atanC5<>(SB), Y5, Y6
	VFMADD213PD atanC4<>(SB), Y5, Y6
	VFMADD213PD atanC3<>(SB), Y5, Y6
	VFMADD213PD atanC2<>(SB), Y5, Y6
	VFMADD213PD atanC1<>(SB), Y5, Y6
	VMULPD  Y3, Y5, Y7
	VFMADD213PD Y3, Y7, Y6                      // atan v
	VADDPD  atanPi4<>(SB), Y6, Y7
	VBLENDVPD Y4, Y7, Y6, Y6                    // + π/4 where reduced
	VMOVUPD atanPi2Hi<>(SB), Y7
	VSUBPD  Y6, Y7, Y7
	VADDPD  atanPi2Lo<>(SB), Y7, Y7
	VBLENDVPD Y2, Y7, Y6, Y6                    // π/2 - that past 1
	VANDPD  atanSign<>(SB), Y0, Y7
	VORPD   Y7, Y6, Y6                          // x's sign
	LANES64_NEXT(Y6, X6, atanloop)

atandone:
	SUBQ CX, BX
	MOVQ BX, ret+24(FP)
	VZEROUPPER
	RET
