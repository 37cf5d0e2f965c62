//go:build amd64 && !purego

#include "textflag.h"
#include "math_amd64.h"

// tanh in eight (AVX2) and sixteen (AVX-512) float32 lanes.

CONST8(tanhClamp, 0x4111999a) // 9.1: tanh rounds to 1 in float32 from 9.01
CONST8(tanhSmall, 0x3f0ccccd) // 0.55: the polynomial below, exp above
// P(z), tanh(x) ≈ x + x³ P(x²) on [0, 0.55]: a degree-4 fit minimising the
// relative error (0.75 ulp in float32 arithmetic).
CONST8(tanhP0, 0xbeaaaaa6)
CONST8(tanhP1, 0x3e0886a7)
CONST8(tanhP2, 0xbd5c970a)
CONST8(tanhP3, 0x3cacb335)
CONST8(tanhP4, 0xbbce0328)

// func stanh8(dst, x *float32, n int)
// dst[i] = tanh(x[i]) for n a multiple of 8, eight lanes of float32 at a
// time: x + x³ P(x²) where |x| < 0.55, else 1 - 2/(e^(2a) + 1) with a =
// min(|x|, 9.1) and x's sign, e^y as 2^k times the degree-7 Taylor polynomial
// of e^r (y = k ln2 + r, |r| <= ln2/2, ln 2 in two parts). Beyond 0.55 the
// result is at least 0.5, so 1 - q loses no bits; TestTanhVectorPath bounds
// the error at 2 ulp. NaN passes through both branches.
TEXT ·stanh8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS f32One<>(SB), Y14
	VMOVUPS tanhClamp<>(SB), Y13

loop:
	UNARY8_HEAD(done)
	VANDPS  f32Abs<>(SB), Y0, Y1         // |x|
	VMINPS  Y1, Y13, Y2                   // a = min(9.1, |x|); NaN stays (second operand)
	VADDPS  Y2, Y2, Y2                    // y = 2a
	EXP8(Y2, Y3, Y4, Y5, Y6, Y7)          // e = e^y
	VADDPS  Y14, Y2, Y4                   // e + 1
	VMOVUPS f32Two<>(SB), Y6
	VDIVPS  Y4, Y6, Y6                    // q = 2/(e+1)
	VSUBPS  Y6, Y14, Y6                   // t = 1 - q

	VMULPS      Y0, Y0, Y8                // z = x²
	VMOVUPS     tanhP4<>(SB), Y9
	VFMADD213PS tanhP3<>(SB), Y8, Y9
	VFMADD213PS tanhP2<>(SB), Y8, Y9
	VFMADD213PS tanhP1<>(SB), Y8, Y9
	VFMADD213PS tanhP0<>(SB), Y8, Y9      // P(z)
	VMULPS      Y8, Y0, Y10               // x³
	VFMADD213PS Y0, Y10, Y9               // x + x³ P(z)
	VCMPPS      $1, tanhSmall<>(SB), Y1, Y11
	VBLENDVPS   Y11, Y9, Y6, Y6           // the polynomial where |x| < 0.55
	VANDPS      f32Sign<>(SB), Y0, Y7
	VORPS       Y7, Y6, Y6                // x's sign (-0 stays -0)

	UNARY8_NEXT(Y6, loop)

done:
	VZEROUPPER
	RET

// func stanh16(dst, x *float32, n int)
// stanh8's method in sixteen AVX-512 lanes, for n a multiple of 16: the
// same constants (broadcast from memory), opmask compares and blends. On a
// core that splits 512-bit operations in two (Zen 4), each instruction's
// halves are independent work, which hides more of the long dependency
// chain than eight lanes do.
TEXT ·stanh16(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VBROADCASTSS f32One<>(SB), Z14
	VBROADCASTSS tanhClamp<>(SB), Z13

loop16:
	CMPQ    CX, $16
	JL      done16
	VMOVUPS (SI), Z0
	VPANDD.BCST f32Abs<>(SB), Z0, Z1
	VMINPS  Z1, Z13, Z2
	VADDPS  Z2, Z2, Z2
	EXP16(Z2, Z3, Z4, Z5, Z7)              // e = e^y
	VADDPS       Z14, Z2, Z4
	VBROADCASTSS f32Two<>(SB), Z6
	VDIVPS       Z4, Z6, Z6
	VSUBPS       Z6, Z14, Z6

	VMULPS       Z0, Z0, Z8
	VBROADCASTSS tanhP4<>(SB), Z9
	VFMADD213PS.BCST tanhP3<>(SB), Z8, Z9
	VFMADD213PS.BCST tanhP2<>(SB), Z8, Z9
	VFMADD213PS.BCST tanhP1<>(SB), Z8, Z9
	VFMADD213PS.BCST tanhP0<>(SB), Z8, Z9
	VMULPS       Z8, Z0, Z10
	VFMADD213PS  Z0, Z10, Z9
	VCMPPS.BCST  $1, tanhSmall<>(SB), Z1, K1
	VBLENDMPS    Z9, Z6, K1, Z6
	VPANDD.BCST  f32Sign<>(SB), Z0, Z7
	VPORD        Z7, Z6, Z6

	VMOVUPS Z6, (DX)
	ADDQ    $64, SI
	ADDQ    $64, DX
	SUBQ    $16, CX
	JMP     loop16

done16:
	VZEROUPPER
	RET
