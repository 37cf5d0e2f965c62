//go:build amd64 && !purego

#include "textflag.h"
#include "math_amd64.h"

// erf and the standard normal distribution function Φ (for Gelu), eight
// float32 lanes at a time.

// erf: x·S(x²) below 1, 1 - e^(-x²)·B(1/x) from 1 to 3.92 (erf rounds to 1
// in float32 beyond), x's sign. S and B are degree-5 and degree-7 fits
// (least squares reweighted towards the minimax relative error, in
// float64): of erf(x)/x on [0, 1] and of erfc(x)·e^(x²) on [1, 3.92].
CONST8(erfClamp, 0x407ae148) // 3.92
CONST8(erfS0, 0x3f906eba)
CONST8(erfS1, 0xbec0933a)
CONST8(erfS2, 0x3de704a2)
CONST8(erfS3, 0xbcdad1b5)
CONST8(erfS4, 0x3ba12383)
CONST8(erfS5, 0xba13a020)
CONST8(erfB0, 0x39b350ba)
CONST8(erfB1, 0x3f0ecfa0)
CONST8(erfB2, 0x3d4e0ef8)
CONST8(erfB3, 0xbf00eeb9)
CONST8(erfB4, 0x3f124c29)
CONST8(erfB5, 0xbeb2e8e3)
CONST8(erfB6, 0x3df1496e)
CONST8(erfB7, 0xbc8c60e6)

// func serf8(dst, x *float32, n int)
// dst[i] = erf(x[i]) for n a multiple of 8, eight float32 lanes at a time
// by the two pieces above, both computed and blended (e^(-x²) by EXP8);
// ±1 from |x| = 3.92, -0 stays -0, NaN stays NaN. TestErfVectorPath
// bounds the error at 2 ulp.
TEXT ·serf8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS f32One<>(SB), Y14
	VMOVUPS erfClamp<>(SB), Y13

erfloop:
	UNARY8_HEAD(erfdone)
	VANDPS  f32Abs<>(SB), Y0, Y1      // a = |x|

	VMULPS      Y1, Y1, Y3             // z = a²
	VMOVUPS     erfS5<>(SB), Y4
	VFMADD213PS erfS4<>(SB), Y3, Y4
	VFMADD213PS erfS3<>(SB), Y3, Y4
	VFMADD213PS erfS2<>(SB), Y3, Y4
	VFMADD213PS erfS1<>(SB), Y3, Y4
	VFMADD213PS erfS0<>(SB), Y3, Y4
	VMULPS      Y1, Y4, Y4             // small: a·S(z)

	VMINPS      Y1, Y13, Y2            // b = min(3.92, a)
	VDIVPS      Y2, Y14, Y5            // t = 1/b
	VMOVUPS     erfB7<>(SB), Y6
	VFMADD213PS erfB6<>(SB), Y5, Y6
	VFMADD213PS erfB5<>(SB), Y5, Y6
	VFMADD213PS erfB4<>(SB), Y5, Y6
	VFMADD213PS erfB3<>(SB), Y5, Y6
	VFMADD213PS erfB2<>(SB), Y5, Y6
	VFMADD213PS erfB1<>(SB), Y5, Y6
	VFMADD213PS erfB0<>(SB), Y5, Y6    // B(t)
	VMULPS      Y2, Y2, Y7
	VXORPS      f32Sign<>(SB), Y7, Y7 // -b²
	VMAXPS      expLo<>(SB), Y7, Y7    // (NaN becomes expLo; restored below)
	EXP8(Y7, Y8, Y9, Y10, Y11, Y12)
	VMULPS      Y6, Y7, Y7
	VSUBPS      Y7, Y14, Y7            // big: 1 - e^(-b²)·B(t)

	VCMPPS    $1, Y14, Y1, Y8          // a < 1
	VBLENDVPS Y8, Y4, Y7, Y7
	VCMPPS    $0x1d, Y13, Y1, Y8       // a >= 3.92
	VBLENDVPS Y8, Y14, Y7, Y7
	VANDPS    f32Sign<>(SB), Y0, Y8
	VORPS     Y8, Y7, Y7               // x's sign
	VCMPPS    $3, Y0, Y0, Y8           // NaN stays NaN
	VBLENDVPS Y8, Y0, Y7, Y7
	UNARY8_NEXT(Y7, erfloop)

erfdone:
	VZEROUPPER
	RET

// Φ, the standard normal distribution function, for Gelu = x·Φ(x):
// 1/2 + x·P(x²) below |x| = 0.75, and beyond, with q(y) = Φ(-y) for y =
// |x|, q(y) = e^(-y²/2)·R(v), v an affine map onto [-1, 1] of u = 1/(1 +
// y/2) over y in [0.75, 14.2] (Φ(-y) is below float32's least value
// beyond); Φ(x) = q for x < 0 and 1 - q above, so neither tail cancels.
// y² is split exactly in two (h = y², rounded, l = y² - h by FMA) and
// e^(-y²/2) taken as e^(-h/2)·e^(-l/2). P (degree 5 in x²) and R (degree
// 10) are fits like erf's, of (Φ(x) - 1/2)/x and of q(y)·e^(y²/2).
CONST8(phiHalf, 0x3f000000)
CONST8(phiMinusHalf, 0xbf000000)
CONST8(phiSplit, 0x3f400000) // 0.75
CONST8(phiClamp, 0x41633333) // 14.2
CONST8(phiScale, 0x4053fc31) // v = u·scale + shift
CONST8(phiShift, 0xbfb4578e)
CONST8(phiP0, 0x3ecc422a)
CONST8(phiP1, 0xbd882c1c)
CONST8(phiP2, 0x3c236806)
CONST8(phiP3, 0xba9b99bf)
CONST8(phiP4, 0x38f0b550)
CONST8(phiP5, 0xb70cbcc3)
CONST8(phiR0, 0x3e07d585)
CONST8(phiR1, 0x3e0a8a5a)
CONST8(phiR2, 0x3d05e273)
CONST8(phiR3, 0x3a5cedf1)
CONST8(phiR4, 0xbaae0635)
CONST8(phiR5, 0x377446df)
CONST8(phiR6, 0x38be65d9)
CONST8(phiR7, 0xb7801854)
CONST8(phiR8, 0xb6b98b34)
CONST8(phiR9, 0x36106fd3)
CONST8(phiR10, 0x343504b6)

// func sphi8(dst, x *float32, n int)
// dst[i] = Φ(x[i]) for n a multiple of 8, eight float32 lanes at a time,
// by the pieces above; 0 and 1 beyond ±14.2, NaN stays NaN. gelu32Loop
// multiplies by x; TestGeluFloat32 bounds the error.
TEXT ·sphi8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS f32One<>(SB), Y14
	VMOVUPS phiClamp<>(SB), Y13

philoop:
	UNARY8_HEAD(phidone)
	VANDPS  f32Abs<>(SB), Y0, Y1     // a = |x|

	VMULPS      Y1, Y1, Y2            // z = a²
	VMOVUPS     phiP5<>(SB), Y3
	VFMADD213PS phiP4<>(SB), Y2, Y3
	VFMADD213PS phiP3<>(SB), Y2, Y3
	VFMADD213PS phiP2<>(SB), Y2, Y3
	VFMADD213PS phiP1<>(SB), Y2, Y3
	VFMADD213PS phiP0<>(SB), Y2, Y3
	VFMADD213PS phiHalf<>(SB), Y0, Y3 // small: 1/2 + x·P(z)

	VMINPS      Y1, Y13, Y4           // y = min(14.2, a); NaN stays
	VMOVUPS     phiHalf<>(SB), Y5
	VFMADD213PS Y14, Y4, Y5           // 1 + y/2
	VDIVPS      Y5, Y14, Y5           // u
	VMOVUPS     phiScale<>(SB), Y6
	VFMADD213PS phiShift<>(SB), Y5, Y6 // v
	VMOVUPS     phiR10<>(SB), Y7
	VFMADD213PS phiR9<>(SB), Y6, Y7
	VFMADD213PS phiR8<>(SB), Y6, Y7
	VFMADD213PS phiR7<>(SB), Y6, Y7
	VFMADD213PS phiR6<>(SB), Y6, Y7
	VFMADD213PS phiR5<>(SB), Y6, Y7
	VFMADD213PS phiR4<>(SB), Y6, Y7
	VFMADD213PS phiR3<>(SB), Y6, Y7
	VFMADD213PS phiR2<>(SB), Y6, Y7
	VFMADD213PS phiR1<>(SB), Y6, Y7
	VFMADD213PS phiR0<>(SB), Y6, Y7   // R(v)
	VMULPS      Y4, Y4, Y8            // h = y², rounded
	VMOVAPS     Y8, Y9
	VFMSUB231PS Y4, Y4, Y9            // l = y² - h, exactly
	VMULPS      phiMinusHalf<>(SB), Y9, Y9
	VMAXPS      expLo<>(SB), Y9, Y9   // (NaN becomes expLo; restored below)
	EXP8(Y9, Y2, Y5, Y6, Y10, Y11)    // e^(-l/2)
	VMULPS      Y9, Y7, Y7
	VMULPS      phiMinusHalf<>(SB), Y8, Y8
	VMAXPS      expLo<>(SB), Y8, Y8
	EXP8(Y8, Y2, Y5, Y6, Y10, Y11)    // e^(-h/2)
	VMULPS      Y8, Y7, Y7            // q = Φ(-y)
	VCMPPS      $0x1d, Y13, Y1, Y12   // a >= 14.2: q = 0
	VANDNPS     Y7, Y12, Y7

	VSUBPS    Y7, Y14, Y10            // 1 - q
	VXORPS    Y11, Y11, Y11
	VCMPPS    $1, Y11, Y0, Y12        // x < 0
	VBLENDVPS Y12, Y7, Y10, Y10
	VCMPPS    $1, phiSplit<>(SB), Y1, Y12 // a < 0.75
	VBLENDVPS Y12, Y3, Y10, Y10
	VCMPPS    $3, Y0, Y0, Y12         // NaN stays NaN
	VBLENDVPS Y12, Y0, Y10, Y10
	UNARY8_NEXT(Y10, philoop)

phidone:
	VZEROUPPER
	RET
