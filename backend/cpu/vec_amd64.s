//go:build amd64 && !purego

#include "textflag.h"

// SCALAR_LOOP(VOP, SOP) is the body of dst[i] = a[i] op s: eight lanes
// with VOP while eight remain, then one at a time with SOP. Arguments:
// dst+0, a+8, s+16, n+24.
#define SCALAR_LOOP(VOP, SOP) \
	MOVQ         dst+0(FP), DX; \
	MOVQ         a+8(FP), SI; \
	VBROADCASTSS s+16(FP), Y1; \
	MOVQ         n+24(FP), CX; \
wide: \
	CMPQ    CX, $8; \
	JL      tail; \
	VOP     (SI), Y1, Y0; \
	VMOVUPS Y0, (DX); \
	ADDQ    $32, SI; \
	ADDQ    $32, DX; \
	SUBQ    $8, CX; \
	JMP     wide; \
tail: \
	TESTQ  CX, CX; \
	JE     done; \
	SOP    (SI), X1, X0; \
	VMOVSS X0, (DX); \
	ADDQ   $4, SI; \
	ADDQ   $4, DX; \
	DECQ   CX; \
	JMP    tail; \
done: \
	VZEROUPPER; \
	RET

// OP32(VOP, STORE) sets 32 float32 of (DX) to (SI) VOP (DI), storing with
// STORE (VMOVNTPS bypasses the caches), and advances the three pointers
// and the count CX.
#define OP32(VOP, STORE) \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	VOP     (DI), Y0, Y0; \
	VOP     32(DI), Y1, Y1; \
	VOP     64(DI), Y2, Y2; \
	VOP     96(DI), Y3, Y3; \
	STORE   Y0, (DX); \
	STORE   Y1, 32(DX); \
	STORE   Y2, 64(DX); \
	STORE   Y3, 96(DX); \
	ADDQ    $128, SI; \
	ADDQ    $128, DI; \
	ADDQ    $128, DX; \
	SUBQ    $32, CX

// VV_LOOP(VOP, SOP) is the body of dst[i] = a[i] op b[i]: 32 lanes at a
// time in four registers while 32 remain, then 8, then one at a time with
// SOP. Arguments: dst+0, a+8, b+16, n+24. The operands may be the same
// slice as dst.
#define VV_LOOP(VOP, SOP) \
	MOVQ dst+0(FP), DX; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DI; \
	MOVQ n+24(FP), CX; \
wide32: \
	CMPQ    CX, $32; \
	JL      wide8; \
	OP32(VOP, VMOVUPS); \
	JMP     wide32; \
wide8: \
	CMPQ    CX, $8; \
	JL      tail; \
	VMOVUPS (SI), Y0; \
	VOP     (DI), Y0, Y0; \
	VMOVUPS Y0, (DX); \
	ADDQ    $32, SI; \
	ADDQ    $32, DI; \
	ADDQ    $32, DX; \
	SUBQ    $8, CX; \
	JMP     wide8; \
tail: \
	TESTQ  CX, CX; \
	JE     done; \
	VMOVSS (SI), X0; \
	SOP    (DI), X0, X0; \
	VMOVSS X0, (DX); \
	ADDQ   $4, SI; \
	ADDQ   $4, DI; \
	ADDQ   $4, DX; \
	DECQ   CX; \
	JMP    tail; \
done: \
	VZEROUPPER; \
	RET


// FOLD4 sums the 32 lanes of Y0-Y3 into the low lane of X0 (pairwise,
// then across halves and lanes); sdot and ssum share it.
#define FOLD4 \
	VADDPS       Y1, Y0, Y0; \
	VADDPS       Y3, Y2, Y2; \
	VADDPS       Y2, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VPERMILPS    $0x4E, X0, X1; \
	VADDPS       X1, X0, X0; \
	VPERMILPS    $0xB1, X0, X1; \
	VADDSS       X1, X0, X0

// func sdot(x, y *float32, n int) float32
// Returns sum(x[i]*y[i]) with four 8-wide FMA accumulators.
TEXT ·sdot(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), SI
	MOVQ   y+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dot32:
	CMPQ        CX, $32
	JL          dot8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         dot32

dot8:
	CMPQ        CX, $8
	JL          dotsum
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         dot8

dotsum:
	FOLD4

dottail:
	TESTQ       CX, CX
	JE          dotdone
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         dottail

dotdone:
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func sadd(dst, a, b *float32, n int)
// dst[i] = a[i] + b[i].
TEXT ·sadd(SB), NOSPLIT, $0-32
	VV_LOOP(VADDPS, VADDSS)

// func ssub(dst, a, b *float32, n int)
// dst[i] = a[i] - b[i].
TEXT ·ssub(SB), NOSPLIT, $0-32
	VV_LOOP(VSUBPS, VSUBSS)

// func smul(dst, a, b *float32, n int)
// dst[i] = a[i] * b[i].
TEXT ·smul(SB), NOSPLIT, $0-32
	VV_LOOP(VMULPS, VMULSS)

// func sdiv(dst, a, b *float32, n int)
// dst[i] = a[i] / b[i] (IEEE division, as Go's).
TEXT ·sdiv(SB), NOSPLIT, $0-32
	VV_LOOP(VDIVPS, VDIVSS)

// func smuls(dst, a *float32, s float32, n int)
// dst[i] = a[i] * s.
TEXT ·smuls(SB), NOSPLIT, $0-32
	SCALAR_LOOP(VMULPS, VMULSS)

// func sadds(dst, a *float32, s float32, n int)
// dst[i] = a[i] + s.
TEXT ·sadds(SB), NOSPLIT, $0-32
	SCALAR_LOOP(VADDPS, VADDSS)

// func saxpy(dst, x *float32, a float32, n int)
// dst[i] += a * x[i].
TEXT ·saxpy(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DX
	MOVQ         x+8(FP), SI
	VBROADCASTSS a+16(FP), Y4
	MOVQ         n+24(FP), CX

axpy32:
	CMPQ        CX, $32
	JL          axpy8
	VMOVUPS     (DX), Y0
	VMOVUPS     32(DX), Y1
	VMOVUPS     64(DX), Y2
	VMOVUPS     96(DX), Y3
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y4, Y1
	VFMADD231PS 64(SI), Y4, Y2
	VFMADD231PS 96(SI), Y4, Y3
	VMOVUPS     Y0, (DX)
	VMOVUPS     Y1, 32(DX)
	VMOVUPS     Y2, 64(DX)
	VMOVUPS     Y3, 96(DX)
	ADDQ        $128, SI
	ADDQ        $128, DX
	SUBQ        $32, CX
	JMP         axpy32

axpy8:
	CMPQ        CX, $8
	JL          axpytail
	VMOVUPS     (DX), Y0
	VFMADD231PS (SI), Y4, Y0
	VMOVUPS     Y0, (DX)
	ADDQ        $32, SI
	ADDQ        $32, DX
	SUBQ        $8, CX
	JMP         axpy8

axpytail:
	TESTQ       CX, CX
	JE          axpydone
	VMOVSS      (DX), X0
	VFMADD231SS (SI), X4, X0
	VMOVSS      X0, (DX)
	ADDQ        $4, SI
	ADDQ        $4, DX
	DECQ        CX
	JMP         axpytail

axpydone:
	VZEROUPPER
	RET

// func saddnt(dst, a, b *float32, n int)
// dst[i] = a[i] + b[i] for n a multiple of 32 and dst 32-byte aligned,
// with non-temporal stores: for arrays far larger than the caches, the
// result goes to memory without first reading its lines in.
TEXT ·saddnt(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ n+24(FP), CX

ntloop:
	CMPQ CX, $32
	JL   ntdone
	OP32(VADDPS, VMOVNTPS)
	JMP  ntloop

ntdone:
	SFENCE
	VZEROUPPER
	RET

// func ssum(x *float32, n int) float32
// Returns the sum of x[0:n] with eight 8-wide accumulators (64 partial
// sums, added pairwise at the end): enough independent adds in flight to
// read at the cache's speed.
TEXT ·ssum(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

sum64:
	CMPQ   CX, $64
	JL     sum8
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VADDPS 128(SI), Y4, Y4
	VADDPS 160(SI), Y5, Y5
	VADDPS 192(SI), Y6, Y6
	VADDPS 224(SI), Y7, Y7
	ADDQ   $256, SI
	SUBQ   $64, CX
	JMP    sum64

sum8:
	CMPQ   CX, $8
	JL     sumfold
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    sum8

sumfold:
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	FOLD4

sumtail:
	TESTQ  CX, CX
	JE     sumdone
	VADDSS (SI), X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JMP    sumtail

sumdone:
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func srelu(dst, x *float32, n int)
// dst[i] = x[i] where x[i] > 0, NaN where x[i] is NaN, else +0 (as the Go
// loop does): MAXPS returns its second source, zero, when either is NaN
// (and for -0), so the NaN lanes, found by an unordered compare of x with
// itself, are ORed back in.
TEXT ·srelu(SB), NOSPLIT, $0-24
	MOVQ   dst+0(FP), DX
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPS Y2, Y2, Y2

relu8:
	CMPQ    CX, $8
	JL      relutail
	VMOVUPS (SI), Y0
	VCMPPS  $0x03, Y0, Y0, Y1 // unordered: x is NaN
	VANDPS  Y0, Y1, Y1
	VMAXPS  Y2, Y0, Y0
	VORPS   Y1, Y0, Y0
	VMOVUPS Y0, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     relu8

relutail:
	TESTQ  CX, CX
	JE     reludone
	VMOVSS (SI), X0
	VCMPSS $0x03, X0, X0, X1
	VANDPS X0, X1, X1
	VMAXSS X2, X0, X0
	VORPS  X1, X0, X0
	VMOVSS X0, (DX)
	ADDQ   $4, SI
	ADDQ   $4, DX
	DECQ   CX
	JMP    relutail

reludone:
	VZEROUPPER
	RET

// func sreluGrad(dst, x, dy *float32, n int)
// dst[i] = dy[i] where x[i] > 0, else 0 (an ordered compare: NaN gives 0).
TEXT ·sreluGrad(SB), NOSPLIT, $0-32
	MOVQ   dst+0(FP), DX
	MOVQ   x+8(FP), SI
	MOVQ   dy+16(FP), DI
	MOVQ   n+24(FP), CX
	VXORPS Y2, Y2, Y2

rgrad8:
	CMPQ    CX, $8
	JL      rgradtail
	VMOVUPS (SI), Y0
	VCMPPS  $0x1e, Y2, Y0, Y1     // x > 0, ordered
	VANDPS  (DI), Y1, Y1
	VMOVUPS Y1, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     rgrad8

rgradtail:
	TESTQ  CX, CX
	JE     rgraddone
	VMOVSS (SI), X0
	VCMPSS $0x1e, X2, X0, X1
	VMOVSS (DI), X3
	VANDPS X3, X1, X1
	VMOVSS X1, (DX)
	ADDQ   $4, SI
	ADDQ   $4, DI
	ADDQ   $4, DX
	DECQ   CX
	JMP    rgradtail

rgraddone:
	VZEROUPPER
	RET

// func sadam8(w, m, v, grad *float32, n int, c *[9]float32)
// Adam's step over n elements, n a multiple of 8, with c = {β1, 1-β1, β2,
// 1-β2, 1/c1, 1/c2, ε, lr, wd} (adamInPlace): the Go loop's operations in
// its order, each rounded (no fused multiply-add), so that the two agree
// bit for bit:
//	m = β1·m + (1-β1)·g;  v = β2·v + ((1-β2)·g)·g
//	w = w - lr·((m·(1/c1)) / (sqrt(v·(1/c2)) + ε) + wd·w)
TEXT ·sadam8(SB), NOSPLIT, $0-48
	MOVQ         w+0(FP), DI
	MOVQ         m+8(FP), SI
	MOVQ         v+16(FP), DX
	MOVQ         grad+24(FP), BX
	MOVQ         n+32(FP), CX
	MOVQ         c+40(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	VBROADCASTSS 16(AX), Y12
	VBROADCASTSS 20(AX), Y13
	VBROADCASTSS 24(AX), Y14
	VBROADCASTSS 28(AX), Y15
	VBROADCASTSS 32(AX), Y7

adamloop:
	CMPQ    CX, $8
	JL      adamdone
	VMOVUPS (BX), Y0
	VMULPS  (SI), Y8, Y1
	VMULPS  Y0, Y9, Y2
	VADDPS  Y2, Y1, Y1
	VMOVUPS Y1, (SI)
	VMULPS  (DX), Y10, Y3
	VMULPS  Y0, Y11, Y4
	VMULPS  Y0, Y4, Y4
	VADDPS  Y4, Y3, Y3
	VMOVUPS Y3, (DX)
	VMULPS  Y13, Y3, Y3
	VSQRTPS Y3, Y3
	VADDPS  Y14, Y3, Y3
	VMULPS  Y12, Y1, Y1
	VDIVPS  Y3, Y1, Y1
	VMOVUPS (DI), Y5
	VMULPS  Y5, Y7, Y6
	VADDPS  Y6, Y1, Y1
	VMULPS  Y15, Y1, Y1
	VSUBPS  Y1, Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	SUBQ    $8, CX
	JMP     adamloop

adamdone:
	VZEROUPPER
	RET

// func smax(x *float32, n int) float32
// Returns the largest of x[0:n] (n > 0) with four 8-wide accumulators; a
// NaN may or may not win (VMAXPS keeps the operand read from memory).
TEXT ·smax(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS (SI), Y0
	VMOVAPS      Y0, Y1
	VMOVAPS      Y0, Y2
	VMOVAPS      Y0, Y3

max32:
	CMPQ   CX, $32
	JL     max8
	VMAXPS (SI), Y0, Y0
	VMAXPS 32(SI), Y1, Y1
	VMAXPS 64(SI), Y2, Y2
	VMAXPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $32, CX
	JMP    max32

max8:
	CMPQ   CX, $8
	JL     maxfold
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    max8

maxfold:
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4E, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xB1, X0, X1
	VMAXPS       X1, X0, X0

maxtail:
	TESTQ  CX, CX
	JE     maxdone
	VMAXSS (SI), X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JMP    maxtail

maxdone:
	VZEROUPPER
	MOVSS X0, ret+16(FP)
	RET

// func dsubmul(dst, x *float64, a float64, n int)
// dst[i] -= a * x[i], the product rounded before the difference (no
// fusion: Go's scalar loop and the GPU's kernels round alike).
TEXT ·dsubmul(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DX
	MOVQ         x+8(FP), SI
	VBROADCASTSD a+16(FP), Y4
	MOVQ         n+24(FP), CX

submul8:
	CMPQ    CX, $8
	JL      submul4
	VMULPD  (SI), Y4, Y0
	VMULPD  32(SI), Y4, Y1
	VMOVUPD (DX), Y2
	VMOVUPD 32(DX), Y3
	VSUBPD  Y0, Y2, Y2
	VSUBPD  Y1, Y3, Y3
	VMOVUPD Y2, (DX)
	VMOVUPD Y3, 32(DX)
	ADDQ    $64, SI
	ADDQ    $64, DX
	SUBQ    $8, CX
	JMP     submul8

submul4:
	CMPQ    CX, $4
	JL      submultail
	VMULPD  (SI), Y4, Y0
	VMOVUPD (DX), Y2
	VSUBPD  Y0, Y2, Y2
	VMOVUPD Y2, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DX
	SUBQ    $4, CX

submultail:
	TESTQ  CX, CX
	JE     submuldone
	VMULSD (SI), X4, X0
	VMOVSD (DX), X2
	VSUBSD X0, X2, X2
	VMOVSD X2, (DX)
	ADDQ   $8, SI
	ADDQ   $8, DX
	DECQ   CX
	JMP    submultail

submuldone:
	VZEROUPPER
	RET

// func drot(x, y *float64, c, s float64, n int)
// x[i], y[i] = c·x[i] - s·y[i], s·x[i] + c·y[i], each product rounded
// before its sum (no fusion, as Go's scalar loop and the GPU's kernels).
TEXT ·drot(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), DX
	MOVQ         y+8(FP), SI
	VBROADCASTSD c+16(FP), Y6
	VBROADCASTSD s+24(FP), Y7
	MOVQ         n+32(FP), CX

rot4:
	CMPQ    CX, $4
	JL      rottail
	VMOVUPD (DX), Y0
	VMOVUPD (SI), Y1
	VMULPD  Y0, Y6, Y2
	VMULPD  Y1, Y7, Y3
	VSUBPD  Y3, Y2, Y2
	VMULPD  Y0, Y7, Y4
	VMULPD  Y1, Y6, Y5
	VADDPD  Y5, Y4, Y4
	VMOVUPD Y2, (DX)
	VMOVUPD Y4, (SI)
	ADDQ    $32, DX
	ADDQ    $32, SI
	SUBQ    $4, CX
	JMP     rot4

rottail:
	TESTQ  CX, CX
	JE     rotdone
	VMOVSD (DX), X0
	VMOVSD (SI), X1
	VMULSD X0, X6, X2
	VMULSD X1, X7, X3
	VSUBSD X3, X2, X2
	VMULSD X0, X7, X4
	VMULSD X1, X6, X5
	VADDSD X5, X4, X4
	VMOVSD X2, (DX)
	VMOVSD X4, (SI)
	ADDQ   $8, DX
	ADDQ   $8, SI
	DECQ   CX
	JMP    rottail

rotdone:
	VZEROUPPER
	RET

// func dsubmulf32(dst *float64, x *float32, a float64, n int)
// dst[i] -= a * float64(x[i]), as dsubmul (x widened exactly).
TEXT ·dsubmulf32(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DX
	MOVQ         x+8(FP), SI
	VBROADCASTSD a+16(FP), Y4
	MOVQ         n+24(FP), CX

submulf4:
	CMPQ      CX, $4
	JL        submulftail
	VCVTPS2PD (SI), Y0
	VMULPD    Y0, Y4, Y0
	VMOVUPD   (DX), Y2
	VSUBPD    Y0, Y2, Y2
	VMOVUPD   Y2, (DX)
	ADDQ      $16, SI
	ADDQ      $32, DX
	SUBQ      $4, CX
	JMP       submulf4

submulftail:
	TESTQ     CX, CX
	JE        submulfdone
	VCVTSS2SD (SI), X0, X0
	VMULSD    X0, X4, X0
	VMOVSD    (DX), X2
	VSUBSD    X0, X2, X2
	VMOVSD    X2, (DX)
	ADDQ      $4, SI
	ADDQ      $8, DX
	DECQ      CX
	JMP       submulftail

submulfdone:
	VZEROUPPER
	RET

// func dmulblock(dst, x, y *float64, n, ldx, ldy, ldd int)
// dst[r][c] = Σ_{k<n} x[r][k]·y[k][c] for r < 4 and c < 8 (rows ldx, ldy
// and ldd elements apart), each sum from k = 0 up, every product rounded
// before it is added (no fusion: matMul's rows and the GPU's sums round
// alike), in sixteen registers held over k.
TEXT ·dmulblock(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ ldx+32(FP), R8
	SHLQ $3, R8
	MOVQ ldy+40(FP), R9
	SHLQ $3, R9
	MOVQ ldd+48(FP), R10
	SHLQ $3, R10
	LEAQ (SI)(R8*1), R11  // x's row 1
	LEAQ (R11)(R8*1), R12 // row 2
	LEAQ (R12)(R8*1), R13 // row 3
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

blockk:
	TESTQ        CX, CX
	JE           blockstore
	VMOVUPD      (DX), Y8
	VMOVUPD      32(DX), Y9
	VBROADCASTSD (SI), Y10
	VMULPD       Y8, Y10, Y11
	VADDPD       Y11, Y0, Y0
	VMULPD       Y9, Y10, Y11
	VADDPD       Y11, Y1, Y1
	VBROADCASTSD (R11), Y10
	VMULPD       Y8, Y10, Y11
	VADDPD       Y11, Y2, Y2
	VMULPD       Y9, Y10, Y11
	VADDPD       Y11, Y3, Y3
	VBROADCASTSD (R12), Y10
	VMULPD       Y8, Y10, Y11
	VADDPD       Y11, Y4, Y4
	VMULPD       Y9, Y10, Y11
	VADDPD       Y11, Y5, Y5
	VBROADCASTSD (R13), Y10
	VMULPD       Y8, Y10, Y11
	VADDPD       Y11, Y6, Y6
	VMULPD       Y9, Y10, Y11
	VADDPD       Y11, Y7, Y7
	ADDQ         $8, SI
	ADDQ         $8, R11
	ADDQ         $8, R12
	ADDQ         $8, R13
	ADDQ         R9, DX
	DECQ         CX
	JMP          blockk

blockstore:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    R10, DI
	VMOVUPD Y2, (DI)
	VMOVUPD Y3, 32(DI)
	ADDQ    R10, DI
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	ADDQ    R10, DI
	VMOVUPD Y6, (DI)
	VMOVUPD Y7, 32(DI)
	VZEROUPPER
	RET
