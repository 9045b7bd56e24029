//go:build amd64 && !purego

#include "textflag.h"

// The AVX2 bin loops of psroipool.go (psroipool_amd64.go). binSum's sums
// are binSumLanes': lane l of V (8 float32, 4 float64) adds, from +0 and
// with its running value as the first operand, the elements of columns
// j ≡ l (mod V) row by row, a row's columns in order; a last partial
// block of a row is ANDed with a mask (+0 in its unused lanes, which
// changes no lane: a lane from +0 is never −0). binAdd adds d to each
// element (element first) and blends a partial block's unused lanes back
// unchanged. The caller makes sure that every block of V read (and, for
// binAdd, written) lies in its slice.

// maskS: 32 bytes of ones, then 32 of zeros, for both widths: the mask
// of r < V lanes starts (V − r) lanes in.
DATA maskS<>+0(SB)/8, $0xffffffffffffffff
DATA maskS<>+8(SB)/8, $0xffffffffffffffff
DATA maskS<>+16(SB)/8, $0xffffffffffffffff
DATA maskS<>+24(SB)/8, $0xffffffffffffffff
DATA maskS<>+32(SB)/8, $0
DATA maskS<>+40(SB)/8, $0
DATA maskS<>+48(SB)/8, $0
DATA maskS<>+56(SB)/8, $0
GLOBL maskS<>(SB), RODATA|NOPTR, $64

// func binSumS(x *float32, stride, rows, cols int) float32
//
// rows ≥ 1 rows of cols ≥ 1 elements, stride elements apart.
TEXT ·binSumS(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $2, DX
	MOVQ rows+16(FP), CX
	MOVQ cols+24(FP), R8
	MOVQ R8, BX
	SHRQ $3, R8                // whole blocks a row
	ANDQ $7, BX                // the partial block's lanes
	LEAQ maskS<>(SB), AX
	MOVQ $8, R10
	SUBQ BX, R10
	VMOVUPS (AX)(R10*4), Y2
	VXORPS Y0, Y0, Y0

sumRowS:
	MOVQ SI, DI
	MOVQ R8, R9
	TESTQ R9, R9
	JZ   sumPartS

sumBlockS:
	VADDPS (DI), Y0, Y0
	ADDQ $32, DI
	DECQ R9
	JNZ  sumBlockS

sumPartS:
	TESTQ BX, BX
	JZ    sumNextS
	VANDPS (DI), Y2, Y1
	VADDPS Y1, Y0, Y0

sumNextS:
	ADDQ DX, SI
	DECQ CX
	JNZ  sumRowS

	// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+32(FP)
	RET

// func binSumD(x *float64, stride, rows, cols int) float64
//
// binSumS for float64, 4 lanes: (l0 + l2) + (l1 + l3).
TEXT ·binSumD(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $3, DX
	MOVQ rows+16(FP), CX
	MOVQ cols+24(FP), R8
	MOVQ R8, BX
	SHRQ $2, R8
	ANDQ $3, BX
	LEAQ maskS<>(SB), AX
	MOVQ $4, R10
	SUBQ BX, R10
	VMOVUPD (AX)(R10*8), Y2
	VXORPD Y0, Y0, Y0

sumRowD:
	MOVQ SI, DI
	MOVQ R8, R9
	TESTQ R9, R9
	JZ   sumPartD

sumBlockD:
	VADDPD (DI), Y0, Y0
	ADDQ $32, DI
	DECQ R9
	JNZ  sumBlockD

sumPartD:
	TESTQ BX, BX
	JZ    sumNextD
	VANDPD (DI), Y2, Y1
	VADDPD Y1, Y0, Y0

sumNextD:
	ADDQ DX, SI
	DECQ CX
	JNZ  sumRowD

	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VUNPCKHPD    X0, X0, X1
	VADDSD       X1, X0, X0
	VZEROUPPER
	MOVSD        X0, ret+32(FP)
	RET

// func binAddS(x *float32, stride, rows, cols int, d float32)
//
// x[r·stride + j] += d for r < rows, j < cols (rows, cols ≥ 1).
TEXT ·binAddS(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $2, DX
	MOVQ rows+16(FP), CX
	MOVQ cols+24(FP), R8
	VBROADCASTSS d+32(FP), Y3
	MOVQ R8, BX
	SHRQ $3, R8
	ANDQ $7, BX
	LEAQ maskS<>(SB), AX
	MOVQ $8, R10
	SUBQ BX, R10
	VMOVUPS (AX)(R10*4), Y2

addRowS:
	MOVQ SI, DI
	MOVQ R8, R9
	TESTQ R9, R9
	JZ   addPartS

addBlockS:
	VMOVUPS (DI), Y1
	VADDPS  Y3, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	DECQ R9
	JNZ  addBlockS

addPartS:
	TESTQ BX, BX
	JZ    addNextS
	VMOVUPS   (DI), Y1
	VADDPS    Y3, Y1, Y4
	VBLENDVPS Y2, Y4, Y1, Y1
	VMOVUPS   Y1, (DI)

addNextS:
	ADDQ DX, SI
	DECQ CX
	JNZ  addRowS
	VZEROUPPER
	RET

// func binAddD(x *float64, stride, rows, cols int, d float64)
//
// binAddS for float64.
TEXT ·binAddD(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ stride+8(FP), DX
	SHLQ $3, DX
	MOVQ rows+16(FP), CX
	MOVQ cols+24(FP), R8
	VBROADCASTSD d+32(FP), Y3
	MOVQ R8, BX
	SHRQ $2, R8
	ANDQ $3, BX
	LEAQ maskS<>(SB), AX
	MOVQ $4, R10
	SUBQ BX, R10
	VMOVUPD (AX)(R10*8), Y2

addRowD:
	MOVQ SI, DI
	MOVQ R8, R9
	TESTQ R9, R9
	JZ   addPartD

addBlockD:
	VMOVUPD (DI), Y1
	VADDPD  Y3, Y1, Y1
	VMOVUPD Y1, (DI)
	ADDQ $32, DI
	DECQ R9
	JNZ  addBlockD

addPartD:
	TESTQ BX, BX
	JZ    addNextD
	VMOVUPD   (DI), Y1
	VADDPD    Y3, Y1, Y4
	VBLENDVPD Y2, Y4, Y1, Y1
	VMOVUPD   Y1, (DI)

addNextD:
	ADDQ DX, SI
	DECQ CX
	JNZ  addRowD
	VZEROUPPER
	RET
