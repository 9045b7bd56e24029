//go:build amd64 && !purego

#include "textflag.h"

// func gridGatherS(out, plane *float32, idx *int32, w0, w1, w2, w3 *float32, n, wp int)
//
// GridSample's bilinear sample of n pixels (n a positive multiple of 8),
// AVX2: out[j] = ((w0[j]·nw + w1[j]·ne) + w2[j]·sw) + w3[j]·se with the
// corners plane[idx[j]], plane[idx[j]+1], plane[idx[j]+wp],
// plane[idx[j]+wp+1] of a zero-framed plane (every index is inside it).
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
	VMOVDQU (DX)(R12*4), Y1
	VPCMPEQD Y2, Y2, Y2
	VGATHERDPS Y2, (SI)(Y1*4), Y3
	VPCMPEQD Y2, Y2, Y2
	VGATHERDPS Y2, 4(SI)(Y1*4), Y4
	VPCMPEQD Y2, Y2, Y2
	VGATHERDPS Y2, (BX)(Y1*4), Y5
	VPCMPEQD Y2, Y2, Y2
	VGATHERDPS Y2, 4(BX)(Y1*4), Y6
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
