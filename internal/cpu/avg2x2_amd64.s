//go:build amd64 && !purego

#include "textflag.h"
#include "evenodd_amd64.h"

// The AVX2 kernels of avg2x2_amd64.go: 2×2 average pooling's interior,
// every sum in the Go loop's order with +0 where it starts from 0, so
// the same bits.

// func avgPairs2S(dst, a, b, div *float32, blocks int)
//
// dst[i] = (0 + (0 + a[2i] + a[2i+1]) + (0 + b[2i] + b[2i+1])) / div[i]
// for i < 8·blocks.
TEXT ·avgPairs2S(SB), NOSPLIT, $0-40
	MOVQ   dst+0(FP), DI
	MOVQ   a+8(FP), SI
	MOVQ   b+16(FP), DX
	MOVQ   div+24(FP), R8
	MOVQ   blocks+32(FP), CX
	VXORPS Y13, Y13, Y13

loopPairs2S:
	EVENODD(0, 32, SI, Y0, Y1)
	EVENODD(0, 32, DX, Y2, Y3)
	VADDPS  Y0, Y13, Y4
	VADDPS  Y1, Y4, Y4
	VADDPS  Y2, Y13, Y5
	VADDPS  Y3, Y5, Y5
	VADDPS  Y4, Y13, Y6
	VADDPS  Y5, Y6, Y6
	VDIVPS  (R8), Y6, Y6
	VMOVUPS Y6, (DI)
	ADDQ    $32, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $32, R8
	DECQ    CX
	JNZ     loopPairs2S
	VZEROUPPER
	RET

// func avgPairs2D(dst, a, b, div *float64, blocks int)
//
// The same for 4 float64 a block.
TEXT ·avgPairs2D(SB), NOSPLIT, $0-40
	MOVQ   dst+0(FP), DI
	MOVQ   a+8(FP), SI
	MOVQ   b+16(FP), DX
	MOVQ   div+24(FP), R8
	MOVQ   blocks+32(FP), CX
	VXORPD Y13, Y13, Y13

loopPairs2D:
	EVENODD4(0, 32, SI, Y0, Y1)
	EVENODD4(0, 32, DX, Y2, Y3)
	VADDPD  Y0, Y13, Y4
	VADDPD  Y1, Y4, Y4
	VADDPD  Y2, Y13, Y5
	VADDPD  Y3, Y5, Y5
	VADDPD  Y4, Y13, Y6
	VADDPD  Y5, Y6, Y6
	VDIVPD  (R8), Y6, Y6
	VMOVUPD Y6, (DI)
	ADDQ    $32, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $32, R8
	DECQ    CX
	JNZ     loopPairs2D
	VZEROUPPER
	RET

// func avgSpread2S(row, v *float32, blocks int)
//
// row[2i] += 0 + v[i], row[2i+1] += 0 + v[i] for i < 8·blocks.
TEXT ·avgSpread2S(SB), NOSPLIT, $0-24
	MOVQ   row+0(FP), DI
	MOVQ   v+8(FP), SI
	MOVQ   blocks+16(FP), CX
	VXORPS Y13, Y13, Y13

loopSpread2S:
	VMOVUPS    (SI), Y0
	VADDPS     Y0, Y13, Y0
	VUNPCKLPS  Y0, Y0, Y1
	VUNPCKHPS  Y0, Y0, Y2
	VPERM2F128 $0x20, Y2, Y1, Y3
	VPERM2F128 $0x31, Y2, Y1, Y4
	VMOVUPS    (DI), Y5
	VMOVUPS    32(DI), Y6
	VADDPS     Y3, Y5, Y5
	VADDPS     Y4, Y6, Y6
	VMOVUPS    Y5, (DI)
	VMOVUPS    Y6, 32(DI)
	ADDQ       $32, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        loopSpread2S
	VZEROUPPER
	RET

// func avgSpread2D(row, v *float64, blocks int)
//
// The same for 4 float64 a block.
TEXT ·avgSpread2D(SB), NOSPLIT, $0-24
	MOVQ   row+0(FP), DI
	MOVQ   v+8(FP), SI
	MOVQ   blocks+16(FP), CX
	VXORPD Y13, Y13, Y13

loopSpread2D:
	VMOVUPD    (SI), Y0
	VADDPD     Y0, Y13, Y0
	VUNPCKLPD  Y0, Y0, Y1
	VUNPCKHPD  Y0, Y0, Y2
	VPERM2F128 $0x20, Y2, Y1, Y3
	VPERM2F128 $0x31, Y2, Y1, Y4
	VMOVUPD    (DI), Y5
	VMOVUPD    32(DI), Y6
	VADDPD     Y3, Y5, Y5
	VADDPD     Y4, Y6, Y6
	VMOVUPD    Y5, (DI)
	VMOVUPD    Y6, 32(DI)
	ADDQ       $32, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        loopSpread2D
	VZEROUPPER
	RET
