//go:build amd64 && !purego

#include "textflag.h"
#include "math_amd64.h"

// e^x and the logistic sigmoid, eight float32 lanes at a time.

// func sexp8(dst, x *float32, n int)
// dst[i] = e^x[i] for n a multiple of 8, eight float32 lanes at a time
// (EXP8); +Inf above 88.72, 0 below -103.97, NaN stays NaN.
// TestExpVectorPath bounds the error at 2 ulp over the whole range.
TEXT ·sexp8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS f32One<>(SB), Y14

exploop:
	UNARY8_HEAD(expdone)
	VMAXPS  expLo<>(SB), Y0, Y1   // clamped into the range (NaN becomes expLo)
	VMINPS  expHi<>(SB), Y1, Y1
	EXP8(Y1, Y2, Y3, Y4, Y5, Y6)
	VCMPPS  $0x1e, expHi<>(SB), Y0, Y7 // x > expHi: +Inf
	VBLENDVPS Y7, expInf<>(SB), Y1, Y1
	VCMPPS  $0x11, expLo<>(SB), Y0, Y7 // x < expLo: 0
	VANDNPS Y1, Y7, Y1
	VCMPPS  $3, Y0, Y0, Y7             // NaN stays NaN
	VBLENDVPS Y7, Y0, Y1, Y1
	UNARY8_NEXT(Y1, exploop)

expdone:
	VZEROUPPER
	RET

// func ssigmoid8(dst, x *float32, n int)
// dst[i] = 1/(1 + e^-x[i]) for n a multiple of 8: with t = e^-|x| (EXP8),
// 1/(1+t) for x >= 0 and t/(1+t) below, so neither side cancels; NaN
// stays NaN. TestSigmoidVectorPath bounds the error at 2 ulp.
TEXT ·ssigmoid8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS f32One<>(SB), Y14

sigloop:
	UNARY8_HEAD(sigdone)
	VORPS   f32Sign<>(SB), Y0, Y1    // -|x|
	VCMPPS  $0x11, expLo<>(SB), Y1, Y8 // e^-|x| rounds to 0 there
	VMAXPS  expLo<>(SB), Y1, Y1
	EXP8(Y1, Y2, Y3, Y4, Y5, Y6)
	VANDNPS Y1, Y8, Y1                // t = e^-|x|
	VADDPS  Y14, Y1, Y2               // 1 + t
	VXORPS  Y7, Y7, Y7
	VCMPPS  $0x1d, Y7, Y0, Y7         // x >= 0
	VBLENDVPS Y7, Y14, Y1, Y3         // numerator: 1 where x >= 0, else t
	VDIVPS  Y2, Y3, Y3
	VCMPPS  $3, Y0, Y0, Y7            // NaN stays NaN
	VBLENDVPS Y7, Y0, Y3, Y3
	UNARY8_NEXT(Y3, sigloop)

sigdone:
	VZEROUPPER
	RET

// func ssigmoid16(dst, x *float32, n int)
// ssigmoid8's method in sixteen AVX-512 lanes, for n a multiple of 16:
// t = e^-|x| (EXP8's steps, its scale in two halves so that t may be
// subnormal), 1/(1+t) for x >= 0 and t/(1+t) below; NaN stays NaN.
TEXT ·ssigmoid16(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VBROADCASTSS f32One<>(SB), Z14
	VPXORD       Z15, Z15, Z15

sig16loop:
	CMPQ    CX, $16
	JL      sig16done
	VMOVUPS (SI), Z0
	VPORD.BCST  f32Sign<>(SB), Z0, Z1          // -|x|
	VCMPPS.BCST $0x11, expLo<>(SB), Z1, K2     // e^-|x| rounds to 0 there
	VMAXPS.BCST expLo<>(SB), Z1, Z1
	EXP16(Z1, Z3, Z4, Z5, Z6)                  // t
	VMOVAPS      Z15, K2, Z1                   // 0 where it rounds to 0
	VADDPS       Z14, Z1, Z2                   // 1 + t
	VCMPPS       $0x1d, Z15, Z0, K3            // x >= 0
	VBLENDMPS    Z14, Z1, K3, Z3               // numerator: 1 where x >= 0, else t
	VDIVPS       Z2, Z3, Z3
	VCMPPS       $3, Z0, Z0, K4                // NaN stays NaN
	VMOVAPS      Z0, K4, Z3
	VMOVUPS      Z3, (DX)
	ADDQ    $64, SI
	ADDQ    $64, DX
	SUBQ    $16, CX
	JMP     sig16loop

sig16done:
	VZEROUPPER
	RET
