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

// func addEvensS(dst, src *float32, blocks int)
//
// dst[2i] += src[i] for i < 8·blocks: each block's 8 src elements
// duplicated into pairs, added to the 16 dst elements, and the sums kept
// in the even lanes alone (VBLENDPS): the odd elements are stored back
// as they were loaded, −0 and NaN payloads included.
TEXT ·addEvensS(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX

loopAddEvensS:
	VMOVUPS    (SI), Y0
	VUNPCKLPS  Y0, Y0, Y1         // a0 a0 a1 a1 | a4 a4 a5 a5
	VUNPCKHPS  Y0, Y0, Y2         // a2 a2 a3 a3 | a6 a6 a7 a7
	VPERM2F128 $0x20, Y2, Y1, Y3  // a0 a0 a1 a1 a2 a2 a3 a3
	VPERM2F128 $0x31, Y2, Y1, Y4  // a4 a4 a5 a5 a6 a6 a7 a7
	VMOVUPS    (DI), Y5
	VMOVUPS    32(DI), Y6
	VADDPS     Y3, Y5, Y7         // dst + src, as the Go loop's dst[2i] += src[i]
	VADDPS     Y4, Y6, Y8
	VBLENDPS   $0x55, Y7, Y5, Y5
	VBLENDPS   $0x55, Y8, Y6, Y6
	VMOVUPS    Y5, (DI)
	VMOVUPS    Y6, 32(DI)
	ADDQ       $32, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        loopAddEvensS
	VZEROUPPER
	RET

// func addEvensD(dst, src *float64, blocks int)
//
// The same for 4 float64 a block.
TEXT ·addEvensD(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX

loopAddEvensD:
	VMOVUPD    (SI), Y0
	VUNPCKLPD  Y0, Y0, Y1         // a0 a0 | a2 a2
	VUNPCKHPD  Y0, Y0, Y2         // a1 a1 | a3 a3
	VPERM2F128 $0x20, Y2, Y1, Y3  // a0 a0 a1 a1
	VPERM2F128 $0x31, Y2, Y1, Y4  // a2 a2 a3 a3
	VMOVUPD    (DI), Y5
	VMOVUPD    32(DI), Y6
	VADDPD     Y3, Y5, Y7
	VADDPD     Y4, Y6, Y8
	VBLENDPD   $0x5, Y7, Y5, Y5
	VBLENDPD   $0x5, Y8, Y6, Y6
	VMOVUPD    Y5, (DI)
	VMOVUPD    Y6, 32(DI)
	ADDQ       $32, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        loopAddEvensD
	VZEROUPPER
	RET
