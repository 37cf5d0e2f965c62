//go:build amd64 && !purego

#include "textflag.h"
#include "window_amd64.h"

// The 2x2 max pooling kernels of window_chan.go (NHWC), eight channels at
// a time: a window's four taps are four vectors of channels, at a, b (the
// next column), c (the next row) and d.

// TAPS4 loads eight channels of the four taps, a (SI), b (R8), c (R9)
// and d (R10), into Y0-Y3, and jumps to NAN if any lane is NaN (Y4, Y5
// and BX are scratch).
#define TAPS4(NAN) \
	VMOVUPS   (SI), Y0 \
	VMOVUPS   (R8), Y1 \
	VMOVUPS   (R9), Y2 \
	VMOVUPS   (R10), Y3 \
	VCMPPS    $3, Y1, Y0, Y4 \
	VCMPPS    $3, Y3, Y2, Y5 \
	VORPS     Y5, Y4, Y4 \
	VMOVMSKPS Y4, BX \
	TESTL     BX, BX \
	JNZ       NAN

// GOMAX sets D to the larger of A and B as Go's max does for ordered
// values (max(-0, +0) is +0; T is scratch).
#define GOMAX(A, B, T, D) \
	VMAXPS A, B, T \
	VMAXPS B, A, D \
	VANDPS T, D, D

// func smaxchan2x2(o, a, b, c, d *float32, init float32, n int) int
// o[k] = max(init, a[k], b[k], c[k], d[k]) for k < n, eight at a time. It
// returns how many it did, a multiple of 8, stopping before the first
// block with a NaN tap (the Go loop takes it; init must not be NaN).
TEXT ·smaxchan2x2(SB), NOSPLIT, $0-64
	MOVQ         o+0(FP), DI
	MOVQ         a+8(FP), SI
	MOVQ         b+16(FP), R8
	MOVQ         c+24(FP), R9
	MOVQ         d+32(FP), R10
	VBROADCASTSS init+40(FP), Y8
	MOVQ         n+48(FP), CX
	XORQ         AX, AX

mcloop:
	CMPQ    CX, $8
	JL      mcdone
	TAPS4(mcdone)
	GOMAX(Y0, Y1, Y6, Y4)
	GOMAX(Y2, Y3, Y6, Y5)
	GOMAX(Y4, Y5, Y6, Y0)
	GOMAX(Y0, Y8, Y6, Y1)
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	ADDQ    $32, R10
	ADDQ    $32, DI
	ADDQ    $8, AX
	SUBQ    $8, CX
	JMP     mcloop

mcdone:
	VZEROUPPER
	MOVQ AX, ret+56(FP)
	RET

// ADDWHERE adds Y10 (the source values) to the n floats at P in the lanes
// of mask M (Y11 and Y12 are scratch).
#define ADDWHERE(P, M) \
	VMOVUPS   (P), Y11 \
	VADDPS    Y10, Y11, Y12 \
	VBLENDVPS M, Y12, Y11, Y11 \
	VMOVUPS   Y11, (P)

// func smaxscatterchan2x2(oa, ob, oc, od, a, b, c, d, src *float32, n int) int
// The backward of chanScatter's 2x2 max window, eight channels at a time:
// src[k] is added to oa[k], ob[k], oc[k] or od[k], at the first of the taps
// a[k], b[k], c[k], d[k] equal to their maximum. It returns how many
// channels it did, a multiple of 8, stopping before the first block with a
// NaN tap (the Go loop takes those, NaN ranking first there).
TEXT ·smaxscatterchan2x2(SB), NOSPLIT, $0-88
	MOVQ oa+0(FP), DI
	MOVQ ob+8(FP), R11
	MOVQ oc+16(FP), R12
	MOVQ od+24(FP), R13
	MOVQ a+32(FP), SI
	MOVQ b+40(FP), R8
	MOVQ c+48(FP), R9
	MOVQ d+56(FP), R10
	MOVQ src+64(FP), DX
	MOVQ n+72(FP), CX
	XORQ AX, AX

scloop:
	CMPQ    CX, $8
	JL      scdone
	TAPS4(scdone)

	VMAXPS  Y1, Y0, Y4
	VMAXPS  Y3, Y2, Y5
	VMAXPS  Y5, Y4, Y4        // best
	VCMPPS  $0, Y4, Y0, Y5    // ma = a == best
	VCMPPS  $0, Y4, Y1, Y6
	VANDNPS Y6, Y5, Y6        // mb = b == best, not a
	VORPS   Y6, Y5, Y7        // taken
	VCMPPS  $0, Y4, Y2, Y8
	VANDNPS Y8, Y7, Y8        // mc = c == best, not a or b
	VORPS   Y8, Y7, Y7
	VCMPPS  $0, Y4, Y4, Y9    // all ones (no NaN here)
	VANDNPS Y9, Y7, Y9        // md = the rest

	VMOVUPS (DX), Y10
	ADDWHERE(DI, Y5)
	ADDWHERE(R11, Y6)
	ADDWHERE(R12, Y8)
	ADDWHERE(R13, Y9)

	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, DX
	ADDQ $8, AX
	SUBQ $8, CX
	JMP  scloop

scdone:
	VZEROUPPER
	MOVQ AX, ret+80(FP)
	RET

// The kernels of windows of any shape: taps (ntaps of them, at least one)
// holds the element offsets of a window's taps from x (and out).

// func smaxchantaps(o, x *float32, taps *int, ntaps int, init float32, n int) int
// o[k] = max(init, x[taps[t]+k] for every t) for k < n, eight at a time.
// It returns how many it did, a multiple of 8, stopping before the first
// block with a NaN tap (the Go loop takes it; init must not be NaN).
TEXT ·smaxchantaps(SB), NOSPLIT, $0-56
	MOVQ         o+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         taps+16(FP), BX
	MOVQ         ntaps+24(FP), R12
	VBROADCASTSS init+32(FP), Y8
	MOVQ         n+40(FP), CX
	XORQ         AX, AX

mtloop:
	CMPQ   CX, $8
	JL     mtdone
	VMOVUPS Y8, Y0            // the maximum so far
	VXORPS Y5, Y5, Y5         // the lanes with a NaN tap
	XORQ   R9, R9

mttap:
	MOVQ    (BX)(R9*8), R10
	VMOVUPS (SI)(R10*4), Y1
	VCMPPS  $3, Y1, Y1, Y4
	VORPS   Y4, Y5, Y5
	GOMAX(Y0, Y1, Y6, Y0)
	INCQ    R9
	CMPQ    R9, R12
	JL      mttap

	VMOVMSKPS Y5, R10
	TESTL     R10, R10
	JNZ       mtdone
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $8, AX
	SUBQ      $8, CX
	JMP       mtloop

mtdone:
	VZEROUPPER
	MOVQ AX, ret+48(FP)
	RET

// func smaxscatterchantaps(out, x, src *float32, taps *int, ntaps, n int) int
// The backward of a max window of any shape, eight channels at a time:
// src[k] is added to out[taps[t]+k] for the first t whose tap
// x[taps[t]+k] equals the taps' maximum. It returns how many channels it
// did, a multiple of 8, stopping before the first block with a NaN tap
// (the Go loop takes those, NaN ranking first there).
TEXT ·smaxscatterchantaps(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ src+16(FP), DX
	MOVQ taps+24(FP), BX
	MOVQ ntaps+32(FP), R12
	MOVQ n+40(FP), CX
	XORQ AX, AX

stloop:
	CMPQ CX, $8
	JL   stdone
	TAPSMAX(stmax, stmaxed, stdone)
	VMOVUPS   (DX), Y10
	VXORPS    Y7, Y7, Y7      // the lanes taken
	XORQ      R9, R9

stput:
	MOVQ    (BX)(R9*8), R10
	VMOVUPS (SI)(R10*4), Y1
	VCMPPS  $0, Y0, Y1, Y2    // tap == best
	VANDNPS Y2, Y7, Y2        // and not taken before
	VORPS   Y2, Y7, Y7
	LEAQ    (DI)(R10*4), R11
	ADDWHERE(R11, Y2)
	INCQ    R9
	CMPQ    R9, R12
	JL      stput

	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $8, AX
	SUBQ $8, CX
	JMP  stloop

stdone:
	VZEROUPPER
	MOVQ AX, ret+48(FP)
	RET
