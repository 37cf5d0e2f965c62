// The shared part of the float32 kernels that compute in float64 lanes
// (math_trig_amd64.s, math_atan_amd64.s, math_logs_amd64.s,
// math_expm1_amd64.s, math_softplus_amd64.s): four float32 arguments
// widened to four float64 YMM lanes, each result rounded once; the
// exponential's and the logarithm's cores (EXP64, LN64) and their
// constants. Each file that includes it gets its own copy of the
// constants (file-local symbols).

// Constants, each four float64 (or int64) copies for one YMM operand.
#define CONST4(name, bits) \
	DATA name<>+0(SB)/8, $bits; DATA name<>+8(SB)/8, $bits; \
	DATA name<>+16(SB)/8, $bits; DATA name<>+24(SB)/8, $bits; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

CONST4(lanesOne, 0x3ff0000000000000)
CONST4(lanesHalf, 0x3fe0000000000000)
CONST4(lanesBias, 0x00000000000003ff)   // 1023
CONST4(lanesMant, 0x000fffffffffffff)
CONST4(lanesSqrt2, 0x3ff6a09e667f3bcd)
CONST4(lanesMagic, 0x4338000000000000)  // 1.5·2^52: int64 to float64 by an add
CONST4(lanesLn2, 0x3fe62e42fefa39ef)
CONST4(lanesLog2e, 0x3ff71547652b82fe)
CONST4(lanesLn2Hi, 0x3fe62e42fee00000)  // ln 2 = hi + lo, k·hi exact for |k| < 2^11
CONST4(lanesLn2Lo, 0x3dea39ef35793c76)
CONST4(lanesF2, 0x3fe0000000000000)     // 1/2!
CONST4(lanesF3, 0x3fc5555555555555)     // 1/3!
CONST4(lanesF4, 0x3fa5555555555555)     // 1/4!
CONST4(lanesF5, 0x3f81111111111111)     // 1/5!
CONST4(lanesF6, 0x3f56c16c16c16c17)     // 1/6!
CONST4(lanesF7, 0x3f2a01a01a01a01a)     // 1/7!
CONST4(lanesF8, 0x3efa01a01a01a01a)     // 1/8!
CONST4(lanesF9, 0x3ec71de3a556c734)     // 1/9!
CONST4(lanesF10, 0x3e927e4fb7789f5c)    // 1/10!
CONST4(lanesF11, 0x3e5ae64567f544e4)    // 1/11!
CONST4(lanesL1, 0x3fd5555555555555)     // 1/3
CONST4(lanesL2, 0x3fc999999999999a)     // 1/5
CONST4(lanesL3, 0x3fc2492492492492)     // 1/7
CONST4(lanesL4, 0x3fbc71c71c71c71c)     // 1/9
CONST4(lanesL5, 0x3fb745d1745d1746)     // 1/11
CONST4(lanesL6, 0x3fb3b13b13b13b14)     // 1/13
CONST4(lanesL7, 0x3fb1111111111111)     // 1/15
CONST4(lanesL8, 0x3fae1e1e1e1e1e1e)     // 1/17

// EXP64(T, K, P, S, XS): P = e^T for T in [-745, 709] (a caller clamps;
// Y14 holds 1.0): k = round(T/ln 2), r = T - k·ln 2 (ln 2 in two parts,
// |r| ≤ 0.35, left in T), e^r by its Taylor series to r¹¹ (below 2⁻⁵⁰),
// times 2^k built in S's exponent field (k within the normal range; XS
// is S's X form). Clobbers T, K and S.
#define EXP64(T, K, P, S, XS) \
	VMULPD       lanesLog2e<>(SB), T, K; \
	VROUNDPD     $0, K, K; \
	VFNMADD231PD lanesLn2Hi<>(SB), K, T; \
	VFNMADD231PD lanesLn2Lo<>(SB), K, T; \
	VMOVUPD      lanesF11<>(SB), P; \
	VFMADD213PD  lanesF10<>(SB), T, P; \
	VFMADD213PD  lanesF9<>(SB), T, P; \
	VFMADD213PD  lanesF8<>(SB), T, P; \
	VFMADD213PD  lanesF7<>(SB), T, P; \
	VFMADD213PD  lanesF6<>(SB), T, P; \
	VFMADD213PD  lanesF5<>(SB), T, P; \
	VFMADD213PD  lanesF4<>(SB), T, P; \
	VFMADD213PD  lanesF3<>(SB), T, P; \
	VFMADD213PD  lanesF2<>(SB), T, P; \
	VFMADD213PD  Y14, T, P; \
	VFMADD213PD  Y14, T, P; \
	VCVTPD2DQY   K, XS; \
	VPMOVSXDQ    XS, S; \
	VPADDQ       lanesBias<>(SB), S, S; \
	VPSLLQ       $52, S, S; \
	VMULPD       S, P, P

// LN64(U, E, M, T1, T2, T3, R): R = ln m and E = e (float64) for a normal
// positive U = 2^e·m, m in [√½, √2) (Y14 holds 1.0): ln m = 2s + 2s·s²·(1/3
// + s²/5 + ...) to s¹⁷ (below 2⁻⁵⁰), s = (m-1)/(m+1), m - 1 exact; the
// caller adds e·ln 2 (or scales for another base). Clobbers M, T1-T3.
#define LN64(U, E, M, T1, T2, T3, R) \
	VPSRLQ      $52, U, E; \
	VPSUBQ      lanesBias<>(SB), E, E; \
	VANDPD      lanesMant<>(SB), U, M; \
	VORPD       Y14, M, M; \
	VCMPPD      $0x1e, lanesSqrt2<>(SB), M, T1; \
	VMULPD      lanesHalf<>(SB), M, T2; \
	VBLENDVPD   T1, T2, M, M; \
	VPSUBQ      T1, E, E; \
	VPADDQ      lanesMagic<>(SB), E, E; \
	VSUBPD      lanesMagic<>(SB), E, E; \
	VSUBPD      Y14, M, T1; \
	VADDPD      Y14, M, T2; \
	VDIVPD      T2, T1, T1; \
	VMULPD      T1, T1, T2; \
	VMOVUPD     lanesL8<>(SB), R; \
	VFMADD213PD lanesL7<>(SB), T2, R; \
	VFMADD213PD lanesL6<>(SB), T2, R; \
	VFMADD213PD lanesL5<>(SB), T2, R; \
	VFMADD213PD lanesL4<>(SB), T2, R; \
	VFMADD213PD lanesL3<>(SB), T2, R; \
	VFMADD213PD lanesL2<>(SB), T2, R; \
	VFMADD213PD lanesL1<>(SB), T2, R; \
	VADDPD      T1, T1, T3; \
	VMULPD      T3, T2, T2; \
	VFMADD213PD T3, T2, R

// LANES64_ARGS loads func(dst, x *float32, n int) int's dst into DX, x
// into SI, n into CX and BX (BX - CX is what was done, the result).
#define LANES64_ARGS \
	MOVQ dst+0(FP), DX \
	MOVQ x+8(FP), SI   \
	MOVQ n+16(FP), CX  \
	MOVQ CX, BX

// LANES64_HEAD, under the loop's label, leaves for DONE when fewer than
// four are left and widens the next four x into Y0.
#define LANES64_HEAD(DONE) \
	CMPQ      CX, $4 \
	JL        DONE   \
	VCVTPS2PD (SI), Y0

// LANES64_STOP leaves for DONE where any lane of the mask M is set (a
// group the kernel leaves to the caller); clobbers AX.
#define LANES64_STOP(M, DONE) \
	VMOVMSKPD M, AX \
	TESTL     AX, AX \
	JNZ       DONE

// LANES64_NEXT rounds the four float64 results in R (a YMM register, its
// X form XR) to float32, stores them and goes back to LOOP.
#define LANES64_NEXT(R, XR, LOOP) \
	VCVTPD2PSY R, XR  \
	VMOVUPS    XR, (DX) \
	ADDQ       $16, SI \
	ADDQ       $16, DX \
	SUBQ       $4, CX  \
	JMP        LOOP
