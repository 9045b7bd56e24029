//go:build amd64 && !purego

#include "textflag.h"
#include "evenodd_amd64.h"

// The AVX2 kernel of nearest_amd64.go: each source value written twice,
// into one or two destination rows (copies, no arithmetic).

// func nearestDup2S(d0, d1, src *float32, blocks int)
//
// d0[2i] = d0[2i+1] = src[i] for i < 8·blocks, and the same into d1
// unless d1 is nil: unpacking the 8 floats with themselves gives
// [a0 a0 a1 a1 | a4 a4 a5 a5] and [a2 a2 a3 a3 | a6 a6 a7 a7], whose
// halves recombine in order.
TEXT ·nearestDup2S(SB), NOSPLIT, $0-32
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ blocks+24(FP), CX

loopDup2S:
	VMOVUPS    (SI), Y0
	VUNPCKLPS  Y0, Y0, Y1
	VUNPCKHPS  Y0, Y0, Y2
	VPERM2F128 $0x20, Y2, Y1, Y3
	VPERM2F128 $0x31, Y2, Y1, Y4
	VMOVUPS    Y3, (DI)
	VMOVUPS    Y4, 32(DI)
	TESTQ      DX, DX
	JZ         nextDup2S
	VMOVUPS    Y3, (DX)
	VMOVUPS    Y4, 32(DX)
	ADDQ       $64, DX

nextDup2S:
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loopDup2S
	VZEROUPPER
	RET

// func nearestDup2D(d0, d1, src *float64, blocks int)
//
// The same for 4 float64 a block: [a0 a0 | a2 a2], [a1 a1 | a3 a3].
TEXT ·nearestDup2D(SB), NOSPLIT, $0-32
	MOVQ d0+0(FP), DI
	MOVQ d1+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ blocks+24(FP), CX

loopDup2D:
	VMOVUPD    (SI), Y0
	VUNPCKLPD  Y0, Y0, Y1
	VUNPCKHPD  Y0, Y0, Y2
	VPERM2F128 $0x20, Y2, Y1, Y3
	VPERM2F128 $0x31, Y2, Y1, Y4
	VMOVUPD    Y3, (DI)
	VMOVUPD    Y4, 32(DI)
	TESTQ      DX, DX
	JZ         nextDup2D
	VMOVUPD    Y3, (DX)
	VMOVUPD    Y4, 32(DX)
	ADDQ       $64, DX

nextDup2D:
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loopDup2D
	VZEROUPPER
	RET

// func nearestBlocks2S(d, a, b *float32, blocks int)
//
// d[c] = d[c] + a[2c] + a[2c+1] + b[2c] + b[2c+1], added in that order,
// for c < 8·blocks.
TEXT ·nearestBlocks2S(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ blocks+24(FP), CX

loopBlocks2S:
	EVENODD(0, 32, SI, Y0, Y1)
	EVENODD(0, 32, DX, Y2, Y3)
	VMOVUPS (DI), Y4
	VADDPS  Y0, Y4, Y4
	VADDPS  Y1, Y4, Y4
	VADDPS  Y2, Y4, Y4
	VADDPS  Y3, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNZ     loopBlocks2S
	VZEROUPPER
	RET

// func nearestBlocks2D(d, a, b *float64, blocks int)
//
// The same for 4 float64 a block.
TEXT ·nearestBlocks2D(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ blocks+24(FP), CX

loopBlocks2D:
	EVENODD4(0, 32, SI, Y0, Y1)
	EVENODD4(0, 32, DX, Y2, Y3)
	VMOVUPD (DI), Y4
	VADDPD  Y0, Y4, Y4
	VADDPD  Y1, Y4, Y4
	VADDPD  Y2, Y4, Y4
	VADDPD  Y3, Y4, Y4
	VMOVUPD Y4, (DI)
	ADDQ    $32, DI
	ADDQ    $64, SI
	ADDQ    $64, DX
	DECQ    CX
	JNZ     loopBlocks2D
	VZEROUPPER
	RET
