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

// func sdwwin(y, x *float32, yStep, xStep int, offs *int, taps int, f *float32, c, count int)
// For i < count, j < c: y[i·yStep+j] = Σ_t x[i·xStep+j + offs[t]/4]·f[t·c+j],
// the taps t in order from 0, fused multiply-adds onto 0: a row of
// outputs of a depthwise window whose taps all fall inside the input
// (offs in bytes, each tap's reach from the output's first).
TEXT ·sdwwin(SB), NOSPLIT, $0-72
	MOVQ yStep+16(FP), R12
	MOVQ c+56(FP), R8
	SUBQ R8, R12
	SHLQ $2, R12
	MOVQ R12, yStep+16(FP)   // the step from one output's end to the next's start, in bytes
	MOVQ xStep+24(FP), R12
	SHLQ $2, R12
	MOVQ R12, xStep+24(FP)
	MOVQ y+0(FP), DX
	MOVQ x+8(FP), SI
	MOVQ offs+32(FP), R10
	MOVQ taps+40(FP), R11
	SHLQ $3, R11
	ADDQ R11, R10            // the taps' end
	MOVQ f+48(FP), DI
	MOVQ R8, R11
	SHLQ $2, R11             // a tap's filter row, in bytes

winout:
	CMPQ count+64(FP), $0
	JE   windone
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R8, CX

win32:
	CMPQ   CX, $32
	JL     win8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   offs+32(FP), R9
	MOVQ   BX, R13

win32tap:
	CMPQ        R9, R10
	JE          win32store
	MOVQ        (R9), R12
	ADDQ        AX, R12
	VMOVUPS     (R12), Y4
	VMOVUPS     32(R12), Y5
	VMOVUPS     64(R12), Y6
	VMOVUPS     96(R12), Y7
	VFMADD231PS (R13), Y4, Y0
	VFMADD231PS 32(R13), Y5, Y1
	VFMADD231PS 64(R13), Y6, Y2
	VFMADD231PS 96(R13), Y7, Y3
	ADDQ        $8, R9
	ADDQ        R11, R13
	JMP         win32tap

win32store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	ADDQ    $128, DX
	ADDQ    $128, AX
	ADDQ    $128, BX
	SUBQ    $32, CX
	JMP     win32

win8:
	CMPQ   CX, $8
	JL     wintail
	VXORPS Y0, Y0, Y0
	MOVQ   offs+32(FP), R9
	MOVQ   BX, R13

win8tap:
	CMPQ        R9, R10
	JE          win8store
	MOVQ        (R9), R12
	ADDQ        AX, R12
	VMOVUPS     (R12), Y4
	VFMADD231PS (R13), Y4, Y0
	ADDQ        $8, R9
	ADDQ        R11, R13
	JMP         win8tap

win8store:
	VMOVUPS Y0, (DX)
	ADDQ    $32, DX
	ADDQ    $32, AX
	ADDQ    $32, BX
	SUBQ    $8, CX
	JMP     win8

wintail:
	TESTQ  CX, CX
	JE     winnext
	VXORPS X0, X0, X0
	MOVQ   offs+32(FP), R9
	MOVQ   BX, R13

wintailtap:
	CMPQ        R9, R10
	JE          wintailstore
	MOVQ        (R9), R12
	ADDQ        AX, R12
	VMOVSS      (R12), X4
	VFMADD231SS (R13), X4, X0
	ADDQ        $8, R9
	ADDQ        R11, R13
	JMP         wintailtap

wintailstore:
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	ADDQ   $4, AX
	ADDQ   $4, BX
	DECQ   CX
	JMP    wintail

winnext:
	ADDQ yStep+16(FP), DX
	ADDQ xStep+24(FP), SI
	DECQ count+64(FP)
	JMP  winout

windone:
	VZEROUPPER
	RET

// func sdwdot64(acc *float64, a *float32, aStep int, b *float32, bStep int, c, count int)
// For j < c: acc[j] += a[j]·b[j] + a[aStep+j]·b[bStep+j] + … over count
// rows, in that order, in float64 (each product exact, each sum rounded
// once): the filter gradient's sums, as the float64 kernels take them.
TEXT ·sdwdot64(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DX
	MOVQ a+8(FP), SI
	MOVQ aStep+16(FP), R10
	SHLQ $2, R10
	MOVQ b+24(FP), DI
	MOVQ bStep+32(FP), R11
	SHLQ $2, R11
	MOVQ c+40(FP), R8
	MOVQ count+48(FP), R9

d64x16:
	CMPQ    R8, $16
	JL      d64x4
	VMOVUPD (DX), Y0
	VMOVUPD 32(DX), Y1
	VMOVUPD 64(DX), Y2
	VMOVUPD 96(DX), Y3
	MOVQ    SI, AX
	MOVQ    DI, BX
	MOVQ    R9, CX

d64x16row:
	TESTQ       CX, CX
	JE          d64x16store
	VCVTPS2PD   (AX), Y4
	VCVTPS2PD   16(AX), Y5
	VCVTPS2PD   32(AX), Y6
	VCVTPS2PD   48(AX), Y7
	VCVTPS2PD   (BX), Y8
	VCVTPS2PD   16(BX), Y9
	VCVTPS2PD   32(BX), Y10
	VCVTPS2PD   48(BX), Y11
	VFMADD231PD Y8, Y4, Y0
	VFMADD231PD Y9, Y5, Y1
	VFMADD231PD Y10, Y6, Y2
	VFMADD231PD Y11, Y7, Y3
	ADDQ        R10, AX
	ADDQ        R11, BX
	DECQ        CX
	JMP         d64x16row

d64x16store:
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	VMOVUPD Y2, 64(DX)
	VMOVUPD Y3, 96(DX)
	ADDQ    $128, DX
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, R8
	JMP     d64x16

d64x4:
	CMPQ    R8, $4
	JL      d64tail
	VMOVUPD (DX), Y0
	MOVQ    SI, AX
	MOVQ    DI, BX
	MOVQ    R9, CX

d64x4row:
	TESTQ       CX, CX
	JE          d64x4store
	VCVTPS2PD   (AX), Y4
	VCVTPS2PD   (BX), Y8
	VFMADD231PD Y8, Y4, Y0
	ADDQ        R10, AX
	ADDQ        R11, BX
	DECQ        CX
	JMP         d64x4row

d64x4store:
	VMOVUPD Y0, (DX)
	ADDQ    $32, DX
	ADDQ    $16, SI
	ADDQ    $16, DI
	SUBQ    $4, R8
	JMP     d64x4

d64tail:
	TESTQ  R8, R8
	JE     d64done
	VMOVSD (DX), X0
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   R9, CX

d64tailrow:
	TESTQ       CX, CX
	JE          d64tailstore
	VCVTSS2SD   (AX), X4, X4
	VCVTSS2SD   (BX), X8, X8
	VFMADD231SD X8, X4, X0
	ADDQ        R10, AX
	ADDQ        R11, BX
	DECQ        CX
	JMP         d64tailrow

d64tailstore:
	VMOVSD X0, (DX)
	ADDQ   $8, DX
	ADDQ   $4, SI
	ADDQ   $4, DI
	DECQ   R8
	JMP    d64tail

d64done:
	VZEROUPPER
	RET
