//go:build amd64 && !purego

#include "textflag.h"

// The AVX-512 loops of the direct convolution kernels (convdirect.go):
// tapRows* compute one column block of up to 16 (float32) or 8 (float64)
// outputs of every row, the lanes in mask K1; tapDots9* nine dot
// products of the weight's gradient; copyRowsB copies the padded planes'
// rows. Each tap is a fused multiply-add, the taps in
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

// COLMASKS points R at masks (masks+32(FP)) and loads its first six, the
// three kernel columns' lanes of two column blocks, into K1–K6.
#define COLMASKS(R) \
	MOVQ  masks+32(FP), R \
	KMOVW 0(R), K1 \
	KMOVW 8(R), K2 \
	KMOVW 16(R), K3 \
	KMOVW 24(R), K4 \
	KMOVW 32(R), K5 \
	KMOVW 40(R), K6

// TAPPTR sets R to the address of src (SI) plus the offset at OFF(DI),
// in elements of SZ bytes.
#define TAPPTR(OFF, R, SZ) \
	MOVQ OFF(DI), R \
	LEAQ (SI)(R*SZ), R

// DOTSETUP turns grStride (in place) and srcStep (into R14) from elements
// of SZ bytes (SHIFT its log2) into bytes, points AX, BX, CX, DX, R8–R12
// at src (src+16(FP)) plus the nine offsets at offs (offs+24(FP)), SI at
// gr, and clears the nine tap sums Z8–Z16.
#define DOTSETUP(SHIFT, SZ) \
	MOVQ   grStride+48(FP), R14 \
	SHLQ   $SHIFT, R14 \
	MOVQ   R14, grStride+48(FP) \
	MOVQ   srcStep+56(FP), R14 \
	SHLQ   $SHIFT, R14 \
	MOVQ   src+16(FP), SI \
	MOVQ   offs+24(FP), DI \
	TAPPTR(0, AX, SZ) \
	TAPPTR(8, BX, SZ) \
	TAPPTR(16, CX, SZ) \
	TAPPTR(24, DX, SZ) \
	TAPPTR(32, R8, SZ) \
	TAPPTR(40, R9, SZ) \
	TAPPTR(48, R10, SZ) \
	TAPPTR(56, R11, SZ) \
	TAPPTR(64, R12, SZ) \
	MOVQ   gr+8(FP), SI \
	VPXORQ Z8, Z8, Z8 \
	VPXORQ Z9, Z9, Z9 \
	VPXORQ Z10, Z10, Z10 \
	VPXORQ Z11, Z11, Z11 \
	VPXORQ Z12, Z12, Z12 \
	VPXORQ Z13, Z13, Z13 \
	VPXORQ Z14, Z14, Z14 \
	VPXORQ Z15, Z15, Z15 \
	VPXORQ Z16, Z16, Z16

// DOTSTEP moves SI a gradient row on (grStride+48(FP), in bytes) and the
// nine tap pointers a source row (R14 bytes).
#define DOTSTEP \
	ADDQ grStride+48(FP), SI \
	ADDQ R14, AX \
	ADDQ R14, BX \
	ADDQ R14, CX \
	ADDQ R14, DX \
	ADDQ R14, R8 \
	ADDQ R14, R9 \
	ADDQ R14, R10 \
	ADDQ R14, R11 \
	ADDQ R14, R12

// DOTS9 is the body of tapDots9S and tapDots9D, elements of SZ bytes
// (SHIFT its log2), LANES a block: loads MOVU, fused multiply-add FMA. It
// leaves tap k's sum, 16 (8) lanes, in Z(8+k), and dots in DI.
#define DOTS9(LANES, SHIFT, SZ, MOVU, FMA) \
	MOVQ   wo+40(FP), CX \
	MOVQ   CX, DI \
	ANDQ   $(LANES-1), CX \
	MOVQ   $1, AX \
	SHLQ   CX, AX \
	DECQ   AX \
	KMOVW  AX, K2 \
	SHRQ   $(6-SHIFT), DI \
	SHLQ   $6, DI \
	MOVQ   DI, wo+40(FP) \
	DOTSETUP(SHIFT, SZ) \
	MOVQ   rows+32(FP), R13 \
row: \
	XORQ DI, DI \
block: \
	CMPQ DI, wo+40(FP) \
	JGE  tail \
	MOVU (SI)(DI*1), Z0 \
	FMA  (AX)(DI*1), Z0, Z8 \
	FMA  (BX)(DI*1), Z0, Z9 \
	FMA  (CX)(DI*1), Z0, Z10 \
	FMA  (DX)(DI*1), Z0, Z11 \
	FMA  (R8)(DI*1), Z0, Z12 \
	FMA  (R9)(DI*1), Z0, Z13 \
	FMA  (R10)(DI*1), Z0, Z14 \
	FMA  (R11)(DI*1), Z0, Z15 \
	FMA  (R12)(DI*1), Z0, Z16 \
	ADDQ $64, DI \
	JMP  block \
tail: \
	MOVU.Z (SI)(DI*1), K2, Z0 \
	FMA    (AX)(DI*1), Z0, K2, Z8 \
	FMA    (BX)(DI*1), Z0, K2, Z9 \
	FMA    (CX)(DI*1), Z0, K2, Z10 \
	FMA    (DX)(DI*1), Z0, K2, Z11 \
	FMA    (R8)(DI*1), Z0, K2, Z12 \
	FMA    (R9)(DI*1), Z0, K2, Z13 \
	FMA    (R10)(DI*1), Z0, K2, Z14 \
	FMA    (R11)(DI*1), Z0, K2, Z15 \
	FMA    (R12)(DI*1), Z0, K2, Z16 \
	DOTSTEP \
	DECQ   R13 \
	JNZ    row \
	MOVQ   dots+0(FP), DI

// HSUMS stores the sum of Z's 16 float32 lanes (Y its low half), halved
// in turn, at OFF(DI); Y1 and Y2 are clobbered.
#define HSUMS(Z, Y, OFF) \
	VEXTRACTF64X4 $1, Z, Y1 \
	VADDPS        Y1, Y, Y1 \
	VEXTRACTF128  $1, Y1, X2 \
	VADDPS        X2, X1, X1 \
	VMOVHLPS      X1, X1, X2 \
	VADDPS        X2, X1, X1 \
	VMOVSHDUP     X1, X2 \
	VADDSS        X2, X1, X1 \
	VMOVSS        X1, OFF(DI)

// HSUMD is HSUMS for Z's 8 float64 lanes.
#define HSUMD(Z, Y, OFF) \
	VEXTRACTF64X4 $1, Z, Y1 \
	VADDPD        Y1, Y, Y1 \
	VEXTRACTF128  $1, Y1, X2 \
	VADDPD        X2, X1, X1 \
	VUNPCKHPD     X1, X1, X2 \
	VADDSD        X2, X1, X1 \
	VMOVSD        X1, OFF(DI)

// COL3X3 reads the two column blocks at P (lanes KA, KB, zeros in the
// others) and fuses them with the taps WA, WB, WC of kernel rows 0, 1, 2
// into output rows i (Z0, Z3), i−1 (Z1, Z4) and i−2 (Z2, Z5); Z6 and Z7
// are clobbered.
#define COL3X3(MOVU, FMA, P, WA, WB, WC, KA, KB) \
	MOVU.Z (P), KA, Z6 \
	MOVU.Z 64(P), KB, Z7 \
	FMA    Z6, WA, Z0 \
	FMA    Z6, WB, Z1 \
	FMA    Z6, WC, Z2 \
	FMA    Z7, WA, Z3 \
	FMA    Z7, WB, Z4 \
	FMA    Z7, WC, Z5

// ZERO3X3 is COL3X3 three times over a row of zeros (Z6): the same
// fused multiply-adds, reading nothing.
#define ZERO3X3(FMA, MOVA) \
	VPXORQ Z6, Z6, Z6 \
	FMA    Z6, Z16, Z0 \
	FMA    Z6, Z19, Z1 \
	FMA    Z6, Z22, Z2 \
	FMA    Z6, Z16, Z3 \
	FMA    Z6, Z19, Z4 \
	FMA    Z6, Z22, Z5 \
	FMA    Z6, Z17, Z0 \
	FMA    Z6, Z20, Z1 \
	FMA    Z6, Z23, Z2 \
	FMA    Z6, Z17, Z3 \
	FMA    Z6, Z20, Z4 \
	FMA    Z6, Z23, Z5 \
	FMA    Z6, Z18, Z0 \
	FMA    Z6, Z21, Z1 \
	FMA    Z6, Z24, Z2 \
	FMA    Z6, Z18, Z3 \
	FMA    Z6, Z21, Z4 \
	FMA    Z6, Z24, Z5

// ROWS3X3 is the body of tapRows3x3S and tapRows3x3D, after Z31 is set
// to the bias: element size SZ bytes (SHIFT its log2), broadcast BCAST,
// fused multiply-add FMA, register move MOVA, loads and stores MOVU. The
// nine taps sit in Z16–Z24, the column masks in K1–K6; input row i is
// read once (three column offsets, two blocks; zeros outside rows
// [rowLo, rowHi)) and fused into output rows i (Z0, Z3), i−1 (Z1, Z4)
// and i−2 (Z2, Z5), which is then complete: stored (lanes masks[6],
// masks[7]), and the accumulators move up a row.
#define ROWS3X3(SHIFT, SZ, BCAST, FMA, MOVA, MOVU) \
	MOVQ  taps+16(FP), R8 \
	BCAST (R8), Z16 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z17 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z18 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z19 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z20 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z21 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z22 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z23 \
	ADDQ  $SZ, R8 \
	BCAST (R8), Z24 \
	COLMASKS(R8) \
	MOVQ  src+8(FP), SI \
	MOVQ  srcOff+80(FP), R9 \
	LEAQ  (SI)(R9*SZ), SI \
	MOVQ  cols+24(FP), DI \
	TAPPTR(0, AX, SZ) \
	TAPPTR(8, BX, SZ) \
	TAPPTR(16, CX, SZ) \
	MOVQ  dst+0(FP), DI \
	MOVQ  dstStride+48(FP), R12 \
	SHLQ  $SHIFT, R12 \
	MOVQ  srcStep+56(FP), R13 \
	SHLQ  $SHIFT, R13 \
	MOVQ  rows+40(FP), R14 \
	ADDQ  $2, R14 \
	XORQ  DX, DX \
	MOVA  Z31, Z0 \
	MOVA  Z31, Z1 \
	MOVA  Z31, Z2 \
	MOVA  Z31, Z3 \
	MOVA  Z31, Z4 \
	MOVA  Z31, Z5 \
inRow: \
	CMPQ   DX, rowLo+64(FP) \
	JLT    zeroRow \
	CMPQ   DX, rowHi+72(FP) \
	JGE    zeroRow \
	COL3X3(MOVU, FMA, AX, Z16, Z19, Z22, K1, K2) \
	COL3X3(MOVU, FMA, BX, Z17, Z20, Z23, K3, K4) \
	COL3X3(MOVU, FMA, CX, Z18, Z21, Z24, K5, K6) \
	JMP    rowDone \
zeroRow: \
	ZERO3X3(FMA, MOVA) \
rowDone: \
	CMPQ   DX, $2 \
	JLT    moveUp \
	KMOVW  48(R8), K7 \
	MOVU   Z2, K7, (DI) \
	KMOVW  56(R8), K7 \
	MOVU   Z5, K7, 64(DI) \
	ADDQ   R12, DI \
moveUp: \
	MOVA   Z1, Z2 \
	MOVA   Z0, Z1 \
	MOVA   Z31, Z0 \
	MOVA   Z4, Z5 \
	MOVA   Z3, Z4 \
	MOVA   Z31, Z3 \
	ADDQ   R13, AX \
	ADDQ   R13, BX \
	ADDQ   R13, CX \
	INCQ   DX \
	CMPQ   DX, R14 \
	JLT    inRow \
	VZEROUPPER \
	RET

// HSUM9 stores the sums of Z8–Z16 (HSUM: HSUMS or HSUMD) at dots[0..8]
// (DI), elements of SZ bytes.
#define HSUM9(HSUM, SZ) \
	HSUM(Z8, Y8, (0*SZ)) \
	HSUM(Z9, Y9, (1*SZ)) \
	HSUM(Z10, Y10, (2*SZ)) \
	HSUM(Z11, Y11, (3*SZ)) \
	HSUM(Z12, Y12, (4*SZ)) \
	HSUM(Z13, Y13, (5*SZ)) \
	HSUM(Z14, Y14, (6*SZ)) \
	HSUM(Z15, Y15, (7*SZ)) \
	HSUM(Z16, Y16, (8*SZ))

// DOTROW3 fuses the gradient blocks Z0, Z1 with kernel row KI's three
// taps (pointers PA, PB, PC; column masks K1–K6) into ZA, ZB, ZC, when
// input row R13 + KI lies in [rowLo, rowHi) (else it jumps to its label
// SKIP, adding nothing); DI is clobbered.
#define DOTROW3(FMA, KI, PA, PB, PC, ZA, ZB, ZC, SKIP) \
	LEAQ KI(R13), DI \
	CMPQ DI, rowLo+64(FP) \
	JLT  SKIP \
	CMPQ DI, rowHi+72(FP) \
	JGE  SKIP \
	FMA  (PA), Z0, K1, ZA \
	FMA  64(PA), Z1, K2, ZA \
	FMA  (PB), Z0, K3, ZB \
	FMA  64(PB), Z1, K4, ZB \
	FMA  (PC), Z0, K5, ZC \
	FMA  64(PC), Z1, K6, ZC \
SKIP:

// DOTS3X3 is the body of tapDots3x3S and tapDots3x3D, elements of SZ
// bytes (SHIFT its log2): loads MOVU, fused multiply-add FMA. It leaves
// tap k's sum, 16 (8) lanes, in Z(8+k), and dots in DI.
#define DOTS3X3(SHIFT, SZ, MOVU, FMA) \
	COLMASKS(DI) \
	DOTSETUP(SHIFT, SZ) \
	XORQ   R13, R13 \
row: \
	MOVQ   masks+32(FP), DI \
	KMOVW  48(DI), K7 \
	MOVU.Z (SI), K7, Z0 \
	KMOVW  56(DI), K7 \
	MOVU.Z 64(SI), K7, Z1 \
	DOTROW3(FMA, 0, AX, BX, CX, Z8, Z9, Z10, skip0) \
	DOTROW3(FMA, 1, DX, R8, R9, Z11, Z12, Z13, skip1) \
	DOTROW3(FMA, 2, R10, R11, R12, Z14, Z15, Z16, skip2) \
	DOTSTEP \
	INCQ   R13 \
	CMPQ   R13, rows+40(FP) \
	JLT    row \
	MOVQ   dots+0(FP), DI

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

// func tapDots9S(dots, gr, src *float32, offs *int, rows, wo, grStride, srcStep int)
//
// dots[k] = Σ_r Σ_x gr[r·grStride + x]·src[r·srcStep + offs[k] + x] for
// the 9 taps k < 9, r < rows, x < wo; rows, wo ≥ 1. Row by row, each
// block of 16 of gr (the last one masked) is read once for the 9 taps,
// each tap fusing it into its own 16 lanes, which are then halved in
// turn.
TEXT ·tapDots9S(SB), NOSPLIT, $0-64
	DOTS9(16, 2, 4, VMOVUPS, VFMADD231PS)
	HSUM9(HSUMS, 4)
	VZEROUPPER
	RET

// func tapDots9D(dots, gr, src *float64, offs *int, rows, wo, grStride, srcStep int)
//
// tapDots9S for float64, blocks of 8.
TEXT ·tapDots9D(SB), NOSPLIT, $0-64
	DOTS9(8, 3, 8, VMOVUPD, VFMADD231PD)
	HSUM9(HSUMD, 8)
	VZEROUPPER
	RET

// func tapRows3x3S(dst, src, taps *float32, cols, masks *int, rows, dstStride, srcStep, rowLo, rowHi, srcOff int, bias float32)
//
// dst[r·dstStride + x] = bias + Σ_t taps[t]·in(r + ki, cols[kj] + x),
// t = ki·3 + kj, for r < rows and x < 32 in masks[6] (x < 16) and
// masks[7] (16 ≤ x < 32), where in(i, c) is src[srcOff + i·srcStep + c]
// for rowLo ≤ i < rowHi and c in the column masks of kj (masks[2kj]
// for c − cols[kj] < 16, masks[2kj+1] above), 0 otherwise: the taps in
// order, as tapRowsS, each input row read once for the three output rows
// it feeds. rows ≥ 1; it reads input rows [0, rows + 2).
TEXT ·tapRows3x3S(SB), NOSPLIT, $0-92
	VBROADCASTSS bias+88(FP), Z31
	ROWS3X3(2, 4, VBROADCASTSS, VFMADD231PS, VMOVAPS, VMOVUPS)

// func tapRows3x3D(dst, src, taps *float64, cols, masks *int, rows, dstStride, srcStep, rowLo, rowHi, srcOff int, bias float64)
//
// tapRows3x3S for float64, blocks of 8.
TEXT ·tapRows3x3D(SB), NOSPLIT, $0-96
	VBROADCASTSD bias+88(FP), Z31
	ROWS3X3(3, 8, VBROADCASTSD, VFMADD231PD, VMOVAPD, VMOVUPD)

// func tapDots3x3S(dots, gr, src *float32, offs, masks *int, rows, grStride, srcStep, rowLo, rowHi int)
//
// dots[t] = Σ_r Σ_x gr[r·grStride + x]·src[r·srcStep + offs[t] + x] for
// the 3×3 kernel's taps t = ki·3 + kj, r < rows and the x < 32 in the
// column masks of kj (masks[2kj] for x < 16, masks[2kj+1] above), rows
// r + ki in [rowLo, rowHi) only; gr's blocks read in masks[6], masks[7].
// Each lane sums its rows in order; the lanes are then halved in turn.
TEXT ·tapDots3x3S(SB), NOSPLIT, $0-80
	DOTS3X3(2, 4, VMOVUPS, VFMADD231PS)
	HSUM9(HSUMS, 4)
	VZEROUPPER
	RET

// func tapDots3x3D(dots, gr, src *float64, offs, masks *int, rows, grStride, srcStep, rowLo, rowHi int)
//
// tapDots3x3S for float64, blocks of 8.
TEXT ·tapDots3x3D(SB), NOSPLIT, $0-80
	DOTS3X3(3, 8, VMOVUPD, VFMADD231PD)
	HSUM9(HSUMD, 8)
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
