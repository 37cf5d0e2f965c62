//go:build amd64 && !purego

#include "textflag.h"

// Constants, each four float64 (or int64) copies for one YMM operand.
#define CONST4(name, bits) \
	DATA name<>+0(SB)/8, $bits; DATA name<>+8(SB)/8, $bits; \
	DATA name<>+16(SB)/8, $bits; DATA name<>+24(SB)/8, $bits; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

CONST4(tanhAbs, 0x7fffffffffffffff)
CONST4(tanhSign, 0x8000000000000000)
CONST4(tanhM2, 0xc000000000000000)    // -2
CONST4(tanhLog2e, 0x3ff71547652b82fe) // 1/ln 2
CONST4(tanhLn2, 0x3fe62e42fefa39ef)   // ln 2
CONST4(tanhClamp, 0x4022333333333333) // 9.1: tanh is 1 in float32 beyond
CONST4(tanhSmall, 0x3fb0000000000000) // 0.0625: the series below
CONST4(tanhOne, 0x3ff0000000000000)
CONST4(tanhC2, 0x3fe0000000000000)    // 1/2!
CONST4(tanhC3, 0x3fc5555555555555)    // 1/3!
CONST4(tanhC4, 0x3fa5555555555555)    // 1/4!
CONST4(tanhC5, 0x3f81111111111111)    // 1/5!
CONST4(tanhC6, 0x3f56c16c16c16c17)    // 1/6!
CONST4(tanhC7, 0x3f2a01a01a01a01a)    // 1/7!
CONST4(tanhT3, 0xbfd5555555555555)    // -1/3
CONST4(tanhT5, 0x3fc1111111111111)    // 2/15
CONST4(tanhT7, 0xbfaba1ba1ba1ba1c)    // -17/315
CONST4(tanhBias, 0x00000000000003ff)  // 1023, the float64 exponent bias

// func stanh4(dst, x *float32, n int)
// dst[i] = tanh(x[i]) for n a multiple of 4, four at a time in float64:
// e = e^(-2 min(|x|, 9.1)) as 2^k times the degree-7 Taylor polynomial of
// e^r (|r| <= ln2/2), t = (1-e)/(1+e) with x's sign; x (1 + z(-1/3 +
// z(2/15 - 17/315 z))), z = x², where |x| < 0.0625; NaN passes through.
// The same method as tanh32Loop's scalar code, so both are within 1 ulp.
TEXT ·stanh4(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DX
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

loop:
	CMPQ CX, $4
	JL   done
	VCVTPS2PD (SI), Y0                  // x
	VANDPD    tanhAbs<>(SB), Y0, Y1     // a = |x|
	VMINPD    tanhClamp<>(SB), Y1, Y1   // a = min(a, 9.1)
	VMULPD    tanhM2<>(SB), Y1, Y2      // y = -2a
	VMULPD    tanhLog2e<>(SB), Y2, Y3
	VROUNDPD  $0, Y3, Y3                // k = round(y / ln2)
	VFNMADD231PD tanhLn2<>(SB), Y3, Y2  // r = y - k ln2

	VMOVUPD     tanhC7<>(SB), Y4
	VFMADD213PD tanhC6<>(SB), Y2, Y4
	VFMADD213PD tanhC5<>(SB), Y2, Y4
	VFMADD213PD tanhC4<>(SB), Y2, Y4
	VFMADD213PD tanhC3<>(SB), Y2, Y4
	VFMADD213PD tanhC2<>(SB), Y2, Y4
	VFMADD213PD tanhOne<>(SB), Y2, Y4
	VFMADD213PD tanhOne<>(SB), Y2, Y4   // e^r

	VCVTPD2DQY Y3, X5                   // 2^k from k's bits
	VPMOVSXDQ  X5, Y5
	VPADDQ     tanhBias<>(SB), Y5, Y5
	VPSLLQ     $52, Y5, Y5
	VMULPD     Y5, Y4, Y4               // e

	VADDPD  tanhOne<>(SB), Y4, Y6       // 1 + e
	VMOVUPD tanhOne<>(SB), Y7
	VSUBPD  Y4, Y7, Y7                  // 1 - e
	VDIVPD  Y6, Y7, Y7                  // t
	VANDPD  tanhSign<>(SB), Y0, Y8
	VORPD   Y8, Y7, Y7                  // with x's sign

	VMULPD      Y0, Y0, Y9              // z = x²
	VMOVUPD     tanhT7<>(SB), Y10
	VFMADD213PD tanhT5<>(SB), Y9, Y10
	VFMADD213PD tanhT3<>(SB), Y9, Y10
	VFMADD213PD tanhOne<>(SB), Y9, Y10
	VMULPD      Y0, Y10, Y10            // the series
	VCMPPD      $1, tanhSmall<>(SB), Y1, Y11
	VBLENDVPD   Y11, Y10, Y7, Y7        // series where |x| < 0.0625
	VCMPPD      $3, Y0, Y0, Y12
	VBLENDVPD   Y12, Y0, Y7, Y7         // NaN stays NaN

	VCVTPD2PSY Y7, X7
	VMOVUPS    X7, (DX)
	ADDQ       $16, SI
	ADDQ       $16, DX
	SUBQ       $4, CX
	JMP        loop

done:
	VZEROUPPER
	RET
