// The shared part of the float32 vector kernels of transcendental
// functions (math_*_amd64.s): a macro for constants, the constants of e^x
// and the EXP8 macro, and the skeleton of a unary kernel. Each file that
// includes it gets its own copy of the constants (file-local symbols).

// Constants, each eight float32 (or int32) copies for one YMM operand.
#define CONST8(name, bits) \
	DATA name<>+0(SB)/4, $bits; DATA name<>+4(SB)/4, $bits; \
	DATA name<>+8(SB)/4, $bits; DATA name<>+12(SB)/4, $bits; \
	DATA name<>+16(SB)/4, $bits; DATA name<>+20(SB)/4, $bits; \
	DATA name<>+24(SB)/4, $bits; DATA name<>+28(SB)/4, $bits; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

CONST8(f32Abs, 0x7fffffff)
CONST8(f32Sign, 0x80000000)
CONST8(f32One, 0x3f800000)
CONST8(f32Two, 0x40000000)
CONST8(expLog2e, 0x3fb8aa3b) // 1/ln 2
CONST8(expLn2Hi, 0x3f318000) // ln 2 = hi + lo, hi with 9 significant bits
CONST8(expLn2Lo, 0xb95e8083)
CONST8(expE2, 0x3f000000)    // 1/2!
CONST8(expE3, 0x3e2aaaab)    // 1/3!
CONST8(expE4, 0x3d2aaaab)    // 1/4!
CONST8(expE5, 0x3c088889)    // 1/5!
CONST8(expE6, 0x3ab60b61)    // 1/6!
CONST8(expE7, 0x39500d01)    // 1/7!

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
	VMULPS       expLog2e<>(SB), X, T1; \
	VROUNDPS     $0, T1, T1; \
	VFNMADD231PS expLn2Hi<>(SB), T1, X; \
	VFNMADD231PS expLn2Lo<>(SB), T1, X; \
	VMOVUPS      expE7<>(SB), T2; \
	VFMADD213PS  expE6<>(SB), X, T2; \
	VFMADD213PS  expE5<>(SB), X, T2; \
	VFMADD213PS  expE4<>(SB), X, T2; \
	VFMADD213PS  expE3<>(SB), X, T2; \
	VFMADD213PS  expE2<>(SB), X, T2; \
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

// EXP16(X, T1, T2, T3, T4): EXP8's steps in sixteen AVX-512 lanes (Z14
// holding 1.0 in every lane, the constants broadcast from memory): X =
// e^X within [expLo, expHi], subnormal results included.
#define EXP16(X, T1, T2, T3, T4) \
	VMULPS.BCST       expLog2e<>(SB), X, T1; \
	VRNDSCALEPS       $0, T1, T1; \
	VFNMADD231PS.BCST expLn2Hi<>(SB), T1, X; \
	VFNMADD231PS.BCST expLn2Lo<>(SB), T1, X; \
	VBROADCASTSS      expE7<>(SB), T2; \
	VFMADD213PS.BCST  expE6<>(SB), X, T2; \
	VFMADD213PS.BCST  expE5<>(SB), X, T2; \
	VFMADD213PS.BCST  expE4<>(SB), X, T2; \
	VFMADD213PS.BCST  expE3<>(SB), X, T2; \
	VFMADD213PS.BCST  expE2<>(SB), X, T2; \
	VFMADD213PS       Z14, X, T2; \
	VFMADD213PS       Z14, X, T2; \
	VCVTPS2DQ         T1, T1; \
	VPSRAD            $1, T1, T3; \
	VPSUBD            T3, T1, T4; \
	VPADDD.BCST       expBias<>(SB), T3, T3; \
	VPSLLD            $23, T3, T3; \
	VPADDD.BCST       expBias<>(SB), T4, T4; \
	VPSLLD            $23, T4, T4; \
	VMULPS            T3, T2, T2; \
	VMULPS            T4, T2, X

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
