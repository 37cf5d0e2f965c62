//go:build amd64 && !purego

#include "textflag.h"

// LOAD4 loads four rows into a-d with mov (VMOVUPS: 16 float32,
// VMOVUPD: 8 float64) from SI, BX bytes apart, leaving SI at the next row.
#define LOAD4(mov, a, b, c, d) \
	mov (SI), a; \
	ADDQ BX, SI; \
	mov (SI), b; \
	ADDQ BX, SI; \
	mov (SI), c; \
	ADDQ BX, SI; \
	mov (SI), d; \
	ADDQ BX, SI

// TRANSPOSE16 transposes the 16x16 float32 block in Z0-Z15 (row i in Zi)
// in place, through Z16-Z31: the rows are interleaved by 32 bits, then by
// 64 bits within 128-bit lanes, and the lanes gathered by two rounds of
// VSHUFF32X4.
#define TRANSPOSE16 \
	VUNPCKLPS Z1, Z0, Z16; \
	VUNPCKHPS Z1, Z0, Z17; \
	VUNPCKLPS Z3, Z2, Z18; \
	VUNPCKHPS Z3, Z2, Z19; \
	VUNPCKLPS Z5, Z4, Z20; \
	VUNPCKHPS Z5, Z4, Z21; \
	VUNPCKLPS Z7, Z6, Z22; \
	VUNPCKHPS Z7, Z6, Z23; \
	VUNPCKLPS Z9, Z8, Z24; \
	VUNPCKHPS Z9, Z8, Z25; \
	VUNPCKLPS Z11, Z10, Z26; \
	VUNPCKHPS Z11, Z10, Z27; \
	VUNPCKLPS Z13, Z12, Z28; \
	VUNPCKHPS Z13, Z12, Z29; \
	VUNPCKLPS Z15, Z14, Z30; \
	VUNPCKHPS Z15, Z14, Z31; \
	VUNPCKLPD Z18, Z16, Z0; \
	VUNPCKHPD Z18, Z16, Z1; \
	VUNPCKLPD Z19, Z17, Z2; \
	VUNPCKHPD Z19, Z17, Z3; \
	VUNPCKLPD Z22, Z20, Z4; \
	VUNPCKHPD Z22, Z20, Z5; \
	VUNPCKLPD Z23, Z21, Z6; \
	VUNPCKHPD Z23, Z21, Z7; \
	VUNPCKLPD Z26, Z24, Z8; \
	VUNPCKHPD Z26, Z24, Z9; \
	VUNPCKLPD Z27, Z25, Z10; \
	VUNPCKHPD Z27, Z25, Z11; \
	VUNPCKLPD Z30, Z28, Z12; \
	VUNPCKHPD Z30, Z28, Z13; \
	VUNPCKLPD Z31, Z29, Z14; \
	VUNPCKHPD Z31, Z29, Z15; \
	VSHUFF32X4 $0x44, Z4, Z0, Z16; \
	VSHUFF32X4 $0x44, Z12, Z8, Z20; \
	VSHUFF32X4 $0xee, Z4, Z0, Z24; \
	VSHUFF32X4 $0xee, Z12, Z8, Z28; \
	VSHUFF32X4 $0x44, Z5, Z1, Z17; \
	VSHUFF32X4 $0x44, Z13, Z9, Z21; \
	VSHUFF32X4 $0xee, Z5, Z1, Z25; \
	VSHUFF32X4 $0xee, Z13, Z9, Z29; \
	VSHUFF32X4 $0x44, Z6, Z2, Z18; \
	VSHUFF32X4 $0x44, Z14, Z10, Z22; \
	VSHUFF32X4 $0xee, Z6, Z2, Z26; \
	VSHUFF32X4 $0xee, Z14, Z10, Z30; \
	VSHUFF32X4 $0x44, Z7, Z3, Z19; \
	VSHUFF32X4 $0x44, Z15, Z11, Z23; \
	VSHUFF32X4 $0xee, Z7, Z3, Z27; \
	VSHUFF32X4 $0xee, Z15, Z11, Z31; \
	VSHUFF32X4 $0x88, Z20, Z16, Z0; \
	VSHUFF32X4 $0xdd, Z20, Z16, Z4; \
	VSHUFF32X4 $0x88, Z28, Z24, Z8; \
	VSHUFF32X4 $0xdd, Z28, Z24, Z12; \
	VSHUFF32X4 $0x88, Z21, Z17, Z1; \
	VSHUFF32X4 $0xdd, Z21, Z17, Z5; \
	VSHUFF32X4 $0x88, Z29, Z25, Z9; \
	VSHUFF32X4 $0xdd, Z29, Z25, Z13; \
	VSHUFF32X4 $0x88, Z22, Z18, Z2; \
	VSHUFF32X4 $0xdd, Z22, Z18, Z6; \
	VSHUFF32X4 $0x88, Z30, Z26, Z10; \
	VSHUFF32X4 $0xdd, Z30, Z26, Z14; \
	VSHUFF32X4 $0x88, Z23, Z19, Z3; \
	VSHUFF32X4 $0xdd, Z23, Z19, Z7; \
	VSHUFF32X4 $0x88, Z31, Z27, Z11; \
	VSHUFF32X4 $0xdd, Z31, Z27, Z15;

// func strans16(dst *float32, ldd int, src *float32, lds int)
// A 16x16 float32 transpose (AVX-512): row i of dst (ldd elements apart)
// is column i of src (rows lds elements apart).
TEXT ·strans16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), DX
	SHLQ $2, DX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), BX
	SHLQ $2, BX
	LOAD4(VMOVUPS, Z0, Z1, Z2, Z3)
	LOAD4(VMOVUPS, Z4, Z5, Z6, Z7)
	LOAD4(VMOVUPS, Z8, Z9, Z10, Z11)
	LOAD4(VMOVUPS, Z12, Z13, Z14, Z15)
	TRANSPOSE16
	VMOVUPS Z0, (DI)
	ADDQ DX, DI
	VMOVUPS Z1, (DI)
	ADDQ DX, DI
	VMOVUPS Z2, (DI)
	ADDQ DX, DI
	VMOVUPS Z3, (DI)
	ADDQ DX, DI
	VMOVUPS Z4, (DI)
	ADDQ DX, DI
	VMOVUPS Z5, (DI)
	ADDQ DX, DI
	VMOVUPS Z6, (DI)
	ADDQ DX, DI
	VMOVUPS Z7, (DI)
	ADDQ DX, DI
	VMOVUPS Z8, (DI)
	ADDQ DX, DI
	VMOVUPS Z9, (DI)
	ADDQ DX, DI
	VMOVUPS Z10, (DI)
	ADDQ DX, DI
	VMOVUPS Z11, (DI)
	ADDQ DX, DI
	VMOVUPS Z12, (DI)
	ADDQ DX, DI
	VMOVUPS Z13, (DI)
	ADDQ DX, DI
	VMOVUPS Z14, (DI)
	ADDQ DX, DI
	VMOVUPS Z15, (DI)
	VZEROUPPER
	RET

// func strans12x16(dst *float32, src *float32, lds int)
// Packs a 12-row GEMM panel from 16 columns of A: dst[p*12+r] = src[r*lds+p]
// for r < 12, p < 16 (192 contiguous values). The 16x16 transpose runs on
// the 12 rows and four of zeros; each result row's first 12 values are
// stored under a mask.
TEXT ·strans12x16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), BX
	SHLQ $2, BX
	LOAD4(VMOVUPS, Z0, Z1, Z2, Z3)
	LOAD4(VMOVUPS, Z4, Z5, Z6, Z7)
	LOAD4(VMOVUPS, Z8, Z9, Z10, Z11)
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TRANSPOSE16
	MOVL $0x0fff, AX
	KMOVW AX, K1
	VMOVUPS Z0, K1, (DI)
	VMOVUPS Z1, K1, 48(DI)
	VMOVUPS Z2, K1, 96(DI)
	VMOVUPS Z3, K1, 144(DI)
	VMOVUPS Z4, K1, 192(DI)
	VMOVUPS Z5, K1, 240(DI)
	VMOVUPS Z6, K1, 288(DI)
	VMOVUPS Z7, K1, 336(DI)
	VMOVUPS Z8, K1, 384(DI)
	VMOVUPS Z9, K1, 432(DI)
	VMOVUPS Z10, K1, 480(DI)
	VMOVUPS Z11, K1, 528(DI)
	VMOVUPS Z12, K1, 576(DI)
	VMOVUPS Z13, K1, 624(DI)
	VMOVUPS Z14, K1, 672(DI)
	VMOVUPS Z15, K1, 720(DI)
	VZEROUPPER
	RET

// func spack12T(dst *float32, src *float32, lds int, kc int)
// Packs a 12-row GEMM panel from a transposed A: dst[p*12:p*12+12] =
// src[p*lds:p*lds+12] for p < kc, through masked loads and stores (the
// load reads no element past the 12th).
TEXT ·spack12T(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), BX
	SHLQ $2, BX
	MOVQ kc+24(FP), CX
	MOVL $0x0fff, AX
	KMOVW AX, K1
	CMPQ CX, $4
	JLT  tail
quad:
	VMOVUPS.Z (SI), K1, Z0
	ADDQ BX, SI
	VMOVUPS.Z (SI), K1, Z1
	ADDQ BX, SI
	VMOVUPS.Z (SI), K1, Z2
	ADDQ BX, SI
	VMOVUPS.Z (SI), K1, Z3
	ADDQ BX, SI
	VMOVUPS Z0, K1, (DI)
	VMOVUPS Z1, K1, 48(DI)
	VMOVUPS Z2, K1, 96(DI)
	VMOVUPS Z3, K1, 144(DI)
	ADDQ $192, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JGE  quad
tail:
	TESTQ CX, CX
	JEQ  done
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS Z0, K1, (DI)
	ADDQ BX, SI
	ADDQ $48, DI
	DECQ CX
	JMP  tail
done:
	VZEROUPPER
	RET

// TRANSPOSE8PD transposes the 8x8 float64 block in Z0-Z7 (row i in Zi)
// into Z0-Z7 through Z16-Z23, as TRANSPOSE16 does for float32: pairs of
// rows interleaved by 64 bits, then 128-bit lanes gathered by two rounds
// of VSHUFF64X2.
#define TRANSPOSE8PD \
	VUNPCKLPD Z1, Z0, Z16; \
	VUNPCKHPD Z1, Z0, Z17; \
	VUNPCKLPD Z3, Z2, Z18; \
	VUNPCKHPD Z3, Z2, Z19; \
	VUNPCKLPD Z5, Z4, Z20; \
	VUNPCKHPD Z5, Z4, Z21; \
	VUNPCKLPD Z7, Z6, Z22; \
	VUNPCKHPD Z7, Z6, Z23; \
	VSHUFF64X2 $0x44, Z18, Z16, Z0; \
	VSHUFF64X2 $0xee, Z18, Z16, Z1; \
	VSHUFF64X2 $0x44, Z22, Z20, Z2; \
	VSHUFF64X2 $0xee, Z22, Z20, Z3; \
	VSHUFF64X2 $0x44, Z19, Z17, Z4; \
	VSHUFF64X2 $0xee, Z19, Z17, Z5; \
	VSHUFF64X2 $0x44, Z23, Z21, Z6; \
	VSHUFF64X2 $0xee, Z23, Z21, Z7; \
	VSHUFF64X2 $0x88, Z2, Z0, Z16; \
	VSHUFF64X2 $0xdd, Z2, Z0, Z18; \
	VSHUFF64X2 $0x88, Z3, Z1, Z20; \
	VSHUFF64X2 $0xdd, Z3, Z1, Z22; \
	VSHUFF64X2 $0x88, Z6, Z4, Z17; \
	VSHUFF64X2 $0xdd, Z6, Z4, Z19; \
	VSHUFF64X2 $0x88, Z7, Z5, Z21; \
	VSHUFF64X2 $0xdd, Z7, Z5, Z23

// func dtrans12x8(dst *float64, src *float64, lds int)
// Packs a 12-row GEMM panel from 8 columns of A: dst[p*12+r] = src[r*lds+p]
// for r < 12, p < 8 (96 contiguous values): rows 0-7 as one 8x8
// transpose, rows 8-11 as another with four rows of zeros, each result row
// stored as 8 values and 4.
TEXT ·dtrans12x8(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), BX
	SHLQ $3, BX
	LOAD4(VMOVUPD, Z0, Z1, Z2, Z3)
	LOAD4(VMOVUPD, Z4, Z5, Z6, Z7)
	TRANSPOSE8PD
	VMOVUPD Z16, 0(DI)
	VMOVUPD Z17, 96(DI)
	VMOVUPD Z18, 192(DI)
	VMOVUPD Z19, 288(DI)
	VMOVUPD Z20, 384(DI)
	VMOVUPD Z21, 480(DI)
	VMOVUPD Z22, 576(DI)
	VMOVUPD Z23, 672(DI)
	LOAD4(VMOVUPD, Z0, Z1, Z2, Z3)
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	TRANSPOSE8PD
	VMOVUPD Y16, 64(DI)
	VMOVUPD Y17, 160(DI)
	VMOVUPD Y18, 256(DI)
	VMOVUPD Y19, 352(DI)
	VMOVUPD Y20, 448(DI)
	VMOVUPD Y21, 544(DI)
	VMOVUPD Y22, 640(DI)
	VMOVUPD Y23, 736(DI)
	VZEROUPPER
	RET
