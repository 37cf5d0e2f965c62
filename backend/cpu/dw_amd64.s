//go:build amd64 && !purego

#include "textflag.h"

// The depthwise convolution's row kernels over NHWC channels (AVX2 and
// FMA): conv_depthwise_vec.go's callers, steps in elements.

// func sdwmac(dst *float32, dstStep int, src *float32, srcStep int, f *float32, c, count int)
// For i < count, j < c: dst[i·dstStep+j] += src[i·srcStep+j]·f[j], each a
// fused multiply-add.
TEXT ·sdwmac(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DX
	MOVQ dstStep+8(FP), R10
	SHLQ $2, R10
	MOVQ src+16(FP), SI
	MOVQ srcStep+24(FP), R11
	SHLQ $2, R11
	MOVQ f+32(FP), DI
	MOVQ c+40(FP), R8
	MOVQ count+48(FP), R9

macrow:
	TESTQ R9, R9
	JE    macdone
	MOVQ  DX, AX
	MOVQ  SI, BX
	MOVQ  DI, R12
	MOVQ  R8, CX

mac32:
	CMPQ        CX, $32
	JL          mac8
	VMOVUPS     (BX), Y0
	VMOVUPS     32(BX), Y1
	VMOVUPS     64(BX), Y2
	VMOVUPS     96(BX), Y3
	VMOVUPS     (AX), Y4
	VMOVUPS     32(AX), Y5
	VMOVUPS     64(AX), Y6
	VMOVUPS     96(AX), Y7
	VFMADD231PS (R12), Y0, Y4
	VFMADD231PS 32(R12), Y1, Y5
	VFMADD231PS 64(R12), Y2, Y6
	VFMADD231PS 96(R12), Y3, Y7
	VMOVUPS     Y4, (AX)
	VMOVUPS     Y5, 32(AX)
	VMOVUPS     Y6, 64(AX)
	VMOVUPS     Y7, 96(AX)
	ADDQ        $128, AX
	ADDQ        $128, BX
	ADDQ        $128, R12
	SUBQ        $32, CX
	JMP         mac32

mac8:
	CMPQ        CX, $8
	JL          mactail
	VMOVUPS     (BX), Y0
	VMOVUPS     (AX), Y4
	VFMADD231PS (R12), Y0, Y4
	VMOVUPS     Y4, (AX)
	ADDQ        $32, AX
	ADDQ        $32, BX
	ADDQ        $32, R12
	SUBQ        $8, CX
	JMP         mac8

mactail:
	TESTQ       CX, CX
	JE          macnext
	VMOVSS      (BX), X0
	VMOVSS      (AX), X4
	VFMADD231SS (R12), X0, X4
	VMOVSS      X4, (AX)
	ADDQ        $4, AX
	ADDQ        $4, BX
	ADDQ        $4, R12
	DECQ        CX
	JMP         mactail

macnext:
	ADDQ R10, DX
	ADDQ R11, SI
	DECQ R9
	JMP  macrow

macdone:
	VZEROUPPER
	RET

// func sdwdot(acc, a *float32, aStep int, b *float32, bStep int, c, count int)
// For j < c: acc[j] += a[j]·b[j] + a[aStep+j]·b[bStep+j] + … over count
// rows, in that order, each a fused multiply-add.
TEXT ·sdwdot(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DX
	MOVQ a+8(FP), SI
	MOVQ aStep+16(FP), R10
	SHLQ $2, R10
	MOVQ b+24(FP), DI
	MOVQ bStep+32(FP), R11
	SHLQ $2, R11
	MOVQ c+40(FP), R8
	MOVQ count+48(FP), R9

dot32:
	CMPQ    R8, $32
	JL      dot8
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	MOVQ    SI, AX
	MOVQ    DI, BX
	MOVQ    R9, CX

dot32row:
	TESTQ       CX, CX
	JE          dot32store
	VMOVUPS     (AX), Y4
	VMOVUPS     32(AX), Y5
	VMOVUPS     64(AX), Y6
	VMOVUPS     96(AX), Y7
	VFMADD231PS (BX), Y4, Y0
	VFMADD231PS 32(BX), Y5, Y1
	VFMADD231PS 64(BX), Y6, Y2
	VFMADD231PS 96(BX), Y7, Y3
	ADDQ        R10, AX
	ADDQ        R11, BX
	DECQ        CX
	JMP         dot32row

dot32store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	ADDQ    $128, DX
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, R8
	JMP     dot32

dot8:
	CMPQ    R8, $8
	JL      dottail
	VMOVUPS (DX), Y0
	MOVQ    SI, AX
	MOVQ    DI, BX
	MOVQ    R9, CX

dot8row:
	TESTQ       CX, CX
	JE          dot8store
	VMOVUPS     (AX), Y4
	VFMADD231PS (BX), Y4, Y0
	ADDQ        R10, AX
	ADDQ        R11, BX
	DECQ        CX
	JMP         dot8row

dot8store:
	VMOVUPS Y0, (DX)
	ADDQ    $32, DX
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, R8
	JMP     dot8

dottail:
	TESTQ  R8, R8
	JE     dotdone
	VMOVSS (DX), X0
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   R9, CX

dottailrow:
	TESTQ       CX, CX
	JE          dottailstore
	VMOVSS      (AX), X4
	VFMADD231SS (BX), X4, X0
	ADDQ        R10, AX
	ADDQ        R11, BX
	DECQ        CX
	JMP         dottailrow

dottailstore:
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	ADDQ   $4, SI
	ADDQ   $4, DI
	DECQ   R8
	JMP    dottail

dotdone:
	VZEROUPPER
	RET
