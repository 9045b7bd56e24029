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
