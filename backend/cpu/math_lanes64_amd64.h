// The shared part of the float32 kernels that compute in float64 lanes
// (math_trig_amd64.s, math_atan_amd64.s, math_logs_amd64.s): four float32
// arguments widened to four float64 YMM lanes, each result rounded once.

// Constants, each four float64 (or int64) copies for one YMM operand.
#define CONST4(name, bits) \
	DATA name<>+0(SB)/8, $bits; DATA name<>+8(SB)/8, $bits; \
	DATA name<>+16(SB)/8, $bits; DATA name<>+24(SB)/8, $bits; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

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
