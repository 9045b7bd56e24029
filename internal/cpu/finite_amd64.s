//go:build amd64 && !purego

#include "textflag.h"

// func finiteS(x *float32, blocks int) bool
// finiteRun's test on 32·blocks float32 in AVX2: four accumulators of
// eight lanes sum v − v (0 for a finite v, NaN for ±Inf and NaN); true
// when every lane of their sum is 0.
TEXT ·finiteS(SB), NOSPLIT, $0-17
	MOVQ   x+0(FP), SI
	MOVQ   blocks+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     sdone

sloop:
	VMOVUPS (SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VSUBPS  Y4, Y4, Y4
	VSUBPS  Y5, Y5, Y5
	VSUBPS  Y6, Y6, Y6
	VSUBPS  Y7, Y7, Y7
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	ADDQ    $128, SI
	DECQ    CX
	JNZ     sloop

sdone:
	VADDPS    Y1, Y0, Y0
	VADDPS    Y3, Y2, Y2
	VADDPS    Y2, Y0, Y0
	VXORPS    Y8, Y8, Y8
	VCMPPS    $0, Y8, Y0, Y9 // lanes equal to 0 (NaN is not)
	VMOVMSKPS Y9, AX
	CMPL      AX, $0xff
	SETEQ     ret+16(FP)
	VZEROUPPER
	RET

// func finiteD(x *float64, blocks int) bool
// finiteS for 16·blocks float64.
TEXT ·finiteD(SB), NOSPLIT, $0-17
	MOVQ   x+0(FP), SI
	MOVQ   blocks+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     ddone

dloop:
	VMOVUPD (SI), Y4
	VMOVUPD 32(SI), Y5
	VMOVUPD 64(SI), Y6
	VMOVUPD 96(SI), Y7
	VSUBPD  Y4, Y4, Y4
	VSUBPD  Y5, Y5, Y5
	VSUBPD  Y6, Y6, Y6
	VSUBPD  Y7, Y7, Y7
	VADDPD  Y4, Y0, Y0
	VADDPD  Y5, Y1, Y1
	VADDPD  Y6, Y2, Y2
	VADDPD  Y7, Y3, Y3
	ADDQ    $128, SI
	DECQ    CX
	JNZ     dloop

ddone:
	VADDPD    Y1, Y0, Y0
	VADDPD    Y3, Y2, Y2
	VADDPD    Y2, Y0, Y0
	VXORPD    Y8, Y8, Y8
	VCMPPD    $0, Y8, Y0, Y9
	VMOVMSKPD Y9, AX
	CMPL      AX, $0xf
	SETEQ     ret+16(FP)
	VZEROUPPER
	RET
