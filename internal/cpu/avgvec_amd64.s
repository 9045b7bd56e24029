//go:build amd64 && !purego

#include "textflag.h"
#include "evenodd_amd64.h"

// The AVX2 kernels of avgvec_amd64.go. Every sum adds in the Go loop's
// order with the running value as the first operand, and every product
// is rounded before its addition (no FMA): bitwise the Go loops' results.

// EVENODD (evenodd_amd64.h) splits 16 floats into the even and the odd
// ones.

// func avgWindowSums2(dst, src *float32, blocks, k int)
//
// dst[m] = ((0 + src[2m]) + src[2m+1]) + ... + src[2m+k−1] for m < 8·blocks
// (k ≥ 1): term i of 8 outputs is the even floats of the 16 at src+2m+i.
TEXT ·avgWindowSums2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ k+24(FP), DX

block:
	VXORPS Y0, Y0, Y0
	MOVQ SI, R8
	MOVQ DX, R9

term:
	VMOVUPS (R8), Y14
	VMOVUPS 32(R8), Y15
	VSHUFPS $0x88, Y15, Y14, Y1
	VPERMPD $0xD8, Y1, Y1
	VADDPS Y1, Y0, Y0
	ADDQ $4, R8
	DECQ R9
	JNZ term

	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $64, SI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET

// func avgSumRows(dst, src *float32, blocks, n, stride int, div *float32)
//
// dst[i] = (((0 + src[i]) + src[i+s]) + ... over n rows) / div[i] for
// i < 8·blocks, s = stride bytes; no division when div is nil.
TEXT ·avgSumRows(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ stride+32(FP), BX
	MOVQ div+40(FP), R10

block:
	VXORPS Y0, Y0, Y0
	MOVQ SI, R8
	MOVQ DX, R9
	TESTQ R9, R9
	JZ divide

row:
	VADDPS (R8), Y0, Y0
	ADDQ BX, R8
	DECQ R9
	JNZ row

divide:
	TESTQ R10, R10
	JZ store
	VDIVPS (R10), Y0, Y0
	ADDQ $32, R10

store:
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET

// func avgScatter2(row, acc *float32, blocks, j0, j1 int)
//
// For m < 8·blocks: row[2m] += acc[m], acc[m+1], ..., acc[m+j0] and
// row[2m+1] += acc[m+j0−j1], ..., acc[m+j0], each in that order.
TEXT ·avgScatter2(SB), NOSPLIT, $0-40
	MOVQ row+0(FP), DI
	MOVQ acc+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ j0+24(FP), DX
	MOVQ j1+32(FP), BX
	INCQ DX
	INCQ BX

	// the odd terms start j0−j1 floats in
	MOVQ DX, AX
	SUBQ BX, AX
	SHLQ $2, AX

block:
	EVENODD(0, 32, DI, Y0, Y1)
	MOVQ SI, R8
	MOVQ DX, R9

even:
	VADDPS (R8), Y0, Y0
	ADDQ $4, R8
	DECQ R9
	JNZ even

	LEAQ (SI)(AX*1), R8
	MOVQ BX, R9

odd:
	VADDPS (R8), Y1, Y1
	ADDQ $4, R8
	DECQ R9
	JNZ odd

	VUNPCKLPS Y1, Y0, Y2
	VUNPCKHPS Y1, Y0, Y3
	VPERM2F128 $0x20, Y3, Y2, Y4
	VPERM2F128 $0x31, Y3, Y2, Y5
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ $64, DI
	ADDQ $32, SI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET

// func interpPairs2(h, row *float32, blocks int, w *[4]float32)
//
// For m < 8·blocks: h[2m] = w[0]·row[m] + w[1]·row[m+1], h[2m+1] =
// w[2]·row[m] + w[3]·row[m+1].
TEXT ·interpPairs2(SB), NOSPLIT, $0-32
	MOVQ h+0(FP), DI
	MOVQ row+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ w+24(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11

block:
	VMOVUPS (SI), Y0
	VMOVUPS 4(SI), Y1
	VMULPS Y0, Y8, Y2
	VMULPS Y1, Y9, Y3
	VADDPS Y3, Y2, Y2
	VMULPS Y0, Y10, Y4
	VMULPS Y1, Y11, Y5
	VADDPS Y5, Y4, Y4
	VUNPCKLPS Y4, Y2, Y6
	VUNPCKHPS Y4, Y2, Y7
	VPERM2F128 $0x20, Y7, Y6, Y0
	VPERM2F128 $0x31, Y7, Y6, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, DI
	ADDQ $32, SI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET

// func interpLerp(d, t, u *float32, blocks int, a, b float32)
//
// d[i] = a·t[i] + b·u[i] for i < 8·blocks.
TEXT ·interpLerp(SB), NOSPLIT, $0-40
	MOVQ d+0(FP), DI
	MOVQ t+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ blocks+24(FP), CX
	VBROADCASTSS a+32(FP), Y8
	VBROADCASTSS b+36(FP), Y9

block:
	VMULPS (SI), Y8, Y0
	VMULPS (DX), Y9, Y1
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	DECQ CX
	JNZ block
	VZEROUPPER
	RET

// func interpPairsT2(dx, v *float32, blocks, n, stride int, wy *float32, w *[4]float32)
//
// For m < 8·blocks: dx[m] += for each row j < n in turn, q = v + j·stride
// bytes, y = wy[j]: w[0]·(y·q[2m]), w[1]·(y·q[2m+1]), w[2]·(y·q[2m+2]),
// w[3]·(y·q[2m+3]), added one by one.
TEXT ·interpPairsT2(SB), NOSPLIT, $0-56
	MOVQ dx+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ stride+32(FP), BX
	MOVQ wy+40(FP), R10
	MOVQ w+48(FP), AX
	VBROADCASTSS 0(AX), Y9
	VBROADCASTSS 4(AX), Y10
	VBROADCASTSS 8(AX), Y11
	VBROADCASTSS 12(AX), Y12

block:
	VMOVUPS (DI), Y4
	MOVQ SI, R8
	MOVQ R10, R11
	MOVQ DX, R9

row:
	VBROADCASTSS (R11), Y8
	EVENODD(0, 32, R8, Y0, Y1)
	EVENODD(8, 40, R8, Y2, Y3)
	VMULPS Y0, Y8, Y0
	VMULPS Y0, Y9, Y0
	VADDPS Y0, Y4, Y4
	VMULPS Y1, Y8, Y1
	VMULPS Y1, Y10, Y1
	VADDPS Y1, Y4, Y4
	VMULPS Y2, Y8, Y2
	VMULPS Y2, Y11, Y2
	VADDPS Y2, Y4, Y4
	VMULPS Y3, Y8, Y3
	VMULPS Y3, Y12, Y3
	VADDPS Y3, Y4, Y4
	ADDQ BX, R8
	ADDQ $4, R11
	DECQ R9
	JNZ row

	VMOVUPS Y4, (DI)
	ADDQ $32, DI
	ADDQ $64, SI
	DECQ CX
	JNZ block
	VZEROUPPER
	RET
