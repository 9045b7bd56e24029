//go:build amd64 && !purego

#include "textflag.h"

// func addBiasS(c *float32, ldc int, bias *float32, rows, vecs int)
// For i < rows, j < 8·vecs: c[i·ldc+j] = 1·c[i·ldc+j] + bias[i], fused
// (the instruction and operand order of vmath's axpbS with a = 1).
// rows, vecs ≥ 1.
TEXT ·addBiasS(SB), NOSPLIT, $0-40
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), DX
	SHLQ $2, DX
	MOVQ bias+16(FP), SI
	MOVQ rows+24(FP), CX
	MOVQ vecs+32(FP), R8
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	VBROADCASTSS X15, Y15

rowS:
	VBROADCASTSS (SI), Y14
	MOVQ DI, R9
	MOVQ R8, R10

vecS:
	VMOVUPS (R9), Y0
	VFMADD213PS Y14, Y15, Y0
	VMOVUPS Y0, (R9)
	ADDQ $32, R9
	DECQ R10
	JNZ  vecS
	ADDQ $4, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  rowS
	VZEROUPPER
	RET

// func addBiasD(c *float64, ldc int, bias *float64, rows, vecs int)
// addBiasS for float64: j < 4·vecs (vmath's axpbD with a = 1).
TEXT ·addBiasD(SB), NOSPLIT, $0-40
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), DX
	SHLQ $3, DX
	MOVQ bias+16(FP), SI
	MOVQ rows+24(FP), CX
	MOVQ vecs+32(FP), R8
	MOVQ $0x3ff0000000000000, AX
	VMOVQ AX, X15
	VBROADCASTSD X15, Y15

rowD:
	VBROADCASTSD (SI), Y14
	MOVQ DI, R9
	MOVQ R8, R10

vecD:
	VMOVUPD (R9), Y0
	VFMADD213PD Y14, Y15, Y0
	VMOVUPD Y0, (R9)
	ADDQ $32, R9
	DECQ R10
	JNZ  vecD
	ADDQ $8, SI
	ADDQ DX, DI
	DECQ CX
	JNZ  rowD
	VZEROUPPER
	RET
