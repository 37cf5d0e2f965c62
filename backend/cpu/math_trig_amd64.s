//go:build amd64 && !purego

#include "textflag.h"
#include "math_lanes64_amd64.h"

// Sine, cosine and tangent of float32, four lanes at a time in float64
// (AVX2 and FMA): the float64 results are within about 2⁻⁵⁰ of the true
// values, so each rounds to the float32 that float32(math.Sin(x)) gives
// but where the true value lies within that of a rounding boundary.

CONST4(trigAbs, 0x7fffffffffffffff)
CONST4(trigLimit, 0x41b0000000000000) // 2^28: from there the caller reduces (Payne and Hanek's)
CONST4(trigTwoOverPi, 0x3fe45f306dc9c883)
CONST4(trigPio2A, 0x3ff921fb54442d18) // π/2 = A + B + C
CONST4(trigPio2B, 0x3c91a62633145c07)
CONST4(trigPio2C, 0xb91f1976b7ed8fbc)
CONST4(trigOne, 0x3ff0000000000000)
CONST4(trigS3, 0xbfc5555555555555)    // -1/3!
CONST4(trigS5, 0x3f81111111111111)    // 1/5!
CONST4(trigS7, 0xbf2a01a01a01a01a)    // -1/7!
CONST4(trigS9, 0x3ec71de3a556c734)    // 1/9!
CONST4(trigS11, 0xbe5ae64567f544e4)   // -1/11!
CONST4(trigS13, 0x3de6124613a86d09)   // 1/13!
CONST4(trigC2, 0xbfe0000000000000)    // -1/2!
CONST4(trigC4, 0x3fa5555555555555)    // 1/4!
CONST4(trigC6, 0xbf56c16c16c16c17)    // -1/6!
CONST4(trigC8, 0x3efa01a01a01a01a)    // 1/8!
CONST4(trigC10, 0xbe927e4fb7789f5c)   // -1/10!
CONST4(trigC12, 0x3e21eed8eff8d898)   // 1/12!
CONST4(trigC14, 0xbda93974a8c07c9d)   // -1/14!

// func strig4(dst, x *float32, n, mode int) int
// dst[i] = sin x[i] (mode 0), cos x[i] (1) or tan x[i] (2) for n a
// multiple of 4, four lanes at a time: k = round(x·2/π), r = x - k·π/2 (π/2
// in three parts, by FMA: exact to about 2⁻¹⁰⁰ for |x| < 2²⁸), sin r and
// cos r by their Taylor series to r¹³ and r¹⁴, then the quadrant's (k +
// mode for sin and cos) choice and sign, or sin/cos (-cos/sin for odd k)
// for tan. It stops before the first group holding an |x| ≥ 2²⁸, an
// infinity or NaN, and returns how many it did.
TEXT ·strig4(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DX
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ mode+24(FP), AX
	MOVQ CX, BX
	MOVQ AX, R8
	CMPQ AX, $2
	JNE  trigquad
	XORQ AX, AX       // tan: the quadrant of k alone

trigquad:
	VMOVQ        AX, X15
	VPBROADCASTQ X15, Y15 // the quadrant's offset, in 64-bit lanes
	VMOVUPD      trigOne<>(SB), Y14

trigloop:
	CMPQ      CX, $4
	JL        trigdone
	VCVTPS2PD (SI), Y0
	VMOVAPD   Y0, Y12                       // x, for its zeros' signs
	VANDPD    trigAbs<>(SB), Y0, Y1
	VCMPPD    $0x15, trigLimit<>(SB), Y1, Y2 // |x| ≥ 2^28, or NaN
	VMOVMSKPD Y2, AX
	TESTL     AX, AX
	JNZ       trigdone

	VMULPD       trigTwoOverPi<>(SB), Y0, Y3
	VROUNDPD     $0, Y3, Y3                 // k
	VFNMADD231PD trigPio2A<>(SB), Y3, Y0
	VFNMADD231PD trigPio2B<>(SB), Y3, Y0
	VFNMADD231PD trigPio2C<>(SB), Y3, Y0    // r
	VMULPD       Y0, Y0, Y4                 // z = r²

	VMOVUPD     trigS13<>(SB), Y5           // sin r = r + r·z·(-1/3! + z/5! - ...)
	VFMADD213PD trigS11<>(SB), Y4, Y5
	VFMADD213PD trigS9<>(SB), Y4, Y5
	VFMADD213PD trigS7<>(SB), Y4, Y5
	VFMADD213PD trigS5<>(SB), Y4, Y5
	VFMADD213PD trigS3<>(SB), Y4, Y5
	VMULPD      Y0, Y4, Y6
	VFMADD213PD Y0, Y6, Y5                  // Y5 = sin r

	VMOVUPD     trigC14<>(SB), Y6           // cos r = 1 + z·(-1/2! + z/4! - ...)
	VFMADD213PD trigC12<>(SB), Y4, Y6
	VFMADD213PD trigC10<>(SB), Y4, Y6
	VFMADD213PD trigC8<>(SB), Y4, Y6
	VFMADD213PD trigC6<>(SB), Y4, Y6
	VFMADD213PD trigC4<>(SB), Y4, Y6
	VFMADD213PD trigC2<>(SB), Y4, Y6
	VFMADD213PD Y14, Y4, Y6                 // Y6 = cos r

	VCVTPD2DQY   Y3, X7
	VPMOVSXDQ    X7, Y7
	VPADDQ       Y15, Y7, Y7                // q = k + the offset
	VPSLLQ       $63, Y7, Y8                // q odd, in the sign bits
	CMPQ         R8, $2
	JEQ          trigtan
	VBLENDVPD    Y8, Y6, Y5, Y9             // odd q: cos r, else sin r
	VPSRLQ       $1, Y7, Y10
	VPSLLQ       $63, Y10, Y10              // q's second bit: the sign
	VXORPD       Y10, Y9, Y9
	JMP          trigstore

trigtan:
	VDIVPD    Y6, Y5, Y9                    // sin r / cos r
	VDIVPD    Y5, Y6, Y10
	VXORPD    Y11, Y11, Y11
	VSUBPD    Y10, Y11, Y10                 // -cos r / sin r
	VBLENDVPD Y8, Y10, Y9, Y9

trigstore:
	CMPQ       R8, $1
	JEQ        trigpack
	VXORPD     Y11, Y11, Y11
	VCMPPD     $0, Y11, Y12, Y13            // sin ±0 and tan ±0 are ±0
	VBLENDVPD  Y13, Y12, Y9, Y9

trigpack:
	VCVTPD2PSY Y9, X9
	VMOVUPS    X9, (DX)
	ADDQ       $16, SI
	ADDQ       $16, DX
	SUBQ       $4, CX
	JMP        trigloop

trigdone:
	SUBQ CX, BX
	MOVQ BX, ret+32(FP)
	VZEROUPPER
	RET
