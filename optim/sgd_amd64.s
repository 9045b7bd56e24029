//go:build amd64 && !purego

#include "textflag.h"

// UPDATE is a block's momentum and parameter update from p in Y0 and d
// in Y1: b = fma(damp1, d, b·mom), p = fma(negLR, b, p); it stores both
// and moves the pointers to the next block.
#define UPDATE \
	VMOVUPS (DX), Y2 \
	VMULPS Y13, Y2, Y2 \
	VFMADD231PS Y1, Y14, Y2 \
	VMOVUPS Y2, (DX) \
	VFMADD231PS Y2, Y15, Y0 \
	VMOVUPS Y0, (DI) \
	ADDQ $32, DI \
	ADDQ $32, SI \
	ADDQ $32, DX \
	DECQ CX

// UPDATEFIRST is UPDATE for a new buffer (torch's buf = clone(d)): b = d,
// p = fma(negLR, b, p).
#define UPDATEFIRST \
	VMOVUPS Y1, (DX) \
	VFMADD231PS Y1, Y15, Y0 \
	VMOVUPS Y0, (DI) \
	ADDQ $32, DI \
	ADDQ $32, SI \
	ADDQ $32, DX \
	DECQ CX

// func sgdMomS(param, grad, buf *float32, blocks int, wd, mom, damp1, negLR float32, flags int)
// For each block of 8 floats: d = fma(wd, p, g) (d = g without decay,
// flags bit 0), b = fma(damp1, d, b·mom) (b = d on the first step, flags
// bit 1), p = fma(negLR, b, p); torch's SGD step with momentum, each
// VFMADD231PS rounded once.
TEXT ·sgdMomS(SB), NOSPLIT, $0-56
	MOVQ param+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ buf+16(FP), DX
	MOVQ blocks+24(FP), CX
	VBROADCASTSS wd+32(FP), Y12
	VBROADCASTSS mom+36(FP), Y13
	VBROADCASTSS damp1+40(FP), Y14
	VBROADCASTSS negLR+44(FP), Y15
	MOVQ flags+48(FP), AX
	CMPQ AX, $1
	JEQ withdecay
	CMPQ AX, $2
	JEQ first
	CMPQ AX, $3
	JEQ firstdecay

plain:
	TESTQ CX, CX
	JEQ done
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	UPDATE
	JMP plain

withdecay:
	TESTQ CX, CX
	JEQ done
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VFMADD231PS Y0, Y12, Y1 // d = wd·p + g
	UPDATE
	JMP withdecay

first:
	TESTQ CX, CX
	JEQ done
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	UPDATEFIRST
	JMP first

firstdecay:
	TESTQ CX, CX
	JEQ done
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VFMADD231PS Y0, Y12, Y1 // d = wd·p + g
	UPDATEFIRST
	JMP firstdecay

done:
	VZEROUPPER
	RET
