// The shared part of the window kernels over a list of taps
// (window_chan_amd64.s, window_plane_amd64.s).

// TAPSMAX sets Y0 to the largest of the eight floats at SI+4*taps[t] over
// t < R12, the taps (element offsets) at BX, at least one, and jumps to
// NAN where a lane of one is NaN. LOOP and DONE are labels of its own; R9,
// R10, Y1, Y4 and Y5 are scratch.
#define TAPSMAX(LOOP, DONE, NAN) \
	MOVQ      (BX), R10 \
	VMOVUPS   (SI)(R10*4), Y0 \
	VCMPPS    $3, Y0, Y0, Y5 \
	MOVQ      $1, R9 \
LOOP: \
	CMPQ      R9, R12 \
	JGE       DONE \
	MOVQ      (BX)(R9*8), R10 \
	VMOVUPS   (SI)(R10*4), Y1 \
	VCMPPS    $3, Y1, Y1, Y4 \
	VORPS     Y4, Y5, Y5 \
	VMAXPS    Y1, Y0, Y0 \
	INCQ      R9 \
	JMP       LOOP \
DONE: \
	VMOVMSKPS Y5, R10 \
	TESTL     R10, R10 \
	JNZ       NAN
