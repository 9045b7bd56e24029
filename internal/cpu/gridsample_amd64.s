//go:build amd64 && !purego

#include "textflag.h"

// func gridGatherS(out, plane *float32, idx *int32, w0, w1, w2, w3 *float32, n, wp int)
//
// GridSample's bilinear sample of n pixels (n a positive multiple of 8),
// AVX2: out[j] = ((w0[j]·nw + w1[j]·ne) + w2[j]·sw) + w3[j]·se with the
// corners plane[i], plane[i+1], plane[i+wp], plane[i+wp+1] of a
// zero-framed plane (every index is inside it), i = idx[j] with each
// block of 8 indices stored in the order 0 1 4 5 2 3 6 7 (gridSoA).
// Separate multiplies and adds, in the Go loop's order: the same result,
// bitwise.
TEXT ·gridGatherS(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ plane+8(FP), SI
	MOVQ idx+16(FP), DX
	MOVQ w0+24(FP), R8
	MOVQ w1+32(FP), R9
	MOVQ w2+40(FP), R10
	MOVQ w3+48(FP), R11
	MOVQ n+56(FP), CX
	MOVQ wp+64(FP), AX
	LEAQ (SI)(AX*4), BX
	XORQ R12, R12

loop:
	// idx holds each block's pixels in the order 0 1 4 5 2 3 6 7: one
	// 64-bit gather reads a pixel's two horizontal corners, and the
	// shuffles below then give the corners of pixels 0-7 in order.
	VMOVDQU (DX)(R12*4), Y1
	VEXTRACTI128 $1, Y1, X7
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (SI)(X1*4), Y8
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (SI)(X7*4), Y9
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (BX)(X1*4), Y10
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (BX)(X7*4), Y11
	VSHUFPS $0x88, Y9, Y8, Y3
	VSHUFPS $0xDD, Y9, Y8, Y4
	VSHUFPS $0x88, Y11, Y10, Y5
	VSHUFPS $0xDD, Y11, Y10, Y6
	VMULPS (R8)(R12*4), Y3, Y3
	VMULPS (R9)(R12*4), Y4, Y4
	VADDPS Y4, Y3, Y3
	VMULPS (R10)(R12*4), Y5, Y5
	VADDPS Y5, Y3, Y3
	VMULPS (R11)(R12*4), Y6, Y6
	VADDPS Y6, Y3, Y3
	VMOVUPS Y3, (DI)(R12*4)
	ADDQ $8, R12
	CMPQ R12, CX
	JLT  loop
	VZEROUPPER
	RET

// func gridGatherO(acc, f *float32, idx *int32, planes, gr *float32, blocks, nc, ps, p, wp int)
//
// GridSampleO's channel sums for blocks of 8 pixels (AVX2): per block,
// with the corner indices idx[0:8] (in the order 0 1 4 5 2 3 6 7, see
// gridGatherS) into each zero-framed plane, the
// factors f[0:32] (fx0, fx1, fy0, fy1, 8 pixels each) and, for nc
// channels c (plane planes + c·ps, upstream gr + c·p),
//   sx += ((ne − nw)·fy0 + (se − sw)·fy1)·g,  sy += ((sw − nw)·fx0 + (se − ne)·fx1)·g
// in channel order, then acc[0:8] += sx and acc[8:16] += sy. The same
// operations in the same order as the Go loop: bitwise its result.
TEXT ·gridGatherO(SB), NOSPLIT, $0-80
	MOVQ acc+0(FP), DX
	MOVQ f+8(FP), CX
	MOVQ idx+16(FP), BX
	MOVQ planes+24(FP), SI
	MOVQ gr+32(FP), DI
	MOVQ blocks+40(FP), AX
	MOVQ ps+56(FP), R12
	SHLQ $2, R12
	MOVQ p+64(FP), R13
	SHLQ $2, R13

block:
	VMOVDQU (BX), Y0
	VMOVUPS (CX), Y1
	VMOVUPS 32(CX), Y2
	VMOVUPS 64(CX), Y3
	VMOVUPS 96(CX), Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	MOVQ SI, R8
	MOVQ wp+72(FP), R9
	SHLQ $2, R9
	ADDQ R8, R9
	MOVQ DI, R10
	MOVQ nc+48(FP), R11

channel:
	// Pairs of horizontal corners by 64-bit gathers, as gridGatherS (X12:
	// the upper four indices, until Y12 takes the upstream values).
	VEXTRACTI128 $1, Y0, X12
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R8)(X0*4), Y7
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R8)(X12*4), Y8
	VSHUFPS $0xDD, Y8, Y7, Y13
	VSHUFPS $0x88, Y8, Y7, Y7
	VMOVAPS Y13, Y8
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R9)(X0*4), Y9
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R9)(X12*4), Y10
	VSHUFPS $0xDD, Y10, Y9, Y14
	VSHUFPS $0x88, Y10, Y9, Y9
	VMOVAPS Y14, Y10
	VMOVUPS (R10), Y12
	VSUBPS Y7, Y8, Y13
	VMULPS Y3, Y13, Y13
	VSUBPS Y9, Y10, Y14
	VMULPS Y4, Y14, Y14
	VADDPS Y14, Y13, Y13
	VMULPS Y12, Y13, Y13
	VADDPS Y13, Y5, Y5
	VSUBPS Y7, Y9, Y13
	VMULPS Y1, Y13, Y13
	VSUBPS Y8, Y10, Y14
	VMULPS Y2, Y14, Y14
	VADDPS Y14, Y13, Y13
	VMULPS Y12, Y13, Y13
	VADDPS Y13, Y6, Y6
	ADDQ R12, R8
	ADDQ R12, R9
	ADDQ R13, R10
	DECQ R11
	JNZ  channel

	VMOVUPS (DX), Y13
	VADDPS Y5, Y13, Y13
	VMOVUPS Y13, (DX)
	VMOVUPS 32(DX), Y13
	VADDPS Y6, Y13, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ $32, BX
	ADDQ $128, CX
	ADDQ $64, DX
	ADDQ $32, DI
	DECQ AX
	JNZ  block
	VZEROUPPER
	RET
