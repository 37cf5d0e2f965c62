//go:build amd64 && !purego

#include "textflag.h"

// lanes is 0..15, each lane's offset from the group's first counter.
DATA lanes<>+0(SB)/4, $0
DATA lanes<>+4(SB)/4, $1
DATA lanes<>+8(SB)/4, $2
DATA lanes<>+12(SB)/4, $3
DATA lanes<>+16(SB)/4, $4
DATA lanes<>+20(SB)/4, $5
DATA lanes<>+24(SB)/4, $6
DATA lanes<>+28(SB)/4, $7
DATA lanes<>+32(SB)/4, $8
DATA lanes<>+36(SB)/4, $9
DATA lanes<>+40(SB)/4, $10
DATA lanes<>+44(SB)/4, $11
DATA lanes<>+48(SB)/4, $12
DATA lanes<>+52(SB)/4, $13
DATA lanes<>+56(SB)/4, $14
DATA lanes<>+60(SB)/4, $15
GLOBL lanes<>(SB), RODATA|NOPTR, $64

// MULHILO(X, M, HI, LO) sets LO to the low and HI to the high words of
// the sixteen 32x32-bit products X·M: the even lanes' by VPMULUDQ, the
// odd lanes' by VPMULUDQ of X shifted down, the high words merged under
// K1 (the odd lanes). Clobbers Z14 and Z15.
#define MULHILO(X, M, HI, LO) \
	VPMULLD   X, M, LO; \
	VPMULUDQ  X, M, HI; \
	VPSRLQ    $32, HI, HI; \
	VPSRLQ    $32, X, Z14; \
	VPMULUDQ  Z14, M, Z15; \
	VMOVDQA32 Z15, K1, HI

// ROUND is one round on the counters Z0-Z3 with the keys in R8 and R9
// (broadcast to Z4 and Z5), then the keys' increments.
#define ROUND \
	VPBROADCASTD R8, Z4; \
	VPBROADCASTD R9, Z5; \
	MULHILO(Z0, Z6, Z8, Z9); \
	MULHILO(Z2, Z7, Z10, Z11); \
	VPXORD       Z10, Z1, Z0; \
	VPXORD       Z4, Z0, Z0; \
	VPXORD       Z8, Z3, Z2; \
	VPXORD       Z5, Z2, Z2; \
	VMOVDQA32    Z11, Z1; \
	VMOVDQA32    Z9, Z3; \
	ADDL         $0x9E3779B9, R8; \
	ADDL         $0xBB67AE85, R9

// func fill16(key *[2]uint32, ctr uint64, out *uint32, groups int)
TEXT ·fill16(SB), NOSPLIT, $0-32
	MOVQ key+0(FP), SI
	MOVQ ctr+8(FP), AX
	MOVQ out+16(FP), DI
	MOVQ groups+24(FP), CX
	MOVL $0xD2511F53, DX
	VPBROADCASTD DX, Z6
	MOVL $0xCD9E8D57, DX
	VPBROADCASTD DX, Z7
	MOVL $0xAAAA, DX
	KMOVW DX, K1
	VMOVDQU32 lanes<>(SB), Z16
	MOVQ AX, BX
	SHRQ $32, BX            // the counter's high word, the same for every group
	VPBROADCASTD BX, Z17

group:
	TESTQ CX, CX
	JE    done
	VPBROADCASTD AX, Z0
	VPADDD       Z16, Z0, Z0 // low words: ctr + lane
	VMOVDQA32    Z17, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	MOVL (SI), R8
	MOVL 4(SI), R9
	ROUND
	ROUND
	ROUND
	ROUND
	ROUND
	ROUND
	ROUND
	ROUND
	ROUND
	ROUND

	// Lane b of Z0-Z3 is block b's four words: transpose to block order.
	VPUNPCKLDQ  Z1, Z0, Z8  // per 128 bits: c0[0] c1[0] c0[1] c1[1]
	VPUNPCKHDQ  Z1, Z0, Z9  // c0[2] c1[2] c0[3] c1[3]
	VPUNPCKLDQ  Z3, Z2, Z10 // c2[0] c3[0] c2[1] c3[1]
	VPUNPCKHDQ  Z3, Z2, Z11
	VPUNPCKLQDQ Z10, Z8, Z12 // blocks 0, 4, 8, 12 (a 128-bit chunk each)
	VPUNPCKHQDQ Z10, Z8, Z13 // blocks 1, 5, 9, 13
	VPUNPCKLQDQ Z11, Z9, Z14 // blocks 2, 6, 10, 14
	VPUNPCKHQDQ Z11, Z9, Z15 // blocks 3, 7, 11, 15
	VSHUFI32X4  $0x44, Z13, Z12, Z8  // 0 4 1 5
	VSHUFI32X4  $0xEE, Z13, Z12, Z9  // 8 12 9 13
	VSHUFI32X4  $0x44, Z15, Z14, Z10 // 2 6 3 7
	VSHUFI32X4  $0xEE, Z15, Z14, Z11 // 10 14 11 15
	VSHUFI32X4  $0x88, Z10, Z8, Z12  // 0 1 2 3
	VSHUFI32X4  $0xDD, Z10, Z8, Z13  // 4 5 6 7
	VSHUFI32X4  $0x88, Z11, Z9, Z14  // 8 9 10 11
	VSHUFI32X4  $0xDD, Z11, Z9, Z15  // 12 13 14 15
	VMOVDQU32   Z12, (DI)
	VMOVDQU32   Z13, 64(DI)
	VMOVDQU32   Z14, 128(DI)
	VMOVDQU32   Z15, 192(DI)

	ADDQ $256, DI
	ADDL $16, AX
	DECQ CX
	JMP  group

done:
	VZEROUPPER
	RET
