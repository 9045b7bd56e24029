//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 loops of MaxPoolArgmax's float32 fast path (maxpool.go), each
// the same, element by element, as its Go loop there.

// KEYS8 turns the 8 floats in Y0 into their order keys in Y0 (maxKey32:
// |v|'s bits, negated for a negative sign; −0 → 0) and ORs into Y7 the
// lanes that hold a NaN (|v|'s bits above +Inf's). Y8 holds 0x7fffffff,
// Y9 0x7f800000 in every lane; Y1 is clobbered.
#define KEYS8 \
	VPAND    Y8, Y0, Y1 \
	VPSIGND  Y0, Y1, Y0 \
	VPCMPGTD Y9, Y1, Y1 \
	VPOR     Y1, Y7, Y7

// CONSTS sets Y8, Y9 for KEYS8 and clears Y7.
#define CONSTS \
	MOVL         $0x7fffffff, AX \
	MOVQ         AX, X8 \
	VPBROADCASTD X8, Y8 \
	MOVL         $0x7f800000, AX \
	MOVQ         AX, X9 \
	VPBROADCASTD X9, Y9 \
	VPXOR        Y7, Y7, Y7

// func maxPoolKeys1(phase *int32, row *float32, n int) uint32
//
// phase[c] = key of row[c] for c < n (n a positive multiple of 8);
// nonzero if one of them is NaN.
TEXT ·maxPoolKeys1(SB), NOSPLIT, $0-28
	MOVQ phase+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX
	CONSTS
	XORQ DX, DX

keys1:
	VMOVDQU (SI)(DX*4), Y0
	KEYS8
	VMOVDQU Y0, (DI)(DX*4)
	ADDQ    $8, DX
	CMPQ    DX, CX
	JLT     keys1
	VMOVMSKPS Y7, AX
	MOVL      AX, ret+24(FP)
	VZEROUPPER
	RET

// func maxPoolKeys2(phase *int32, row *float32, n, pl int) uint32
//
// The keys of row[c] for c < n (n a positive multiple of 16) split by
// column phase: phase[c/2] for even c, phase[pl + c/2] for odd c;
// nonzero if one of them is NaN.
TEXT ·maxPoolKeys2(SB), NOSPLIT, $0-36
	MOVQ phase+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ pl+24(FP), BX
	LEAQ (DI)(BX*4), BX
	SHRQ $1, CX
	CONSTS
	XORQ DX, DX

keys2:
	VMOVDQU (SI)(DX*8), Y0
	KEYS8
	VMOVDQA Y0, Y2
	VMOVDQU 32(SI)(DX*8), Y0
	KEYS8
	VSHUFPS $0x88, Y0, Y2, Y3
	VSHUFPS $0xDD, Y0, Y2, Y4
	VPERMQ  $0xD8, Y3, Y3
	VPERMQ  $0xD8, Y4, Y4
	VMOVDQU Y3, (DI)(DX*4)
	VMOVDQU Y4, (BX)(DX*4)
	ADDQ    $8, DX
	CMPQ    DX, CX
	JLT     keys2
	VMOVMSKPS Y7, AX
	MOVL      AX, ret+32(FP)
	VZEROUPPER
	RET

// func maxPoolRows8(key, pos, phase, taps *int32, k, n int, colBase *int32)
//
// The row pass of n output columns (n a positive multiple of 8) over k
// taps: taps holds k pairs (offset, column); for output column o, tap j
// reads phase[offset_j + o] and its plane index is colBase[o%8] + 8·s·(o/8)
// + column_j, colBase[i] = base + s·i for i < 8 and colBase[8] = 8·s. A
// strictly larger key replaces the best, so the first of equal ones stays.
TEXT ·maxPoolRows8(SB), NOSPLIT, $0-56
	MOVQ key+0(FP), DI
	MOVQ pos+8(FP), SI
	MOVQ phase+16(FP), DX
	MOVQ taps+24(FP), R8
	MOVQ k+32(FP), R9
	MOVQ n+40(FP), CX
	MOVQ colBase+48(FP), AX
	VMOVDQU      (AX), Y10
	VPBROADCASTD 32(AX), Y11
	XORQ         BX, BX

rowsBlock:
	// Tap 0.
	MOVLQSX      (R8), AX
	ADDQ         BX, AX
	VMOVDQU      (DX)(AX*4), Y0
	VPBROADCASTD 4(R8), Y1
	VPADDD       Y10, Y1, Y1
	MOVQ         $1, R10
	LEAQ         8(R8), R11

rowsTap:
	CMPQ         R10, R9
	JGE          rowsStore
	MOVLQSX      (R11), AX
	ADDQ         BX, AX
	VMOVDQU      (DX)(AX*4), Y2
	VPBROADCASTD 4(R11), Y3
	VPADDD       Y10, Y3, Y3
	VPCMPGTD     Y0, Y2, Y4
	VPMAXSD      Y2, Y0, Y0
	VPBLENDVB    Y4, Y3, Y1, Y1
	INCQ         R10
	ADDQ         $8, R11
	JMP          rowsTap

rowsStore:
	VMOVDQU Y0, (DI)(BX*4)
	VMOVDQU Y1, (SI)(BX*4)
	VPADDD  Y11, Y10, Y10
	ADDQ    $8, BX
	CMPQ    BX, CX
	JLT     rowsBlock
	VZEROUPPER
	RET

// func maxPoolCols8(dst *int, rowKey, rowPos *int32, n, rows, stride int)
//
// The column pass of one output row over n output columns (n a positive
// multiple of 8): dst[o] is the rowPos of the first largest rowKey at o
// over rows rows stride elements apart.
TEXT ·maxPoolCols8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ rowKey+8(FP), SI
	MOVQ rowPos+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ rows+32(FP), R9
	MOVQ stride+40(FP), R8
	SHLQ $2, R8
	XORQ BX, BX

colsBlock:
	VMOVDQU (SI)(BX*4), Y0
	VMOVDQU (DX)(BX*4), Y1
	LEAQ    (SI)(BX*4), R10
	LEAQ    (DX)(BX*4), R11
	MOVQ    $1, R12

colsRow:
	CMPQ      R12, R9
	JGE       colsStore
	ADDQ      R8, R10
	ADDQ      R8, R11
	VMOVDQU   (R10), Y2
	VPCMPGTD  Y0, Y2, Y4
	VPMAXSD   Y2, Y0, Y0
	VPBLENDVB Y4, (R11), Y1, Y1
	INCQ      R12
	JMP       colsRow

colsStore:
	VPMOVSXDQ    X1, Y2
	VEXTRACTI128 $1, Y1, X3
	VPMOVSXDQ    X3, Y3
	VMOVDQU      Y2, (DI)(BX*8)
	VMOVDQU      Y3, 32(DI)(BX*8)
	ADDQ         $8, BX
	CMPQ         BX, CX
	JLT          colsBlock
	VZEROUPPER
	RET
