//go:build amd64 && !purego

#include "textflag.h"

// Constants, each eight float32 (or int32) copies for one YMM operand.
#define CONST8(name, bits) \
	DATA name<>+0(SB)/4, $bits; DATA name<>+4(SB)/4, $bits; \
	DATA name<>+8(SB)/4, $bits; DATA name<>+12(SB)/4, $bits; \
	DATA name<>+16(SB)/4, $bits; DATA name<>+20(SB)/4, $bits; \
	DATA name<>+24(SB)/4, $bits; DATA name<>+28(SB)/4, $bits; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

CONST8(tanhAbs, 0x7fffffff)
CONST8(tanhSign, 0x80000000)
CONST8(tanhClamp, 0x4111999a) // 9.1: tanh rounds to 1 in float32 from 9.01
CONST8(tanhSmall, 0x3f0ccccd) // 0.55: the polynomial below, exp above
CONST8(tanhOne, 0x3f800000)
CONST8(tanhTwo, 0x40000000)
CONST8(tanhLog2e, 0x3fb8aa3b) // 1/ln 2
CONST8(tanhLn2Hi, 0x3f318000) // ln 2 = hi + lo, hi with 9 significant bits
CONST8(tanhLn2Lo, 0xb95e8083)
CONST8(tanhE2, 0x3f000000)    // 1/2!
CONST8(tanhE3, 0x3e2aaaab)    // 1/3!
CONST8(tanhE4, 0x3d2aaaab)    // 1/4!
CONST8(tanhE5, 0x3c088889)    // 1/5!
CONST8(tanhE6, 0x3ab60b61)    // 1/6!
CONST8(tanhE7, 0x39500d01)    // 1/7!
// P(z), tanh(x) ≈ x + x³ P(x²) on [0, 0.55]: a degree-4 fit minimising the
// relative error (0.75 ulp in float32 arithmetic).
CONST8(tanhP0, 0xbeaaaaa6)
CONST8(tanhP1, 0x3e0886a7)
CONST8(tanhP2, 0xbd5c970a)
CONST8(tanhP3, 0x3cacb335)
CONST8(tanhP4, 0xbbce0328)

CONST8(expLo, 0xc2cff1b5)   // -103.97282: e^x rounds to 0 below
CONST8(expHi, 0x42b17218)   // 88.72284: e^x overflows above
CONST8(expInf, 0x7f800000)
CONST8(expBias, 0x0000007f) // 127, the float32 exponent bias

// EXP8(X, T1..T5): X = e^X for eight float32 lanes within [expLo, expHi]
// (the caller deals with the rest): k = round(x/ln2), r = x - k ln2 (ln 2
// in two parts), e^r by its degree-7 Taylor polynomial, then 2^k applied
// as 2^(k>>1) times 2^(k-(k>>1)) so that results in the denormal range
// (k down to -150) and up to k = 128 round once, correctly. Y14 must hold
// 1.0. Clobbers T1..T5.
#define EXP8(X, T1, T2, T3, T4, T5) \
	VMULPS       tanhLog2e<>(SB), X, T1; \
	VROUNDPS     $0, T1, T1; \
	VFNMADD231PS tanhLn2Hi<>(SB), T1, X; \
	VFNMADD231PS tanhLn2Lo<>(SB), T1, X; \
	VMOVUPS      tanhE7<>(SB), T2; \
	VFMADD213PS  tanhE6<>(SB), X, T2; \
	VFMADD213PS  tanhE5<>(SB), X, T2; \
	VFMADD213PS  tanhE4<>(SB), X, T2; \
	VFMADD213PS  tanhE3<>(SB), X, T2; \
	VFMADD213PS  tanhE2<>(SB), X, T2; \
	VFMADD213PS  Y14, X, T2; \
	VFMADD213PS  Y14, X, T2; \
	VCVTPS2DQ    T1, T1; \
	VPSRAD       $1, T1, T3; \
	VPSUBD       T3, T1, T4; \
	VPADDD       expBias<>(SB), T3, T3; \
	VPSLLD       $23, T3, T3; \
	VPADDD       expBias<>(SB), T4, T4; \
	VPSLLD       $23, T4, T4; \
	VMULPS       T3, T2, T2; \
	VMULPS       T4, T2, X

// The kernels below share one skeleton (func f(dst, x *float32, n int), n a
// multiple of the lanes): UNARY_ARGS loads dst into DX, x into SI and n
// into CX; in the eight-lane ones UNARY8_HEAD, under the loop's label,
// leaves for DONE when no lanes are left and loads the next eight x into
// Y0, and UNARY8_NEXT stores the eight results in R and goes back to LOOP.
#define UNARY_ARGS \
	MOVQ dst+0(FP), DX \
	MOVQ x+8(FP), SI   \
	MOVQ n+16(FP), CX

#define UNARY8_HEAD(DONE) \
	CMPQ    CX, $8 \
	JL      DONE   \
	VMOVUPS (SI), Y0

#define UNARY8_NEXT(R, LOOP) \
	VMOVUPS R, (DX) \
	ADDQ    $32, SI \
	ADDQ    $32, DX \
	SUBQ    $8, CX  \
	JMP     LOOP

// func stanh8(dst, x *float32, n int)
// dst[i] = tanh(x[i]) for n a multiple of 8, eight lanes of float32 at a
// time: x + x³ P(x²) where |x| < 0.55, else 1 - 2/(e^(2a) + 1) with a =
// min(|x|, 9.1) and x's sign, e^y as 2^k times the degree-7 Taylor polynomial
// of e^r (y = k ln2 + r, |r| <= ln2/2, ln 2 in two parts). Beyond 0.55 the
// result is at least 0.5, so 1 - q loses no bits; TestTanhVectorPath bounds
// the error at 2 ulp. NaN passes through both branches.
TEXT ·stanh8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS tanhOne<>(SB), Y14
	VMOVUPS tanhClamp<>(SB), Y13

loop:
	UNARY8_HEAD(done)
	VANDPS  tanhAbs<>(SB), Y0, Y1         // |x|
	VMINPS  Y1, Y13, Y2                   // a = min(9.1, |x|); NaN stays (second operand)
	VADDPS  Y2, Y2, Y2                    // y = 2a
	EXP8(Y2, Y3, Y4, Y5, Y6, Y7)          // e = e^y
	VADDPS  Y14, Y2, Y4                   // e + 1
	VMOVUPS tanhTwo<>(SB), Y6
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
	VANDPS      tanhSign<>(SB), Y0, Y7
	VORPS       Y7, Y6, Y6                // x's sign (-0 stays -0)

	UNARY8_NEXT(Y6, loop)

done:
	VZEROUPPER
	RET

// func sexp8(dst, x *float32, n int)
// dst[i] = e^x[i] for n a multiple of 8, eight float32 lanes at a time
// (EXP8); +Inf above 88.72, 0 below -103.97, NaN stays NaN.
// TestExpVectorPath bounds the error at 2 ulp over the whole range.
TEXT ·sexp8(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VMOVUPS tanhOne<>(SB), Y14

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
	VMOVUPS tanhOne<>(SB), Y14

sigloop:
	UNARY8_HEAD(sigdone)
	VORPS   tanhSign<>(SB), Y0, Y1    // -|x|
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

// func stanh16(dst, x *float32, n int)
// stanh8's method in sixteen AVX-512 lanes, for n a multiple of 16: the
// same constants (broadcast from memory), opmask compares and blends. On a
// core that splits 512-bit operations in two (Zen 4), each instruction's
// halves are independent work, which hides more of the long dependency
// chain than eight lanes do.
TEXT ·stanh16(SB), NOSPLIT, $0-24
	UNARY_ARGS
	VBROADCASTSS tanhOne<>(SB), Z14
	VBROADCASTSS tanhClamp<>(SB), Z13

loop16:
	CMPQ    CX, $16
	JL      done16
	VMOVUPS (SI), Z0
	VPANDD.BCST tanhAbs<>(SB), Z0, Z1
	VMINPS  Z1, Z13, Z2
	VADDPS  Z2, Z2, Z2
	VMULPS.BCST tanhLog2e<>(SB), Z2, Z3
	VRNDSCALEPS $0, Z3, Z3
	VFNMADD231PS.BCST tanhLn2Hi<>(SB), Z3, Z2
	VFNMADD231PS.BCST tanhLn2Lo<>(SB), Z3, Z2

	VBROADCASTSS tanhE7<>(SB), Z4
	VFMADD213PS.BCST tanhE6<>(SB), Z2, Z4
	VFMADD213PS.BCST tanhE5<>(SB), Z2, Z4
	VFMADD213PS.BCST tanhE4<>(SB), Z2, Z4
	VFMADD213PS.BCST tanhE3<>(SB), Z2, Z4
	VFMADD213PS.BCST tanhE2<>(SB), Z2, Z4
	VFMADD213PS  Z14, Z2, Z4
	VFMADD213PS  Z14, Z2, Z4
	VCVTPS2DQ    Z3, Z5
	VPSLLD       $23, Z5, Z5
	VPADDD       Z5, Z4, Z4

	VADDPS       Z14, Z4, Z4
	VBROADCASTSS tanhTwo<>(SB), Z6
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
	VPANDD.BCST  tanhSign<>(SB), Z0, Z7
	VPORD        Z7, Z6, Z6

	VMOVUPS Z6, (DX)
	ADDQ    $64, SI
	ADDQ    $64, DX
	SUBQ    $16, CX
	JMP     loop16

done16:
	VZEROUPPER
	RET

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
	VMOVUPS tanhOne<>(SB), Y14

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
	VFMADD231PS tanhLn2Lo<>(SB), Y4, Y8   // + e ln2 (low part first)
	VFMADD231PS tanhLn2Hi<>(SB), Y4, Y8

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
	VMOVUPS tanhOne<>(SB), Y14
	VMOVUPS erfClamp<>(SB), Y13

erfloop:
	UNARY8_HEAD(erfdone)
	VANDPS  tanhAbs<>(SB), Y0, Y1      // a = |x|

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
	VXORPS      tanhSign<>(SB), Y7, Y7 // -b²
	VMAXPS      expLo<>(SB), Y7, Y7    // (NaN becomes expLo; restored below)
	EXP8(Y7, Y8, Y9, Y10, Y11, Y12)
	VMULPS      Y6, Y7, Y7
	VSUBPS      Y7, Y14, Y7            // big: 1 - e^(-b²)·B(t)

	VCMPPS    $1, Y14, Y1, Y8          // a < 1
	VBLENDVPS Y8, Y4, Y7, Y7
	VCMPPS    $0x1d, Y13, Y1, Y8       // a >= 3.92
	VBLENDVPS Y8, Y14, Y7, Y7
	VANDPS    tanhSign<>(SB), Y0, Y8
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
	VMOVUPS tanhOne<>(SB), Y14
	VMOVUPS phiClamp<>(SB), Y13

philoop:
	UNARY8_HEAD(phidone)
	VANDPS  tanhAbs<>(SB), Y0, Y1     // a = |x|

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
