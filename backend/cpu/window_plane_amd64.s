//go:build amd64 && !purego

#include "textflag.h"
#include "window_amd64.h"

// The 2x2 stride-2 max pooling kernels of window_plane.go, eight windows
// at a time.

// TAPS2X2 loads the taps of eight 2x2 windows with stride 2 from the rows
// at SI and R9 into Y2 (row 0's even columns), Y3 (its odd ones), Y4 and
// Y5 (row 1's), and jumps to NAN if any tap is NaN (Y0, Y1, Y6, Y7 and BX
// are scratch). SHUFPS orders the windows 0,1,4,5 | 2,3,6,7 in the 128-bit
// lanes.
#define TAPS2X2(NAN) \
	VMOVUPS   (SI), Y0 \
	VMOVUPS   32(SI), Y1 \
	VSHUFPS   $0x88, Y1, Y0, Y2 \
	VSHUFPS   $0xdd, Y1, Y0, Y3 \
	VMOVUPS   (R9), Y0 \
	VMOVUPS   32(R9), Y1 \
	VSHUFPS   $0x88, Y1, Y0, Y4 \
	VSHUFPS   $0xdd, Y1, Y0, Y5 \
	VCMPPS    $3, Y3, Y2, Y6 \
	VCMPPS    $3, Y5, Y4, Y7 \
	VORPS     Y7, Y6, Y6 \
	VMOVMSKPS Y6, BX \
	TESTL     BX, BX \
	JNE       NAN

// tailmask<> is eight -1s then eight 0s: the eight int32s from
// tailmask<>+32-4k are a mask of k lanes (0 <= k <= 8).
DATA tailmask<>+0(SB)/8, $-1
DATA tailmask<>+8(SB)/8, $-1
DATA tailmask<>+16(SB)/8, $-1
DATA tailmask<>+24(SB)/8, $-1
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// TAILMASKS points R12 at the mask of the CX (1 to 7) windows of a last,
// short block, and R10 and R11 at the masks of its 2·CX taps in a row's
// first and second eight columns (BX is scratch).
#define TAILMASKS \
	LEAQ    tailmask<>+32(SB), R10 \
	MOVQ    CX, BX \
	SHLQ    $2, BX \
	MOVQ    R10, R12 \
	SUBQ    BX, R12 \
	MOVQ    CX, R11 \
	SHLQ    $1, R11 \
	MOVQ    $8, BX \
	CMPQ    R11, BX \
	CMOVQLT R11, BX \
	SUBQ    BX, R11 \
	SHLQ    $2, BX \
	SHLQ    $2, R11 \
	NEGQ    R11 \
	ADDQ    R10, R11 \
	SUBQ    BX, R10

// TAPS2X2M is TAPS2X2 for a short block: the taps past the block read as
// zeros through the masks at R10 and R11 (Y15 is scratch), and nothing
// past the rows' ends is touched.
#define TAPS2X2M(NAN) \
	VMOVUPS    (R10), Y15 \
	VMASKMOVPS (SI), Y15, Y0 \
	VMASKMOVPS (R9), Y15, Y6 \
	VMOVUPS    (R11), Y15 \
	VMASKMOVPS 32(SI), Y15, Y1 \
	VMASKMOVPS 32(R9), Y15, Y7 \
	VSHUFPS    $0x88, Y1, Y0, Y2 \
	VSHUFPS    $0xdd, Y1, Y0, Y3 \
	VSHUFPS    $0x88, Y7, Y6, Y4 \
	VSHUFPS    $0xdd, Y7, Y6, Y5 \
	VCMPPS     $3, Y3, Y2, Y6 \
	VCMPPS     $3, Y5, Y4, Y7 \
	VORPS      Y7, Y6, Y6 \
	VMOVMSKPS  Y6, BX \
	TESTL      BX, BX \
	JNE        NAN

// func smaxscatter2x2(out0, out1, r0, r1, src *float32, n int) int
// The backward of a 2x2 max pool with stride 2 over one output row, eight
// windows at a time: window j's taps are r0[2j], r0[2j+1], r1[2j],
// r1[2j+1], and src[j] is added to out0 or out1 at its first tap equal to
// the window's maximum (the others are left as they are). It returns how
// many windows it did: all n, the last 1 to 7 through masked loads and
// stores, or fewer, stopping before the first block of eight with a NaN
// tap (the Go loop takes those, NaN ranks first there).
// src is permuted to TAPS2X2's window order, and UNPCKLPS/UNPCKHPS restore
// the taps' order.
TEXT ·smaxscatter2x2(SB), NOSPLIT, $0-56
	MOVQ out0+0(FP), DI
	MOVQ out1+8(FP), R8
	MOVQ r0+16(FP), SI
	MOVQ r1+24(FP), R9
	MOVQ src+32(FP), DX
	MOVQ n+40(FP), CX
	XORQ AX, AX

msloop:
	CMPQ CX, $8
	JL   mstail
	TAPS2X2(msdone)

	VMAXPS  Y3, Y2, Y6
	VMAXPS  Y5, Y4, Y7
	VMAXPS  Y7, Y6, Y6        // best
	VCMPPS  $0, Y6, Y2, Y8    // ma = a == best
	VCMPPS  $0, Y6, Y3, Y9
	VANDNPS Y9, Y8, Y9        // mb = b == best, not a
	VORPS   Y9, Y8, Y10       // taken
	VCMPPS  $0, Y6, Y4, Y11
	VANDNPS Y11, Y10, Y11     // mc = c == best, not a or b
	VORPS   Y11, Y10, Y10
	VCMPPS  $0, Y6, Y6, Y12   // all ones (no NaN here)
	VANDNPS Y12, Y10, Y10     // md = the rest

	VMOVUPS (DX), Y12
	VPERMQ  $0xd8, Y12, Y12   // src in the lanes' window order
	VUNPCKLPS Y12, Y12, Y13   // each window's value for both its columns
	VUNPCKHPS Y12, Y12, Y14

	VUNPCKLPS Y9, Y8, Y0      // row 0's masks in tap order
	VUNPCKHPS Y9, Y8, Y1
	VMOVUPS   (DI), Y2
	VADDPS    Y13, Y2, Y3
	VBLENDVPS Y0, Y3, Y2, Y2
	VMOVUPS   Y2, (DI)
	VMOVUPS   32(DI), Y2
	VADDPS    Y14, Y2, Y3
	VBLENDVPS Y1, Y3, Y2, Y2
	VMOVUPS   Y2, 32(DI)

	VUNPCKLPS Y10, Y11, Y0    // row 1's
	VUNPCKHPS Y10, Y11, Y1
	VMOVUPS   (R8), Y2
	VADDPS    Y13, Y2, Y3
	VBLENDVPS Y0, Y3, Y2, Y2
	VMOVUPS   Y2, (R8)
	VMOVUPS   32(R8), Y2
	VADDPS    Y14, Y2, Y3
	VBLENDVPS Y1, Y3, Y2, Y2
	VMOVUPS   Y2, 32(R8)

	ADDQ $64, SI
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $32, DX
	ADDQ $8, AX
	SUBQ $8, CX
	JMP  msloop

mstail:
	// The last 1 to 7 windows, as above through masks.
	TESTQ CX, CX
	JE    msdone
	TAILMASKS
	TAPS2X2M(msdone)

	VMAXPS  Y3, Y2, Y6
	VMAXPS  Y5, Y4, Y7
	VMAXPS  Y7, Y6, Y6
	VCMPPS  $0, Y6, Y2, Y8
	VCMPPS  $0, Y6, Y3, Y9
	VANDNPS Y9, Y8, Y9
	VORPS   Y9, Y8, Y10
	VCMPPS  $0, Y6, Y4, Y11
	VANDNPS Y11, Y10, Y11
	VORPS   Y11, Y10, Y10
	VCMPPS  $0, Y6, Y6, Y12
	VANDNPS Y12, Y10, Y10

	VMOVUPS    (R12), Y15
	VMASKMOVPS (DX), Y15, Y12
	VPERMQ     $0xd8, Y12, Y12
	VUNPCKLPS  Y12, Y12, Y13
	VUNPCKHPS  Y12, Y12, Y14

	VMOVUPS    (R10), Y15
	VUNPCKLPS  Y9, Y8, Y0
	VUNPCKHPS  Y9, Y8, Y1
	VMASKMOVPS (DI), Y15, Y2
	VADDPS     Y13, Y2, Y3
	VBLENDVPS  Y0, Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, (DI)
	VUNPCKLPS  Y10, Y11, Y0
	VUNPCKHPS  Y10, Y11, Y1
	VMASKMOVPS (R8), Y15, Y2
	VADDPS     Y13, Y2, Y3
	VBLENDVPS  Y0, Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, (R8)
	VMOVUPS    (R11), Y15
	VUNPCKHPS  Y9, Y8, Y1
	VMASKMOVPS 32(DI), Y15, Y2
	VADDPS     Y14, Y2, Y3
	VBLENDVPS  Y1, Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, 32(DI)
	VUNPCKHPS  Y10, Y11, Y1
	VMASKMOVPS 32(R8), Y15, Y2
	VADDPS     Y14, Y2, Y3
	VBLENDVPS  Y1, Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, 32(R8)
	ADDQ       CX, AX

msdone:
	VZEROUPPER
	MOVQ AX, ret+48(FP)
	RET

// GOMAX sets D to the larger of A and B as Go's max does for ordered
// values (max(-0, +0) is +0): MAXPS returns its second operand for two
// zeros, so both orders are taken and ANDed (T is scratch).
#define GOMAX(A, B, T, D) \
	VMAXPS A, B, T \
	VMAXPS B, A, D \
	VANDPS T, D, D

// func smaxpool2x2(o, r0, r1 *float32, init float32, n int) int
// A 2x2 max pool with stride 2 over one output row, eight windows at a
// time: o[j] = max(init, r0[2j], r0[2j+1], r1[2j], r1[2j+1]). It returns
// how many windows it did: all n (the last 1 to 7 through masks), or
// fewer, stopping before the first block with a NaN tap (the Go loop
// takes it; init must not be NaN).
// VPERMQ $0xd8 puts TAPS2X2's window order back.
TEXT ·smaxpool2x2(SB), NOSPLIT, $0-48
	MOVQ         o+0(FP), DI
	MOVQ         r0+8(FP), SI
	MOVQ         r1+16(FP), R9
	VBROADCASTSS init+24(FP), Y8
	MOVQ         n+32(FP), CX
	XORQ         AX, AX

mploop:
	CMPQ CX, $8
	JL   mptail
	TAPS2X2(mpdone)
	GOMAX(Y2, Y3, Y6, Y0)
	GOMAX(Y4, Y5, Y6, Y1)
	GOMAX(Y0, Y1, Y6, Y2)
	GOMAX(Y2, Y8, Y6, Y3)
	VPERMQ    $0xd8, Y3, Y3
	VMOVUPS   Y3, (DI)
	ADDQ      $64, SI
	ADDQ      $64, R9
	ADDQ      $32, DI
	ADDQ      $8, AX
	SUBQ      $8, CX
	JMP       mploop

mptail:
	// The last 1 to 7 windows, through masks.
	TESTQ      CX, CX
	JE         mpdone
	TAILMASKS
	TAPS2X2M(mpdone)
	GOMAX(Y2, Y3, Y6, Y0)
	GOMAX(Y4, Y5, Y6, Y1)
	GOMAX(Y0, Y1, Y6, Y2)
	GOMAX(Y2, Y8, Y6, Y3)
	VPERMQ     $0xd8, Y3, Y3
	VMOVUPS    (R12), Y15
	VMASKMOVPS Y3, Y15, (DI)
	ADDQ       CX, AX

mpdone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

// func smaxcols(best *float32, first *int32, x *float32, taps *int, ntaps, n int) int
// For each column k < n, eight at a time: best[k] = the largest of
// x[taps[t]+k] over the taps (ntaps of them, at least one), first[k] =
// the first t holding it. It returns how many columns it did, a multiple
// of 8, stopping before the first block with a NaN (the Go loop takes
// those).
TEXT ·smaxcols(SB), NOSPLIT, $0-56
	MOVQ best+0(FP), DI
	MOVQ first+8(FP), R11
	MOVQ x+16(FP), SI
	MOVQ taps+24(FP), BX
	MOVQ ntaps+32(FP), R12
	MOVQ n+40(FP), CX
	XORQ AX, AX

colloop:
	CMPQ CX, $8
	JL   coldone
	TAPSMAX(colmax, colmaxed, coldone)
	MOVQ         R12, R9
	DECQ         R9
	MOVQ         R9, X9
	VPBROADCASTD X9, Y6       // the first tap holding it, from the last down

colfirst:
	DECQ         R9
	JL           colstore
	MOVQ         (BX)(R9*8), R10
	VMOVUPS      (SI)(R10*4), Y1
	VCMPPS       $0, Y0, Y1, Y2
	MOVQ         R9, X9
	VPBROADCASTD X9, Y7
	VBLENDVPS    Y2, Y7, Y6, Y6
	JMP          colfirst

colstore:
	VMOVUPS Y0, (DI)
	VMOVDQU Y6, (R11)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R11
	ADDQ    $8, AX
	SUBQ    $8, CX
	JMP     colloop

coldone:
	VZEROUPPER
	MOVQ AX, ret+48(FP)
	RET

// func spickwin(at *int32, best *float32, first *int32, taps *int, ntaps, n int) int
// For each window k < n, eight at a time, over the columns' extremes
// (best) and where each first is (first), its columns at offsets
// taps[t]+k: at[k] = the least first of the columns holding the largest
// best. It returns how many windows it did, a multiple of 8, stopping
// before the first block with a NaN (the Go loop takes those).
TEXT ·spickwin(SB), NOSPLIT, $0-56
	MOVQ at+0(FP), DI
	MOVQ best+8(FP), SI
	MOVQ first+16(FP), DX
	MOVQ taps+24(FP), BX
	MOVQ ntaps+32(FP), R12
	MOVQ n+40(FP), CX
	XORQ AX, AX

pwloop:
	CMPQ CX, $8
	JL   pwdone
	TAPSMAX(pwmax, pwmaxed, pwdone)
	VPCMPEQD Y8, Y8, Y8
	VPSRLD   $1, Y8, Y8       // the least first so far: none, the largest int32
	XORQ     R9, R9

pwpick:
	MOVQ      (BX)(R9*8), R10
	VMOVUPS   (SI)(R10*4), Y1
	VCMPPS    $0, Y0, Y1, Y2  // the columns holding it
	VMOVDQU   (DX)(R10*4), Y3
	VPMINSD   Y3, Y8, Y4
	VBLENDVPS Y2, Y4, Y8, Y8
	INCQ      R9
	CMPQ      R9, R12
	JL        pwpick

	VMOVDQU Y8, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	ADDQ    $8, AX
	SUBQ    $8, CX
	JMP     pwloop

pwdone:
	VZEROUPPER
	MOVQ AX, ret+48(FP)
	RET
