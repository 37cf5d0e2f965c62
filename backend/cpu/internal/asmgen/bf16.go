package main

import (
	"bytes"
	"fmt"
	"strings"
)

// The bfloat16 GEMM micro-kernel (gemm_bf16_amd64.s) for CPUs with
// AVX512_BF16: VDPBF16PS multiplies 16 pairs of bfloat16 values and adds
// each pair's two products to a float32 lane. Its Go signature:
//
//	func sbf16gemmAVX512x12(kp int, a, b *uint32, c *float32, ldc int)
//
// computes the 12x32 float32 tile C = A·B over kp pairs of k: a holds 12 pairs per step (a[p*12+r] is
// row r's values at k = 2p and 2p+1, the first in the low half), b 32
// pairs per step (b[p*32+j], column j's); C's rows are ldc float32 apart.

// bf16Rows and bf16Cols are the tile's shape.
const bf16Rows, bf16Cols = 12, 32

// evex512F3 encodes the AVX-512 instruction EVEX.512.F3.0F38.W0 op /r in
// its register form: dst (ModRM.reg), src1 (EVEX.vvvv; 0 where the
// instruction has none, which encodes as unused), src2 (ModRM.rm);
// registers 0-31. Go's assembler knows neither of the two it writes.
func evex512F3(op byte, dst, src1, src2 int) []byte {
	inv := func(v, bit int) byte { return byte(^(v >> bit) & 1) }
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b10 // mm = 0F38
	p1 := byte(^src1&0xF)<<3 | 1<<2 | 0b10                                           // W0, vvvv, pp = F3
	p2 := byte(0b10)<<5 | inv(src1, 4)<<3                                            // L'L = 512 bits, V'
	return []byte{0x62, p0, p1, p2, op, 0xC0 | byte(dst&7)<<3 | byte(src2&7)}
}

// vdpbf16ps is VDPBF16PS dst, src1, src2 on ZMM registers: dst += the
// pairwise products of src1's and src2's bfloat16 pairs.
func vdpbf16ps(dst, src1, src2 int) []byte { return evex512F3(0x52, dst, src1, src2) }

// vcvtneps2bf16 is VCVTNEPS2BF16 dst, src: ZMM src's 16 float32 rounded
// (to nearest even) to bfloat16 in YMM dst.
func vcvtneps2bf16(dst, src int) []byte { return evex512F3(0x72, dst, 0, src) }

// byteLine is a BYTE directive line of an instruction's encoding.
func byteLine(code []byte, comment string) string {
	var hex []string
	for _, b := range code {
		hex = append(hex, fmt.Sprintf("BYTE $0x%02x", b))
	}
	return "\t" + strings.Join(hex, "; ") + " // " + comment
}

// writeBF16Kernel writes the micro-kernel: A packed ([kp][12] pairs) or,
// where unpacked, read in place, its 12 rows lda pairs apart. The rounded
// kernel (unpacked) stores the tile rounded to bfloat16 by VCVTNEPS2BF16
// into C of ldc bfloat16 a row (writeRoundedStore).
func writeBF16Kernel(p func(string, ...any), unpacked, rounded bool) {
	name, args, frame := "sbf16gemmAVX512x12", "kp int, a, b *uint32, c *float32, ldc int", 40
	switch {
	case rounded:
		name, args, frame = "sbf16gemmAVX512x12ur", "kp int, a *uint32, lda int, b *uint32, c *uint16, ldc int", 48
	case unpacked:
		name, args, frame = "sbf16gemmAVX512x12u", "kp int, a *uint32, lda int, b *uint32, c *float32, ldc int", 48
	}
	p("// func %s(%s)", name, args)
	p("// AVX512_BF16: the %dx%d float32 tile C = A·B,", bf16Rows, bf16Cols)
	p("// over kp pairs of bfloat16 (Z0, Z1: B's step; Z2-Z7: A's broadcasts in")
	p("// turn; Z8-Z31: the accumulators, row r in Z(8+2r) and Z(9+2r)). Go's")
	p("// assembler has no VDPBF16PS: its bytes are written out.")
	if rounded {
		p("// The tile is stored rounded to bfloat16, C's rows ldc of them apart.")
	}
	if unpacked {
		p("// A is read in place: row r's pairs at a + r·lda (R8 = lda in bytes,")
		p("// R9, R11, R12 = 3, 5 and 7 of it; BX = row 8).")
	}
	p("TEXT ·%s(SB), NOSPLIT, $0-%d", name, frame)
	p("\tMOVQ kp+0(FP), CX")
	p("\tMOVQ a+8(FP), SI")
	off := 16
	if unpacked {
		p("\tMOVQ lda+16(FP), R8")
		p("\tSHLQ $2, R8")
		p("\tLEAQ (R8)(R8*2), R9")
		p("\tLEAQ (R8)(R8*4), R11")
		p("\tLEAQ (R9)(R8*4), R12")
		p("\tLEAQ (SI)(R8*8), BX")
		off = 24
	}
	p("\tMOVQ b+%d(FP), DI", off)
	p("\tMOVQ c+%d(FP), DX", off+8)
	p("\tMOVQ ldc+%d(FP), R10", off+16)
	if rounded {
		p("\tSHLQ $1, R10")
	} else {
		p("\tSHLQ $2, R10")
	}
	for z := 8; z < 32; z++ {
		p("\tVPXORD Z%d, Z%d, Z%d", z, z, z)
	}
	p("\tTESTQ CX, CX")
	p("\tJE    %s_store", name)
	p("")
	p("%s_loop:", name)
	p("\tVMOVUPS (DI), Z0")
	p("\tVMOVUPS 64(DI), Z1")
	rowAddr := []string{"(SI)", "(SI)(R8*1)", "(SI)(R8*2)", "(SI)(R9*1)", "(SI)(R8*4)", "(SI)(R11*1)",
		"(SI)(R9*2)", "(SI)(R12*1)", "(BX)", "(BX)(R8*1)", "(BX)(R8*2)", "(BX)(R9*1)"}
	for r := range bf16Rows {
		t := 2 + r%6
		addr := fmt.Sprintf("%d(SI)", 4*r)
		if unpacked {
			addr = rowAddr[r]
		}
		p("\tVPBROADCASTD %s, Z%d", addr, t)
		for v := range 2 {
			p("%s", byteLine(vdpbf16ps(8+2*r+v, t, v), fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", v, t, 8+2*r+v)))
		}
	}
	if unpacked {
		p("\tADDQ $4, SI")
		p("\tADDQ $4, BX")
	} else {
		p("\tADDQ $%d, SI", 4*bf16Rows)
	}
	p("\tADDQ $%d, DI", 4*bf16Cols)
	p("\tDECQ CX")
	p("\tJNE  %s_loop", name)
	p("")
	p("%s_store:", name)
	if rounded {
		writeRoundedStore(p)
		return
	}
	for r := range bf16Rows {
		p("\tVMOVUPS Z%d, (DX)", 8+2*r)
		p("\tVMOVUPS Z%d, 64(DX)", 9+2*r)
		p("\tADDQ R10, DX")
	}
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

// writeRoundedStore writes the rounded kernel's store: each row's 32 sums
// rounded (Y0, Y1, joined in Z0) and stored. VDPBF16PS flushes float32
// denormal results to zero, so no sum is one: VCVTNEPS2BF16, which reads
// them as zero, rounds every sum as tensor.ToBF16 does.
func writeRoundedStore(p func(string, ...any)) {
	for r := range bf16Rows {
		for v := range 2 {
			z := 8 + 2*r + v
			p("%s", byteLine(vcvtneps2bf16(v, z), fmt.Sprintf("VCVTNEPS2BF16 Z%d, Y%d", z, v)))
		}
		p("\tVINSERTI64X4 $1, Y1, Z0, Z0")
		p("\tVMOVDQU64 Z0, (DX)")
		p("\tADDQ R10, DX")
	}
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
}

// generateBF16 returns the text of gemm_bf16_amd64.s.
func generateBF16() []byte {
	var w bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&w, format+"\n", args...) }
	asmHeader(&w)
	p("")
	writeBF16Kernel(p, false, false)
	writeBF16Kernel(p, true, false)
	writeBF16Kernel(p, true, true)
	p("// func scvtbf16(dst *uint16, src *float32, n int) int")
	p("// AVX512_BF16: dst[i] = src[i] rounded to bfloat16 (nearest, ties to even;")
	p("// NaN quiet), n a multiple of 16; returns 1 where some src[i] is a float32")
	p("// denormal, which VCVTNEPS2BF16 reads as zero (the caller rounds those")
	p("// again), else 0. Z28-Z30 hold the denormal test's constants: |x| - 1 <")
	p("// 0x7fffff unsigned.")
	p("TEXT ·scvtbf16(SB), NOSPLIT, $0-32")
	p("\tMOVQ dst+0(FP), DI")
	p("\tMOVQ src+8(FP), SI")
	p("\tMOVQ n+16(FP), CX")
	p("\tXORQ AX, AX")
	p("\tMOVL $0x7fffffff, DX")
	p("\tVPBROADCASTD DX, Z30")
	p("\tMOVL $1, DX")
	p("\tVPBROADCASTD DX, Z29")
	p("\tMOVL $0x007fffff, DX")
	p("\tVPBROADCASTD DX, Z28")
	p("\tSHRQ $4, CX")
	p("\tJE   cvt_done")
	p("")
	p("cvt_loop:")
	p("\tVMOVUPS (SI), Z0")
	p("%s", byteLine(vcvtneps2bf16(1, 0), "VCVTNEPS2BF16 Z0, Y1"))
	p("\tVMOVDQU Y1, (DI)")
	p("\tVPANDD Z30, Z0, Z2")
	p("\tVPSUBD Z29, Z2, Z2")
	p("\tVPCMPUD $1, Z28, Z2, K1")
	p("\tKORTESTW K1, K1")
	p("\tJE   cvt_next")
	p("\tMOVQ $1, AX")
	p("")
	p("cvt_next:")
	p("\tADDQ $64, SI")
	p("\tADDQ $32, DI")
	p("\tDECQ CX")
	p("\tJNE  cvt_loop")
	p("")
	p("cvt_done:")
	p("\tVZEROUPPER")
	p("\tMOVQ AX, ret+24(FP)")
	p("\tRET")
	p("")
	p("// func swidenbf16(dst *float32, src *uint16, n int)")
	p("// AVX-512: dst[i] = src[i] widened from bfloat16 (its bits moved to the")
	p("// top half), n a multiple of 16.")
	p("TEXT ·swidenbf16(SB), NOSPLIT, $0-24")
	p("\tMOVQ dst+0(FP), DI")
	p("\tMOVQ src+8(FP), SI")
	p("\tMOVQ n+16(FP), CX")
	p("\tSHRQ $4, CX")
	p("\tJE   widen_done")
	p("")
	p("widen_loop:")
	p("\tVPMOVZXWD (SI), Z0")
	p("\tVPSLLD $16, Z0, Z0")
	p("\tVMOVUPS Z0, (DI)")
	p("\tADDQ $32, SI")
	p("\tADDQ $64, DI")
	p("\tDECQ CX")
	p("\tJNE  widen_loop")
	p("")
	p("widen_done:")
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
	pairsBF16(p)
	return w.Bytes()
}

// pairsBF16 writes spairsbf16, the packing of an operand whose pairs lie
// two rows apart: for each of pairs steps, count values of row 2p and row
// 2p+1 (stride elements apart) joined into 32-bit words, the first row's
// in the low half; 16 at a time, the last count%16 under a mask (masked
// lanes neither read nor written).
func pairsBF16(p func(string, ...any)) {
	p("// func spairsbf16(dst *uint32, width int, src *uint16, stride, count, pairs int)")
	p("// AVX-512: dst[q*width+l] = src[2q*stride+l] | src[(2q+1)*stride+l]<<16")
	p("// for q < pairs, l < count.")
	p("TEXT ·spairsbf16(SB), NOSPLIT, $0-48")
	p("\tMOVQ dst+0(FP), DI")
	p("\tMOVQ width+8(FP), R8")
	p("\tMOVQ src+16(FP), SI")
	p("\tMOVQ stride+24(FP), R9")
	p("\tMOVQ count+32(FP), R10")
	p("\tMOVQ pairs+40(FP), R11")
	p("\tTESTQ R11, R11")
	p("\tJE   pairs_done")
	p("\tTESTQ R10, R10")
	p("\tJE   pairs_done")
	p("\tSHLQ $2, R8 // bytes between steps of dst")
	p("\tSHLQ $1, R9 // bytes between rows of src")
	p("\tMOVQ R10, CX")
	p("\tANDQ $15, CX")
	p("\tMOVL $1, AX")
	p("\tSHLL CX, AX")
	p("\tDECL AX")
	p("\tKMOVW AX, K1 // the last (count mod 16) lanes")
	p("\tSHRQ $4, R10 // whole vectors per step")
	p("")
	p("pairs_step:")
	p("\tMOVQ SI, AX")
	p("\tLEAQ (SI)(R9*1), BX")
	p("\tMOVQ DI, DX")
	p("\tMOVQ R10, CX")
	p("\tTESTQ CX, CX")
	p("\tJE   pairs_tail")
	p("")
	p("pairs_vec:")
	p("\tVPMOVZXWD (AX), Z0")
	p("\tVPMOVZXWD (BX), Z1")
	p("\tVPSLLD $16, Z1, Z1")
	p("\tVPORD Z1, Z0, Z0")
	p("\tVMOVDQU32 Z0, (DX)")
	p("\tADDQ $32, AX")
	p("\tADDQ $32, BX")
	p("\tADDQ $64, DX")
	p("\tDECQ CX")
	p("\tJNE  pairs_vec")
	p("")
	p("pairs_tail:")
	p("\tKORTESTW K1, K1")
	p("\tJE   pairs_next")
	p("\tVPMOVZXWD.Z (AX), K1, Z0")
	p("\tVPMOVZXWD.Z (BX), K1, Z1")
	p("\tVPSLLD $16, Z1, Z1")
	p("\tVPORD Z1, Z0, Z0")
	p("\tVMOVDQU32 Z0, K1, (DX)")
	p("")
	p("pairs_next:")
	p("\tADDQ R8, DI")
	p("\tLEAQ (SI)(R9*2), SI")
	p("\tDECQ R11")
	p("\tJNE  pairs_step")
	p("")
	p("pairs_done:")
	p("\tVZEROUPPER")
	p("\tRET")
}
