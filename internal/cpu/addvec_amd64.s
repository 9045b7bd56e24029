//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 kernels of addvec_amd64.go: y[i] = x[i] + y[i] (x the first
// operand, as in gonum's axpy) over whole 32-byte registers, four at a
// time, then one.

// ADDBLOCKS adds CX blocks of 32 bytes from SI into DI with the add
// instruction op (labels are local to each TEXT).
#define ADDBLOCKS(op) \
	MOVQ y+0(FP), DI \
	MOVQ x+8(FP), SI \
	MOVQ blocks+16(FP), CX \
four: \
	CMPQ CX, $4 \
	JLT one \
	VMOVUPS (SI), Y0 \
	VMOVUPS 32(SI), Y1 \
	VMOVUPS 64(SI), Y2 \
	VMOVUPS 96(SI), Y3 \
	op (DI), Y0, Y0 \
	op 32(DI), Y1, Y1 \
	op 64(DI), Y2, Y2 \
	op 96(DI), Y3, Y3 \
	VMOVUPS Y0, (DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	ADDQ $128, SI \
	ADDQ $128, DI \
	SUBQ $4, CX \
	JMP four \
one: \
	TESTQ CX, CX \
	JEQ done \
	VMOVUPS (SI), Y0 \
	op (DI), Y0, Y0 \
	VMOVUPS Y0, (DI) \
	ADDQ $32, SI \
	ADDQ $32, DI \
	DECQ CX \
	JMP one \
done: \
	VZEROUPPER \
	RET

// func addS(y, x *float32, blocks int): 8·blocks floats.
TEXT ·addS(SB), NOSPLIT, $0-24
	ADDBLOCKS(VADDPS)

// func addD(y, x *float64, blocks int): 4·blocks doubles.
TEXT ·addD(SB), NOSPLIT, $0-24
	ADDBLOCKS(VADDPD)
