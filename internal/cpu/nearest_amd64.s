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

// func nearestDup2NTS(d, src *float32, n int)
//
// nearestDup2S's d0 alone for n values (d[2i] = d[2i+1] = src[i], i < n),
// every store non-temporal (d 32-byte aligned): whole blocks of 8 by
// VMOVNTPS, then 4 in XMM, then one at a time by MOVNTIL; no SFENCE
// (nearestFence, once the caller's rows are done).
TEXT ·nearestDup2NTS(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ CX, DX
	SHRQ $3, CX
	JZ   tail4NTS

loopDup2NTS:
	VMOVUPS    (SI), Y0
	VUNPCKLPS  Y0, Y0, Y1
	VUNPCKHPS  Y0, Y0, Y2
	VPERM2F128 $0x20, Y2, Y1, Y3
	VPERM2F128 $0x31, Y2, Y1, Y4
	VMOVNTPS   Y3, (DI)
	VMOVNTPS   Y4, 32(DI)
	ADDQ       $32, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        loopDup2NTS

tail4NTS:
	TESTQ     $4, DX
	JZ        tail1NTS
	VMOVUPS   (SI), X0
	VUNPCKLPS X0, X0, X1
	VUNPCKHPS X0, X0, X2
	VMOVNTPS  X1, (DI)
	VMOVNTPS  X2, 16(DI)
	ADDQ      $16, SI
	ADDQ      $32, DI

tail1NTS:
	ANDQ $3, DX
	JZ   doneNTS

loop1NTS:
	MOVL    (SI), AX
	MOVNTIL AX, (DI)
	MOVNTIL AX, 4(DI)
	ADDQ    $4, SI
	ADDQ    $8, DI
	DECQ    DX
	JNZ     loop1NTS

doneNTS:
	VZEROUPPER
	RET

// func nearestDup2NTD(d, src *float64, n int)
//
// The same for float64: blocks of 4 (VMOVNTPD), then 2 in XMM, then one
// by MOVNTIQ.
TEXT ·nearestDup2NTD(SB), NOSPLIT, $0-24
	MOVQ d+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ CX, DX
	SHRQ $2, CX
	JZ   tail2NTD

loopDup2NTD:
	VMOVUPD    (SI), Y0
	VUNPCKLPD  Y0, Y0, Y1
	VUNPCKHPD  Y0, Y0, Y2
	VPERM2F128 $0x20, Y2, Y1, Y3
	VPERM2F128 $0x31, Y2, Y1, Y4
	VMOVNTPD   Y3, (DI)
	VMOVNTPD   Y4, 32(DI)
	ADDQ       $32, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        loopDup2NTD

tail2NTD:
	TESTQ     $2, DX
	JZ        tail1NTD
	VMOVUPD   (SI), X0
	VUNPCKLPD X0, X0, X1
	VUNPCKHPD X0, X0, X2
	VMOVNTPD  X1, (DI)
	VMOVNTPD  X2, 16(DI)
	ADDQ      $16, SI
	ADDQ      $32, DI

tail1NTD:
	TESTQ   $1, DX
	JZ      doneNTD
	MOVQ    (SI), AX
	MOVNTIQ AX, (DI)
	MOVNTIQ AX, 8(DI)

doneNTD:
	VZEROUPPER
	RET

// func nearestFence()
//
// SFENCE: orders the non-temporal stores before the caller's later
// stores (its signal that the rows are done).
TEXT ·nearestFence(SB), NOSPLIT, $0-0
	SFENCE
	RET
