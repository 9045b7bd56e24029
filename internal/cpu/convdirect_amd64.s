//go:build amd64 && !purego

#include "textflag.h"

// The AVX-512 loops of the direct convolution kernels (convdirect.go):
// tapRows* compute one column block of up to 16 (float32) or 8 (float64)
// outputs of every row, the lanes in mask K1; tapDots* the dot products
// of the weight's gradient. Each tap is a fused multiply-add, the taps in
// order, so an output's value depends only on its inputs, never on which
// rows or blocks a call covers.

// TAPS8 adds tap t (CX) of the 8 rows from BX (row step R13, 3·step R14)
// into Z0–Z7: the offset offs[t] (R9) and the weight taps[t] (R8)
// broadcast into Z8. DX and DI are clobbered. SZ is the element size,
// BCAST the broadcast and FMA the fused multiply-add.
#define TAPS8(SZ, BCAST, FMA) \
	MOVQ  (R9)(CX*8), DX \
	LEAQ  (BX)(DX*SZ), DX \
	LEAQ  (DX)(R13*4), DI \
	BCAST (R8)(CX*SZ), Z8 \
	FMA   (DX), Z8, K1, Z0 \
	FMA   (DX)(R13*1), Z8, K1, Z1 \
	FMA   (DX)(R13*2), Z8, K1, Z2 \
	FMA   (DX)(R14*1), Z8, K1, Z3 \
	FMA   (DI), Z8, K1, Z4 \
	FMA   (DI)(R13*1), Z8, K1, Z5 \
	FMA   (DI)(R13*2), Z8, K1, Z6 \
	FMA   (DI)(R14*1), Z8, K1, Z7

// STORE8 stores Z0–Z7, lanes K1, into the 8 rows from DX (row step R12);
// BX and DI are clobbered.
#define STORE8(MOV) \
	LEAQ (DX)(R12*2), BX \
	LEAQ (DX)(R12*4), DI \
	MOV  Z0, K1, (DX) \
	MOV  Z1, K1, (DX)(R12*1) \
	MOV  Z2, K1, (BX) \
	MOV  Z3, K1, (BX)(R12*1) \
	MOV  Z4, K1, (DI) \
	MOV  Z5, K1, (DI)(R12*1) \
	LEAQ (DI)(R12*2), BX \
	MOV  Z6, K1, (BX) \
	MOV  Z7, K1, (BX)(R12*1)

// BIAS8 sets Z0–Z7 to Z31.
#define BIAS8(MOV) \
	MOV Z31, Z0 \
	MOV Z31, Z1 \
	MOV Z31, Z2 \
	MOV Z31, Z3 \
	MOV Z31, Z4 \
	MOV Z31, Z5 \
	MOV Z31, Z6 \
	MOV Z31, Z7

// TAPROWS is the body of tapRowsS and tapRowsD, after Z31 is set to the
// bias and K1 to the lanes: element size SZ bytes (SHIFT its log2),
// broadcast BCAST, fused multiply-add FMA, register move MOVA, unaligned
// store MOVU.
#define TAPROWS(SHIFT, SZ, BCAST, FMA, MOVA, MOVU) \
	MOVQ  src+8(FP), SI \
	MOVQ  taps+16(FP), R8 \
	MOVQ  offs+24(FP), R9 \
	MOVQ  ntaps+32(FP), R10 \
	MOVQ  rows+40(FP), R11 \
	MOVQ  dstStride+48(FP), R12 \
	MOVQ  srcStep+56(FP), R13 \
	SHLQ  $SHIFT, R12 \
	SHLQ  $SHIFT, R13 \
	LEAQ  (R13)(R13*2), R14 \
	XORQ  AX, AX \
	CMPQ  R11, $8 \
	JLT   rows \
group: \
	MOVQ  AX, BX \
	IMULQ R13, BX \
	ADDQ  SI, BX \
	BIAS8(MOVA) \
	XORQ  CX, CX \
taps: \
	TAPS8(SZ, BCAST, FMA) \
	INCQ  CX \
	CMPQ  CX, R10 \
	JLT   taps \
	MOVQ  AX, DX \
	IMULQ R12, DX \
	ADDQ  dst+0(FP), DX \
	STORE8(MOVU) \
	ADDQ  $8, AX \
	CMPQ  AX, R11 \
	JGE   done \
	LEAQ  8(AX), BX \
	CMPQ  BX, R11 \
	JLE   group \
	LEAQ  -8(R11), AX \
	JMP   group \
rows: \
	MOVQ  AX, BX \
	IMULQ R13, BX \
	ADDQ  SI, BX \
	MOVA  Z31, Z0 \
	XORQ  CX, CX \
rowTaps: \
	MOVQ  (R9)(CX*8), DX \
	BCAST (R8)(CX*SZ), Z8 \
	FMA   (BX)(DX*SZ), Z8, K1, Z0 \
	INCQ  CX \
	CMPQ  CX, R10 \
	JLT   rowTaps \
	MOVQ  AX, DX \
	IMULQ R12, DX \
	ADDQ  dst+0(FP), DX \
	MOVU  Z0, K1, (DX) \
	INCQ  AX \
	CMPQ  AX, R11 \
	JLT   rows \
done: \
	VZEROUPPER \
	RET

// TAPDOTS is the body of tapDotsS and tapDotsD, with LANES elements a
// block (SHIFT log2 of the element size, SZ the size): loads MOVU, fused
// multiply-add FMA, register move MOVA, add ADD; it ends with the sum of
// the four accumulators in Z0.
#define TAPDOTS(LANES, SHIFT, SZ, MOVU, FMA, MOVA, ADD) \
	MOVQ  dots+0(FP), DI \
	MOVQ  offs+24(FP), R9 \
	MOVQ  ntaps+32(FP), R10 \
	MOVQ  wo+48(FP), R11 \
	MOVQ  grStride+56(FP), R12 \
	MOVQ  srcStep+64(FP), R13 \
	SHLQ  $SHIFT, R12 \
	SHLQ  $SHIFT, R13 \
	MOVQ  R11, CX \
	ANDQ  $(LANES-1), CX \
	MOVQ  $1, AX \
	SHLQ  CX, AX \
	DECQ  AX \
	KMOVW AX, K2 \
	SHRQ  $(6-SHIFT), R11 \
	XORQ  R8, R8 \
tap: \
	MOVQ   src+16(FP), SI \
	MOVQ   (R9)(R8*8), DX \
	LEAQ   (SI)(DX*SZ), SI \
	MOVQ   gr+8(FP), BX \
	MOVQ   rows+40(FP), R14 \
	VPXORQ Z0, Z0, Z0 \
	VPXORQ Z1, Z1, Z1 \
	VPXORQ Z2, Z2, Z2 \
	VPXORQ Z3, Z3, Z3 \
row: \
	XORQ CX, CX \
	XORQ DX, DX \
block: \
	CMPQ CX, R11 \
	JGE  tail \
	MOVU (BX)(DX*1), Z4 \
	FMA  (SI)(DX*1), Z4, Z0 \
	ADDQ $64, DX \
	INCQ CX \
	JMP  block \
tail: \
	MOVU.Z (BX)(DX*1), K2, Z4 \
	FMA    (SI)(DX*1), Z4, K2, Z0 \
	MOVA   Z0, Z5 \
	MOVA   Z1, Z0 \
	MOVA   Z2, Z1 \
	MOVA   Z3, Z2 \
	MOVA   Z5, Z3 \
	ADDQ   R12, BX \
	ADDQ   R13, SI \
	DECQ   R14 \
	JNZ    row \
	ADD    Z1, Z0, Z0 \
	ADD    Z3, Z2, Z2 \
	ADD    Z2, Z0, Z0 \
	VEXTRACTF64X4 $1, Z0, Y1 \
	ADD    Y1, Y0, Y0 \
	VEXTRACTF128  $1, Y0, X1 \
	ADD    X1, X0, X0

// func tapRowsS(dst, src, taps *float32, offs *int, ntaps, rows, dstStride, srcStep, mask int, bias float32)
//
// dst[r·dstStride + x] = bias + Σ_t taps[t]·src[r·srcStep + offs[t] + x]
// for r < rows and the x < 16 in mask; ntaps ≥ 1, rows ≥ 1. Rows go 8 at
// a time, the last 8 overlapping the ones before when rows is not a
// multiple of 8 (the same values again); fewer than 8 rows go one by one.
TEXT ·tapRowsS(SB), NOSPLIT, $0-76
	MOVQ         mask+64(FP), AX
	KMOVW        AX, K1
	VBROADCASTSS bias+72(FP), Z31
	TAPROWS(2, 4, VBROADCASTSS, VFMADD231PS, VMOVAPS, VMOVUPS)

// func tapRowsD(dst, src, taps *float64, offs *int, ntaps, rows, dstStride, srcStep, mask int, bias float64)
//
// tapRowsS for float64, 8 lanes.
TEXT ·tapRowsD(SB), NOSPLIT, $0-80
	MOVQ         mask+64(FP), AX
	KMOVW        AX, K1
	VBROADCASTSD bias+72(FP), Z31
	TAPROWS(3, 8, VBROADCASTSD, VFMADD231PD, VMOVAPD, VMOVUPD)

// func tapDotsS(dots, gr, src *float32, offs *int, ntaps, rows, wo, grStride, srcStep int)
//
// dots[t] = Σ_r Σ_x gr[r·grStride + x]·src[r·srcStep + offs[t] + x] for
// t < ntaps, r < rows, x < wo; ntaps, rows, wo ≥ 1: row r's blocks of 16
// (the last one masked) fused into accumulator r mod 4, then the four
// added ((0+1)+(2+3)) and their lanes halved in turn.
TEXT ·tapDotsS(SB), NOSPLIT, $0-72
	TAPDOTS(16, 2, 4, VMOVUPS, VFMADD231PS, VMOVAPS, VADDPS)
	VMOVHLPS  X0, X0, X1
	VADDPS    X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS    X1, X0, X0
	VMOVSS    X0, (DI)(R8*4)
	INCQ      R8
	CMPQ      R8, R10
	JLT       tap
	VZEROUPPER
	RET

// func tapDotsD(dots, gr, src *float64, offs *int, ntaps, rows, wo, grStride, srcStep int)
//
// tapDotsS for float64, blocks of 8.
TEXT ·tapDotsD(SB), NOSPLIT, $0-72
	TAPDOTS(8, 3, 8, VMOVUPD, VFMADD231PD, VMOVAPD, VADDPD)
	VUNPCKHPD X0, X0, X1
	VADDSD    X1, X0, X0
	VMOVSD    X0, (DI)(R8*8)
	INCQ      R8
	CMPQ      R8, R10
	JLT       tap
	VZEROUPPER
	RET

// func copyRowsB(dst, src *byte, rows, n, dstStride, srcStride int)
//
// Copies rows rows of n bytes from src (row step srcStride bytes) to dst
// (row step dstStride bytes), 64 bytes at a time, the last block masked;
// rows ≥ 1.
TEXT ·copyRowsB(SB), NOSPLIT, $0-48
	MOVQ  dst+0(FP), DI
	MOVQ  src+8(FP), SI
	MOVQ  rows+16(FP), R8
	MOVQ  n+24(FP), R9
	MOVQ  dstStride+32(FP), R10
	MOVQ  srcStride+40(FP), R11
	MOVQ  R9, CX
	ANDQ  $63, CX
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVQ AX, K1
	SHRQ  $6, R9

copyRow:
	XORQ DX, DX
	XORQ CX, CX

copyBlock:
	CMPQ     CX, R9
	JGE      copyTail
	VMOVDQU8 (SI)(DX*1), Z0
	VMOVDQU8 Z0, (DI)(DX*1)
	ADDQ     $64, DX
	INCQ     CX
	JMP      copyBlock

copyTail:
	VMOVDQU8.Z (SI)(DX*1), K1, Z0
	VMOVDQU8   Z0, K1, (DI)(DX*1)
	ADDQ       R10, DI
	ADDQ       R11, SI
	DECQ       R8
	JNZ        copyRow
	VZEROUPPER
	RET
