//go:build amd64 && !purego

#include "textflag.h"

// The piecewise-linear activations' float32 kernels (AVX2) and the
// select the exponential units use: eight lanes at a time over n
// elements, n a multiple of 8 (the callers take the rest in Go, with the
// same rules: activation_units.go). Comparisons are ordered (NaN
// compares false), so NaN takes the side the Go rules give it.

// BCAST(bits, Y) fills Y with the float32 whose bits are bits.
#define BCAST(bits, Y) \
	MOVL         $bits, AX; \
	VMOVD        AX, X15; \
	VBROADCASTSS X15, Y

// LOOP8 runs the macro BODY (each kernel defines its own) over groups
// of eight: x at SI, dst at DX, dy at DI, n in CX; BODY reads Y0 = x and
// leaves the result in Y1.
#define LOOP8 \
loop: \
	TESTQ   CX, CX; \
	JE      done; \
	VMOVUPS (SI), Y0; \
	BODY; \
	VMOVUPS Y1, (DX); \
	ADDQ    $32, SI; \
	ADDQ    $32, DI; \
	ADDQ    $32, DX; \
	SUBQ    $8, CX; \
	JMP     loop; \
done: \
	VZEROUPPER; \
	RET

// The kernels' arguments: SLOPE_ARGS (dst, x, a float32, n: a in Y8),
// UNARY_ARGS (dst, x, n) and GRAD_ARGS (dst, x, dy, n); each sets Y9 to
// zero.
#define SLOPE_ARGS \
	MOVQ         dst+0(FP), DX; \
	MOVQ         x+8(FP), SI; \
	VBROADCASTSS a+16(FP), Y8; \
	MOVQ         n+24(FP), CX; \
	VXORPS       Y9, Y9, Y9

#define UNARY_ARGS \
	MOVQ   dst+0(FP), DX; \
	MOVQ   x+8(FP), SI; \
	MOVQ   n+16(FP), CX; \
	VXORPS Y9, Y9, Y9

#define GRAD_ARGS \
	MOVQ   dst+0(FP), DX; \
	MOVQ   x+8(FP), SI; \
	MOVQ   dy+16(FP), DI; \
	MOVQ   n+24(FP), CX; \
	VXORPS Y9, Y9, Y9

// func sprelu(dst, x *float32, a float32, n int)
// dst = x where x > 0, else a·x.
TEXT ·sprelu(SB), NOSPLIT, $0-32
	SLOPE_ARGS
#define BODY VMULPS Y8, Y0, Y1; VCMPPS $0x1e, Y9, Y0, Y2; VBLENDVPS Y2, Y0, Y1, Y1
	LOOP8

#undef BODY

// func spreluslope(dst, x *float32, a float32, n int)
// dst = 1 where x > 0, else a.
TEXT ·spreluslope(SB), NOSPLIT, $0-32
	SLOPE_ARGS
	BCAST(0x3f800000, Y10) // 1
#define BODY VCMPPS $0x1e, Y9, Y0, Y2; VBLENDVPS Y2, Y10, Y8, Y1
	LOOP8

#undef BODY

// func sselpos(dst, x, a, b *float32, n int)
// dst = a where x > 0, else b (a at DI, b at BX).
TEXT ·sselpos(SB), NOSPLIT, $0-40
	MOVQ   dst+0(FP), DX
	MOVQ   x+8(FP), SI
	MOVQ   a+16(FP), DI
	MOVQ   b+24(FP), BX
	MOVQ   n+32(FP), CX
	VXORPS Y9, Y9, Y9

selloop:
	TESTQ     CX, CX
	JE        seldone
	VMOVUPS   (SI), Y0
	VCMPPS    $0x1e, Y9, Y0, Y2
	VMOVUPS   (BX), Y1
	VBLENDVPS Y2, (DI), Y1, Y1
	VMOVUPS   Y1, (DX)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, BX
	ADDQ      $32, DX
	SUBQ      $8, CX
	JMP       selloop

seldone:
	VZEROUPPER
	RET

// CLAMP6(Y) sets Y = min(max(Y, 0), 6) (NaN to 0, -0 to +0: max's second
// operand is what it returns for those), zero in Y9, 6 in Y11.
#define CLAMP6(Y) \
	VMAXPS Y9, Y, Y; \
	VMINPS Y11, Y, Y

// func srelu6(dst, x *float32, n int)
// dst = min(max(x, 0), 6), NaN kept.
TEXT ·srelu6(SB), NOSPLIT, $0-24
	UNARY_ARGS
	BCAST(0x40c00000, Y11) // 6
#define BODY VMOVAPS Y0, Y1; CLAMP6(Y1); VCMPPS $0x03, Y0, Y0, Y2; VBLENDVPS Y2, Y0, Y1, Y1
	LOOP8

#undef BODY

// func shardsigmoid(dst, x *float32, n int)
// dst = min(max(x + 3, 0), 6) / 6, NaN kept.
TEXT ·shardsigmoid(SB), NOSPLIT, $0-24
	UNARY_ARGS
	BCAST(0x40400000, Y10) // 3
	BCAST(0x40c00000, Y11) // 6
#define BODY VADDPS Y10, Y0, Y1; CLAMP6(Y1); VDIVPS Y11, Y1, Y1; VCMPPS $0x03, Y0, Y0, Y2; VBLENDVPS Y2, Y0, Y1, Y1
	LOOP8

#undef BODY

// func shardswish(dst, x *float32, n int)
// dst = -0 where x <= -3, x where x >= 3, else x·min(max(x + 3, 0), 6) / 6
// (NaN: x·0).
TEXT ·shardswish(SB), NOSPLIT, $0-24
	UNARY_ARGS
	BCAST(0x40400000, Y10) // 3
	BCAST(0x40c00000, Y11) // 6
	BCAST(0xc0400000, Y12) // -3
	BCAST(0x80000000, Y13) // -0
#define BODY VADDPS Y10, Y0, Y1; CLAMP6(Y1); VMULPS Y1, Y0, Y1; VDIVPS Y11, Y1, Y1; VCMPPS $0x1d, Y10, Y0, Y3; VBLENDVPS Y3, Y0, Y1, Y1; VCMPPS $0x12, Y12, Y0, Y2; VBLENDVPS Y2, Y13, Y1, Y1
	LOOP8

#undef BODY

// func srelu6grad(dst, x, dy *float32, n int)
// dst = 0 where x <= 0 or x >= 6, else dy (NaN's dy passes).
TEXT ·srelu6grad(SB), NOSPLIT, $0-32
	GRAD_ARGS
	BCAST(0x40c00000, Y11) // 6
#define BODY VCMPPS $0x12, Y9, Y0, Y2; VCMPPS $0x1d, Y11, Y0, Y3; VORPS Y3, Y2, Y2; VANDNPS (DI), Y2, Y1
	LOOP8

#undef BODY

// func shardsigmoidgrad(dst, x, dy *float32, n int)
// dst = dy·(1/6) where -3 < x < 3, else 0.
TEXT ·shardsigmoidgrad(SB), NOSPLIT, $0-32
	GRAD_ARGS
	BCAST(0x40400000, Y10) // 3
	BCAST(0xc0400000, Y12) // -3
	BCAST(0x3e2aaaab, Y13) // 1/6
#define BODY VCMPPS $0x1e, Y12, Y0, Y2; VCMPPS $0x11, Y10, Y0, Y3; VANDPS Y3, Y2, Y2; VMULPS (DI), Y13, Y1; VANDPS Y2, Y1, Y1
	LOOP8

#undef BODY

// func shardswishgrad(dst, x, dy *float32, n int)
// dst = 0 where x < -3, dy·((2x + 3)/6) where x <= 3, else dy (NaN's dy
// passes).
TEXT ·shardswishgrad(SB), NOSPLIT, $0-32
	GRAD_ARGS
	BCAST(0x40400000, Y10) // 3
	BCAST(0x40c00000, Y11) // 6
	BCAST(0xc0400000, Y12) // -3
#define BODY VADDPS Y0, Y0, Y1; VADDPS Y10, Y1, Y1; VDIVPS Y11, Y1, Y1; VMOVUPS (DI), Y4; VMULPS Y4, Y1, Y1; VCMPPS $0x12, Y10, Y0, Y2; VBLENDVPS Y2, Y1, Y4, Y1; VCMPPS $0x11, Y12, Y0, Y3; VANDNPS Y1, Y3, Y1
	LOOP8

#undef BODY

// func ssoftsign(dst, x *float32, n int)
// dst = x / (1 + |x|), ±1 at ±∞.
TEXT ·ssoftsign(SB), NOSPLIT, $0-24
	UNARY_ARGS
	BCAST(0x3f800000, Y10) // 1
	BCAST(0x7fffffff, Y11) // |·|
	BCAST(0x7f800000, Y12) // ∞
#define BODY VANDPS Y11, Y0, Y3; VADDPS Y10, Y3, Y1; VDIVPS Y1, Y0, Y1; VCMPPS $0x00, Y12, Y3, Y2; VANDNPS Y0, Y11, Y4; VORPS Y10, Y4, Y4; VBLENDVPS Y2, Y4, Y1, Y1
	LOOP8

#undef BODY
