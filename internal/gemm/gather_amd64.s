//go:build amd64 && !purego

#include "textflag.h"

// func gatherRows(dst, src unsafe.Pointer, offs *int, n, ld, size, bytes int)
// For r < n: the 64 or 128 bytes (bytes) at src + offs[r]·size go to
// dst + r·ld (ld in bytes), by 32-byte loads and stores. n ≥ 1.
TEXT ·gatherRows(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ ld+32(FP), DX
	MOVQ size+40(FP), R8
	MOVQ bytes+48(FP), R9
	CMPQ R9, $128
	JEQ  loop128

loop64:
	MOVQ    (BX), AX
	IMULQ   R8, AX
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	PREFETCHT0 127(SI)(AX*1)
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $8, BX
	ADDQ    DX, DI
	DECQ    CX
	JNZ     loop64
	VZEROUPPER
	RET

loop128:
	MOVQ    (BX), AX
	IMULQ   R8, AX
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS 64(SI)(AX*1), Y2
	VMOVUPS 96(SI)(AX*1), Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $8, BX
	ADDQ    DX, DI
	DECQ    CX
	JNZ     loop128
	VZEROUPPER
	RET

// func spreadRow(dst, src unsafe.Pointer, n, stride, bytes int)
// For q < n: the 64 or 128 bytes (bytes) at src + q·bytes go to
// dst + q·stride: one row of B spread over n packed panels. n ≥ 1.
TEXT ·spreadRow(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ stride+24(FP), DX
	MOVQ bytes+32(FP), R9
	CMPQ R9, $128
	JEQ  spread128

spread64:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $64, SI
	ADDQ    DX, DI
	DECQ    CX
	JNZ     spread64
	VZEROUPPER
	RET

spread128:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    DX, DI
	DECQ    CX
	JNZ     spread128
	VZEROUPPER
	RET
