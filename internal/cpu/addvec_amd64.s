//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 kernels of addvec_amd64.go: y[i] = x[i] + y[i] (x the first
// operand, as in gonum's axpy) over whole 32-byte registers, four at a
// time, then one.

// func addS(y, x *float32, blocks int): 8·blocks floats.
TEXT ·addS(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ blocks+16(FP), CX

addS4:
	CMPQ CX, $4
	JLT addS1
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS (DI), Y0, Y0
	VADDPS 32(DI), Y1, Y1
	VADDPS 64(DI), Y2, Y2
	VADDPS 96(DI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $4, CX
	JMP addS4

addS1:
	TESTQ CX, CX
	JEQ addSdone
	VMOVUPS (SI), Y0
	VADDPS (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JMP addS1

addSdone:
	VZEROUPPER
	RET

// func addD(y, x *float64, blocks int): 4·blocks doubles.
TEXT ·addD(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ blocks+16(FP), CX

addD4:
	CMPQ CX, $4
	JLT addD1
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPD (DI), Y0, Y0
	VADDPD 32(DI), Y1, Y1
	VADDPD 64(DI), Y2, Y2
	VADDPD 96(DI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $4, CX
	JMP addD4

addD1:
	TESTQ CX, CX
	JEQ addDdone
	VMOVUPS (SI), Y0
	VADDPD (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JMP addD1

addDdone:
	VZEROUPPER
	RET
