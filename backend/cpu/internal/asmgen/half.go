package main

import (
	"bytes"
	"fmt"
)

// generateHalf returns the text of half_amd64.s: float16 <-> float32
// conversions on AVX-512F's VCVTPH2PS and VCVTPS2PH (the F16C
// instructions' 16-lane forms), 16 values a step:
//
//	func swidenf16(dst *float32, src *uint16, n int)
//	func snarrowf16(dst *uint16, src *float32, n int)
//
// n a multiple of 16. Both give tensor.F16's Go conversions to the bit:
// VCVTPS2PH rounds to nearest even (immediate 0) and keeps a NaN's top
// payload, quieted, as tensor.ToF16 does; VCVTPH2PS is exact and quiets a
// signalling NaN, as F16.Float32 does.
func generateHalf() []byte {
	var w bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&w, format+"\n", args...) }
	asmHeader(&w)
	p("")
	p("// func swidenf16(dst *float32, src *uint16, n int)")
	p("// AVX-512F: dst[i] = src[i] widened from float16, exactly (a NaN quiet,")
	p("// its payload kept).")
	p("TEXT ·swidenf16(SB), NOSPLIT, $0-24")
	p("\tMOVQ dst+0(FP), DI")
	p("\tMOVQ src+8(FP), SI")
	p("\tMOVQ n+16(FP), CX")
	p("\tSHRQ $4, CX")
	p("\tJE   widenf16_done")
	p("")
	p("widenf16_loop:")
	p("\tVCVTPH2PS (SI), Z0")
	p("\tVMOVUPS Z0, (DI)")
	p("\tADDQ $32, SI")
	p("\tADDQ $64, DI")
	p("\tDECQ CX")
	p("\tJNE  widenf16_loop")
	p("")
	p("widenf16_done:")
	p("\tVZEROUPPER")
	p("\tRET")
	p("")
	p("// func snarrowf16(dst *uint16, src *float32, n int)")
	p("// AVX-512F: dst[i] = src[i] rounded to float16 (nearest, ties to even;")
	p("// past 65519.99 infinity; NaN quiet with its payload's top bits).")
	p("TEXT ·snarrowf16(SB), NOSPLIT, $0-24")
	p("\tMOVQ dst+0(FP), DI")
	p("\tMOVQ src+8(FP), SI")
	p("\tMOVQ n+16(FP), CX")
	p("\tSHRQ $4, CX")
	p("\tJE   narrowf16_done")
	p("")
	p("narrowf16_loop:")
	p("\tVMOVUPS (SI), Z0")
	p("\tVCVTPS2PH $0, Z0, Y1")
	p("\tVMOVDQU Y1, (DI)")
	p("\tADDQ $64, SI")
	p("\tADDQ $32, DI")
	p("\tDECQ CX")
	p("\tJNE  narrowf16_loop")
	p("")
	p("narrowf16_done:")
	p("\tVZEROUPPER")
	p("\tRET")
	return w.Bytes()
}
