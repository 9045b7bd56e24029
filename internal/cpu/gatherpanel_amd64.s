//go:build amd64 && !purego

#include "textflag.h"

// STEPS(off) and STEPD(off) move one element of the row: index idx[j]
// (int32 at DX + R10 + off) read from the row's tap AX into dst (DI +
// R10·size/4 + off·size/4). R10 is j·4, the index's byte offset.
#define STEPS(off) \
	MOVLQSX off(DX)(R10*1), R11 \
	MOVL    (AX)(R11*4), R11 \
	MOVL    R11, off(DI)(R10*1)

#define STEPD(off) \
	MOVLQSX off(DX)(R10*1), R11 \
	MOVQ    (AX)(R11*8), R11 \
	MOVQ    R11, (2*off)(DI)(R10*2)

// GATHERROWS(shift, step, scale) is the body of gatherRowsS and
// gatherRowsD: elements of 1<<shift = scale bytes, moved by step (labels
// are local to each TEXT). R8 is ld in bytes, R9 the indices' bytes (4
// a position), R14 those of whole steps of four, AX the row's tap.
#define GATHERROWS(shift, step, scale) \
	MOVQ dst+0(FP), DI \
	MOVQ ld+8(FP), R8 \
	SHLQ $shift, R8 \
	MOVQ src+16(FP), SI \
	MOVQ taps+24(FP), BX \
	MOVQ rows+32(FP), CX \
	MOVQ idx+40(FP), DX \
	MOVQ cols+48(FP), R9 \
	SHLQ $2, R9 \
	MOVQ R9, R14 \
	ANDQ $-16, R14 \
row: \
	MOVQ (BX), AX \
	LEAQ (SI)(AX*scale), AX \
	XORQ R10, R10 \
	CMPQ R14, $0 \
	JEQ  tail \
four: \
	step(0) \
	step(4) \
	step(8) \
	step(12) \
	ADDQ $16, R10 \
	CMPQ R10, R14 \
	JLT  four \
tail: \
	CMPQ R10, R9 \
	JGE  next \
	step(0) \
	ADDQ $4, R10 \
	JMP  tail \
next: \
	ADDQ $8, BX \
	ADDQ R8, DI \
	DECQ CX \
	JNZ  row \
	RET

// func gatherRowsS(dst *float32, ld int, src *float32, taps *int, rows int, idx *int32, cols int)
//
// For r < rows and j < cols: dst[r·ld + j] = src[taps[r] + idx[j]]
// (rows ≥ 1, cols ≥ 1), four positions a step, then one at a time: plain
// loads and stores, which ran ~1.4 times as fast as VPGATHERDD on Zen 3.
TEXT ·gatherRowsS(SB), NOSPLIT, $0-56
	GATHERROWS(2, STEPS, 4)

// func gatherRowsD(dst *float64, ld int, src *float64, taps *int, rows int, idx *int32, cols int)
//
// The same for float64.
TEXT ·gatherRowsD(SB), NOSPLIT, $0-56
	GATHERROWS(3, STEPD, 8)
