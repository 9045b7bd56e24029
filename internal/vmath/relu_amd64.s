//go:build amd64 && !purego

#include "textflag.h"

// func reluS(dst, src *float32, n int)
// dst[i] = max(src[i], 0): VMAXPS returns its second source (+0) for a
// NaN or two zeros; the NaN lanes (unordered with themselves) take
// src back.
TEXT ·reluS(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y15, Y15, Y15

loopReluS:
	VMOVUPS (SI), Y0
	VMAXPS Y15, Y0, Y1
	VCMPPS $3, Y0, Y0, Y2
	VBLENDVPS Y2, Y0, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopReluS
	VZEROUPPER
	RET

// func reluD(dst, src *float64, n int)
TEXT ·reluD(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPD Y15, Y15, Y15

loopReluD:
	VMOVUPD (SI), Y0
	VMAXPD Y15, Y0, Y1
	VCMPPD $3, Y0, Y0, Y2
	VBLENDVPD Y2, Y0, Y1, Y1
	VMOVUPD Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopReluD
	VZEROUPPER
	RET

// func positiveS(dst, src *float32, n int, a, b float32)
// dst[i] = src[i] > 0 ? a : b (compare GT_OQ: false for a NaN).
TEXT ·positiveS(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y13
	VBROADCASTSS b+28(FP), Y14
	VXORPS Y15, Y15, Y15

loopPositiveS:
	VMOVUPS (SI), Y0
	VCMPPS $0x1e, Y15, Y0, Y2
	VBLENDVPS Y2, Y13, Y14, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopPositiveS
	VZEROUPPER
	RET

// func positiveD(dst, src *float64, n int, a, b float64)
TEXT ·positiveD(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD a+24(FP), Y13
	VBROADCASTSD b+32(FP), Y14
	VXORPD Y15, Y15, Y15

loopPositiveD:
	VMOVUPD (SI), Y0
	VCMPPD $0x1e, Y15, Y0, Y2
	VBLENDVPD Y2, Y13, Y14, Y1
	VMOVUPD Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopPositiveD
	VZEROUPPER
	RET

// func positiveMulS(dst, src, u *float32, n int, a, b float32)
// dst[i] = u[i]·(src[i] > 0 ? a : b): Positive's blend, then one VMULPS
// with u as its first source (a NaN u's bits kept as Go's u*s keeps them).
TEXT ·positiveMulS(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS a+32(FP), Y13
	VBROADCASTSS b+36(FP), Y14
	VXORPS Y15, Y15, Y15

loopPositiveMulS:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y3
	VCMPPS $0x1e, Y15, Y0, Y2
	VBLENDVPS Y2, Y13, Y14, Y1
	VMULPS Y1, Y3, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopPositiveMulS
	VZEROUPPER
	RET

// func positiveMulD(dst, src, u *float64, n int, a, b float64)
TEXT ·positiveMulD(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD a+32(FP), Y13
	VBROADCASTSD b+40(FP), Y14
	VXORPD Y15, Y15, Y15

loopPositiveMulD:
	VMOVUPD (SI), Y0
	VMOVUPD (DX), Y3
	VCMPPD $0x1e, Y15, Y0, Y2
	VBLENDVPD Y2, Y13, Y14, Y1
	VMULPD Y1, Y3, Y1
	VMOVUPD Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopPositiveMulD
	VZEROUPPER
	RET

// func reluStreamS(dst, src *float32, n int)
// reluS with non-temporal stores (VMOVNTPS): dst 32-byte aligned, n a
// multiple of 16; an SFENCE at the end orders the stores before any later
// store of this thread (the caller's signal that the work is done).
TEXT ·reluStreamS(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y15, Y15, Y15

loopReluStreamS:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y3
	VMAXPS    Y15, Y0, Y1
	VMAXPS    Y15, Y3, Y4
	VCMPPS    $3, Y0, Y0, Y2
	VCMPPS    $3, Y3, Y3, Y5
	VBLENDVPS Y2, Y0, Y1, Y1
	VBLENDVPS Y5, Y3, Y4, Y4
	VMOVNTPS  Y1, (DI)
	VMOVNTPS  Y4, 32(DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	JNZ       loopReluStreamS
	SFENCE
	VZEROUPPER
	RET

// func reluStreamD(dst, src *float64, n int)
// The same for float64: n a multiple of 8.
TEXT ·reluStreamD(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPD Y15, Y15, Y15

loopReluStreamD:
	VMOVUPD   (SI), Y0
	VMOVUPD   32(SI), Y3
	VMAXPD    Y15, Y0, Y1
	VMAXPD    Y15, Y3, Y4
	VCMPPD    $3, Y0, Y0, Y2
	VCMPPD    $3, Y3, Y3, Y5
	VBLENDVPD Y2, Y0, Y1, Y1
	VBLENDVPD Y5, Y3, Y4, Y4
	VMOVNTPD  Y1, (DI)
	VMOVNTPD  Y4, 32(DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	SUBQ      $8, CX
	JNZ       loopReluStreamD
	SFENCE
	VZEROUPPER
	RET

// func positiveMulStreamS(dst, src, u *float32, n int, a, b float32)
// positiveMulS with non-temporal stores: dst 32-byte aligned, n a
// multiple of 8, an SFENCE at the end (reluStreamS's terms).
TEXT ·positiveMulStreamS(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS a+32(FP), Y13
	VBROADCASTSS b+36(FP), Y14
	VXORPS Y15, Y15, Y15

loopPositiveMulStreamS:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y3
	VCMPPS $0x1e, Y15, Y0, Y2
	VBLENDVPS Y2, Y13, Y14, Y1
	VMULPS Y1, Y3, Y1
	VMOVNTPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopPositiveMulStreamS
	SFENCE
	VZEROUPPER
	RET

// func positiveMulStreamD(dst, src, u *float64, n int, a, b float64)
// The same for float64: n a multiple of 4.
TEXT ·positiveMulStreamD(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD a+32(FP), Y13
	VBROADCASTSD b+40(FP), Y14
	VXORPD Y15, Y15, Y15

loopPositiveMulStreamD:
	VMOVUPD (SI), Y0
	VMOVUPD (DX), Y3
	VCMPPD $0x1e, Y15, Y0, Y2
	VBLENDVPD Y2, Y13, Y14, Y1
	VMULPD Y1, Y3, Y1
	VMOVNTPD Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopPositiveMulStreamD
	SFENCE
	VZEROUPPER
	RET
