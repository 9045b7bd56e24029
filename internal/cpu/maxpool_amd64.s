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

// maxPoolPlaneGeom's fields (maxpool_amd64.go), as offsets.
#define G_ROWS 0
#define G_W 8
#define G_BLOCKS 16
#define G_S 24
#define G_PL 32
#define G_M 40
#define G_SENTE 48
#define G_SENTO 56
#define G_K 64
#define G_WOP 72

// func maxPoolRowsPlane(x *float32, phase, rowKey, rowPos, taps, colBase *int32, geom *maxPoolPlaneGeom) uint32
//
// maxPoolPhases and maxPoolRowPass for g.rows rows of g.w floats from x
// (row r at plane index r·g.w, its row-pass results at rowKey, rowPos +
// r·g.wop), column stride g.s of 1 or 2: the keys of g.blocks blocks of
// 8·s columns each, which may read past the row's end (into memory that
// the caller knows is there); the slots that those columns fill are set
// back to the sentinel (8 from g.sentE, and for s = 2 from g.sentO), so
// the phase buffer holds exactly the row's keys. Nonzero if a NaN was
// read (possibly past the row: then the caller checks again).
TEXT ·maxPoolRowsPlane(SB), NOSPLIT, $0-60
	MOVQ x+0(FP), SI
	MOVQ phase+8(FP), DI
	MOVQ rowKey+16(FP), R8
	MOVQ rowPos+24(FP), R9
	MOVQ taps+32(FP), R10
	MOVQ colBase+40(FP), AX
	MOVQ geom+48(FP), R13
	VMOVDQU      (AX), Y10
	VPBROADCASTD 32(AX), Y11
	CONSTS
	MOVL         $0x80000000, AX
	MOVQ         AX, X12
	VPBROADCASTD X12, Y12
	XORQ         R11, R11 // row
	XORQ         R12, R12 // row·w

planeRow:
	CMPQ R11, G_ROWS(R13)
	JGE  planeDone
	MOVQ G_M(R13), AX
	LEAQ (DI)(AX*4), AX
	MOVQ G_BLOCKS(R13), CX
	SHLQ $3, CX
	XORQ DX, DX
	CMPQ G_S(R13), $2
	JEQ  planeKeys2

planeKeys1:
	VMOVDQU (SI)(DX*4), Y0
	KEYS8
	VMOVDQU Y0, (AX)(DX*4)
	ADDQ    $8, DX
	CMPQ    DX, CX
	JLT     planeKeys1
	JMP     planeSentinel

planeKeys2:
	MOVQ G_PL(R13), BX
	LEAQ (AX)(BX*4), BX

planeKeys2Loop:
	VMOVDQU (SI)(DX*8), Y0
	KEYS8
	VMOVDQA Y0, Y2
	VMOVDQU 32(SI)(DX*8), Y0
	KEYS8
	VSHUFPS $0x88, Y0, Y2, Y3
	VSHUFPS $0xDD, Y0, Y2, Y4
	VPERMQ  $0xD8, Y3, Y3
	VPERMQ  $0xD8, Y4, Y4
	VMOVDQU Y3, (AX)(DX*4)
	VMOVDQU Y4, (BX)(DX*4)
	ADDQ    $8, DX
	CMPQ    DX, CX
	JLT     planeKeys2Loop
	MOVQ    G_SENTO(R13), BX
	VMOVDQU Y12, (DI)(BX*4)

planeSentinel:
	MOVQ    G_SENTE(R13), BX
	VMOVDQU Y12, (DI)(BX*4)

	// The row pass: Y13 is the plane index of tap column 0 of the block.
	MOVQ         R12, X13
	VPBROADCASTD X13, Y13
	VPADDD       Y10, Y13, Y13
	MOVQ         G_K(R13), R14
	MOVQ         G_WOP(R13), CX
	XORQ         BX, BX

planeBlock:
	MOVLQSX      (R10), AX
	ADDQ         BX, AX
	VMOVDQU      (DI)(AX*4), Y0
	VPBROADCASTD 4(R10), Y1
	VPADDD       Y13, Y1, Y1
	MOVQ         $1, DX
	LEAQ         8(R10), R15

planeTap:
	CMPQ         DX, R14
	JGE          planeStore
	MOVLQSX      (R15), AX
	ADDQ         BX, AX
	VMOVDQU      (DI)(AX*4), Y2
	VPBROADCASTD 4(R15), Y3
	VPADDD       Y13, Y3, Y3
	VPCMPGTD     Y0, Y2, Y4
	VPMAXSD      Y2, Y0, Y0
	VPBLENDVB    Y4, Y3, Y1, Y1
	INCQ         DX
	ADDQ         $8, R15
	JMP          planeTap

planeStore:
	VMOVDQU Y0, (R8)(BX*4)
	VMOVDQU Y1, (R9)(BX*4)
	VPADDD  Y11, Y13, Y13
	ADDQ    $8, BX
	CMPQ    BX, CX
	JLT     planeBlock

	MOVQ G_W(R13), AX
	LEAQ (SI)(AX*4), SI
	ADDQ AX, R12
	LEAQ (R8)(CX*4), R8
	LEAQ (R9)(CX*4), R9
	INCQ R11
	JMP  planeRow

planeDone:
	VMOVMSKPS Y7, AX
	MOVL      AX, ret+56(FP)
	VZEROUPPER
	RET

// func maxPoolColsPlane(dst *int, rowKey, rowPos, windows *int32, ho, wo, n, stride int)
//
// The column pass (maxPoolColPass) for each of ho output rows (dst rows of wo): output row oh
// reads windows[2·oh+1] rows from rowKey, rowPos + windows[2·oh] (none:
// the row is left alone), stride elements apart, for its first n output
// columns (a positive multiple of 8).
TEXT ·maxPoolColsPlane(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ windows+24(FP), R13
	MOVQ ho+32(FP), R14
	MOVQ n+48(FP), CX
	MOVQ stride+56(FP), R8
	SHLQ $2, R8

colsPlaneRow:
	MOVLQSX 4(R13), R9
	TESTQ   R9, R9
	JEQ     colsPlaneNext
	MOVLQSX (R13), AX
	MOVQ    rowKey+8(FP), SI
	MOVQ    rowPos+16(FP), DX
	LEAQ    (SI)(AX*4), SI
	LEAQ    (DX)(AX*4), DX
	XORQ    BX, BX

colsPlaneBlock:
	VMOVDQU (SI)(BX*4), Y0
	VMOVDQU (DX)(BX*4), Y1
	LEAQ    (SI)(BX*4), R10
	LEAQ    (DX)(BX*4), R11
	MOVQ    $1, R12

colsPlaneTap:
	CMPQ      R12, R9
	JGE       colsPlaneStore
	ADDQ      R8, R10
	ADDQ      R8, R11
	VMOVDQU   (R10), Y2
	VPCMPGTD  Y0, Y2, Y4
	VPMAXSD   Y2, Y0, Y0
	VPBLENDVB Y4, (R11), Y1, Y1
	INCQ      R12
	JMP       colsPlaneTap

colsPlaneStore:
	VPMOVSXDQ    X1, Y2
	VEXTRACTI128 $1, Y1, X3
	VPMOVSXDQ    X3, Y3
	VMOVDQU      Y2, (DI)(BX*8)
	VMOVDQU      Y3, 32(DI)(BX*8)
	ADDQ         $8, BX
	CMPQ         BX, CX
	JLT          colsPlaneBlock

colsPlaneNext:
	MOVQ wo+40(FP), AX
	LEAQ (DI)(AX*8), DI
	ADDQ $8, R13
	DECQ R14
	JNZ  colsPlaneRow
	VZEROUPPER
	RET

// func prefetchLines(p unsafe.Pointer, n int)
//
// PREFETCHT0 of each 64-byte line of the n > 0 bytes from p.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	XORQ DX, DX

prefetchLine:
	PREFETCHT0 (SI)(DX*1)
	ADDQ       $64, DX
	CMPQ       DX, CX
	JLT        prefetchLine
	RET
