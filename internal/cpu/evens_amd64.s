//go:build amd64 && !purego

#include "textflag.h"
#include "evenodd_amd64.h"

// func evensS(dst, src *float32, blocks int)
//
// dst[i] = src[2i] for i < 8·blocks (EVENODD's even half; copies only).
TEXT ·evensS(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX

loopEvensS:
	EVENODD(0, 32, SI, Y0, Y1)
	VMOVUPS Y0, (DI)
	ADDQ    $64, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loopEvensS
	VZEROUPPER
	RET

// func evensD(dst, src *float64, blocks int)
//
// The same for 4 float64 a block.
TEXT ·evensD(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX

loopEvensD:
	EVENODD4(0, 32, SI, Y0, Y1)
	VMOVUPD Y0, (DI)
	ADDQ    $64, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loopEvensD
	VZEROUPPER
	RET
