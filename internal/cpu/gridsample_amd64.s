//go:build amd64 && !purego

#include "textflag.h"

// func gridGatherS(out, plane *float32, idx *int32, w0, w1, w2, w3 *float32, n, wp int)
//
// GridSample's bilinear sample of n pixels (n a positive multiple of 8),
// AVX2: out[j] = ((w0[j]·nw + w1[j]·ne) + w2[j]·sw) + w3[j]·se with the
// corners plane[i], plane[i+1], plane[i+wp], plane[i+wp+1] of a
// zero-framed plane (every index is inside it), i = idx[j] with each
// block of 8 indices stored in the order 0 1 4 5 2 3 6 7 (gridSoA).
// Separate multiplies and adds, in the Go loop's order: the same result,
// bitwise.
TEXT ·gridGatherS(SB), NOSPLIT, $0-72
	MOVQ out+0(FP), DI
	MOVQ plane+8(FP), SI
	MOVQ idx+16(FP), DX
	MOVQ w0+24(FP), R8
	MOVQ w1+32(FP), R9
	MOVQ w2+40(FP), R10
	MOVQ w3+48(FP), R11
	MOVQ n+56(FP), CX
	MOVQ wp+64(FP), AX
	LEAQ (SI)(AX*4), BX
	XORQ R12, R12

loop:
	// idx holds each block's pixels in the order 0 1 4 5 2 3 6 7: one
	// 64-bit gather reads a pixel's two horizontal corners, and the
	// shuffles below then give the corners of pixels 0-7 in order.
	VMOVDQU (DX)(R12*4), Y1
	VEXTRACTI128 $1, Y1, X7
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (SI)(X1*4), Y8
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (SI)(X7*4), Y9
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (BX)(X1*4), Y10
	VPCMPEQD Y2, Y2, Y2
	VPGATHERDQ Y2, (BX)(X7*4), Y11
	VSHUFPS $0x88, Y9, Y8, Y3
	VSHUFPS $0xDD, Y9, Y8, Y4
	VSHUFPS $0x88, Y11, Y10, Y5
	VSHUFPS $0xDD, Y11, Y10, Y6
	VMULPS (R8)(R12*4), Y3, Y3
	VMULPS (R9)(R12*4), Y4, Y4
	VADDPS Y4, Y3, Y3
	VMULPS (R10)(R12*4), Y5, Y5
	VADDPS Y5, Y3, Y3
	VMULPS (R11)(R12*4), Y6, Y6
	VADDPS Y6, Y3, Y3
	VMOVUPS Y3, (DI)(R12*4)
	ADDQ $8, R12
	CMPQ R12, CX
	JLT  loop
	VZEROUPPER
	RET

// func gridGatherO(acc, f *float32, idx *int32, planes, gr *float32, blocks, nc, ps, p, wp int)
//
// GridSampleO's channel sums for blocks of 8 pixels (AVX2): per block,
// with the corner indices idx[0:8] (in the order 0 1 4 5 2 3 6 7, see
// gridGatherS) into each zero-framed plane, the
// factors f[0:32] (fx0, fx1, fy0, fy1, 8 pixels each) and, for nc
// channels c (plane planes + c·ps, upstream gr + c·p),
//   sx += ((ne − nw)·fy0 + (se − sw)·fy1)·g,  sy += ((sw − nw)·fx0 + (se − ne)·fx1)·g
// in channel order, then acc[0:8] += sx and acc[8:16] += sy. The same
// operations in the same order as the Go loop: bitwise its result.
TEXT ·gridGatherO(SB), NOSPLIT, $0-80
	MOVQ acc+0(FP), DX
	MOVQ f+8(FP), CX
	MOVQ idx+16(FP), BX
	MOVQ planes+24(FP), SI
	MOVQ gr+32(FP), DI
	MOVQ blocks+40(FP), AX
	MOVQ ps+56(FP), R12
	SHLQ $2, R12
	MOVQ p+64(FP), R13
	SHLQ $2, R13

block:
	VMOVDQU (BX), Y0
	VMOVUPS (CX), Y1
	VMOVUPS 32(CX), Y2
	VMOVUPS 64(CX), Y3
	VMOVUPS 96(CX), Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	MOVQ SI, R8
	MOVQ wp+72(FP), R9
	SHLQ $2, R9
	ADDQ R8, R9
	MOVQ DI, R10
	MOVQ nc+48(FP), R11

channel:
	// Pairs of horizontal corners by 64-bit gathers, as gridGatherS (X12:
	// the upper four indices, until Y12 takes the upstream values).
	VEXTRACTI128 $1, Y0, X12
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R8)(X0*4), Y7
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R8)(X12*4), Y8
	VSHUFPS $0xDD, Y8, Y7, Y13
	VSHUFPS $0x88, Y8, Y7, Y7
	VMOVAPS Y13, Y8
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R9)(X0*4), Y9
	VPCMPEQD Y11, Y11, Y11
	VPGATHERDQ Y11, (R9)(X12*4), Y10
	VSHUFPS $0xDD, Y10, Y9, Y14
	VSHUFPS $0x88, Y10, Y9, Y9
	VMOVAPS Y14, Y10
	VMOVUPS (R10), Y12
	VSUBPS Y7, Y8, Y13
	VMULPS Y3, Y13, Y13
	VSUBPS Y9, Y10, Y14
	VMULPS Y4, Y14, Y14
	VADDPS Y14, Y13, Y13
	VMULPS Y12, Y13, Y13
	VADDPS Y13, Y5, Y5
	VSUBPS Y7, Y9, Y13
	VMULPS Y1, Y13, Y13
	VSUBPS Y8, Y10, Y14
	VMULPS Y2, Y14, Y14
	VADDPS Y14, Y13, Y13
	VMULPS Y12, Y13, Y13
	VADDPS Y13, Y6, Y6
	ADDQ R12, R8
	ADDQ R12, R9
	ADDQ R13, R10
	DECQ R11
	JNZ  channel

	VMOVUPS (DX), Y13
	VADDPS Y5, Y13, Y13
	VMOVUPS Y13, (DX)
	VMOVUPS 32(DX), Y13
	VADDPS Y6, Y13, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ $32, BX
	ADDQ $128, CX
	ADDQ $64, DX
	ADDQ $32, DI
	DECQ AX
	JNZ  block
	VZEROUPPER
	RET

// TRANSPOSE8 transposes the 8×8 block of rows Y0-Y7 into Y8-Y15 (Y8+q
// is column q) and leaves Y0-Y7 undefined.
#define TRANSPOSE8 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y7, Y3, Y15

// func gridTranspose8(dst, src *float32, nb, nk, sr, sb, sk, dr, db, dk int)
//
// Transposes nk·nb blocks of 8×8 float32 (AVX2; nb, nk > 0, strides in
// bytes): block (k, b) reads its rows r = 0…7 at src + k·sk + b·sb + r·sr
// (8 contiguous elements each) and writes its column q to
// dst + k·dk + b·db + q·dr. GridSample's channels-last copies.
TEXT ·gridTranspose8(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nk+24(FP), CX
	MOVQ sr+32(FP), AX
	MOVQ sb+40(FP), BX
	MOVQ sk+48(FP), DX
	MOVQ dr+56(FP), R8
	MOVQ db+64(FP), R9
	MOVQ dk+72(FP), R10

tchunk:
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ nb+16(FP), R13

tblock:
	MOVQ R11, R14
	VMOVUPS (R14), Y0
	ADDQ AX, R14
	VMOVUPS (R14), Y1
	ADDQ AX, R14
	VMOVUPS (R14), Y2
	ADDQ AX, R14
	VMOVUPS (R14), Y3
	ADDQ AX, R14
	VMOVUPS (R14), Y4
	ADDQ AX, R14
	VMOVUPS (R14), Y5
	ADDQ AX, R14
	VMOVUPS (R14), Y6
	ADDQ AX, R14
	VMOVUPS (R14), Y7
	TRANSPOSE8
	MOVQ R12, R14
	VMOVUPS Y8, (R14)
	ADDQ R8, R14
	VMOVUPS Y9, (R14)
	ADDQ R8, R14
	VMOVUPS Y10, (R14)
	ADDQ R8, R14
	VMOVUPS Y11, (R14)
	ADDQ R8, R14
	VMOVUPS Y12, (R14)
	ADDQ R8, R14
	VMOVUPS Y13, (R14)
	ADDQ R8, R14
	VMOVUPS Y14, (R14)
	ADDQ R8, R14
	VMOVUPS Y15, (R14)
	ADDQ BX, R11
	ADDQ R9, R12
	DECQ R13
	JNZ  tblock
	ADDQ DX, SI
	ADDQ R10, DI
	DECQ CX
	JNZ  tchunk
	VZEROUPPER
	RET

// CLPIXEL computes, into Yq, pixel q's bilinear value for 8 channels from
// a channels-last plane: tap q at 24q(DX) (gridTap[float32]: i at 0, w at
// 8…20), plane SI + channel offset R10, cell stride R8 and row stride R9
// in bytes: ((w0·nw + w1·ne) + w2·sw) + w3·se, gridTap.value's order.
#define CLPIXEL(off, Yq) \
	MOVLQSX off(DX), R12 \
	IMULQ R8, R12 \
	ADDQ SI, R12 \
	ADDQ R10, R12 \
	LEAQ (R12)(R9*1), R13 \
	VBROADCASTSS off+8(DX), Y8 \
	VMULPS (R12), Y8, Yq \
	VBROADCASTSS off+12(DX), Y9 \
	VMULPS (R12)(R8*1), Y9, Y9 \
	VADDPS Y9, Yq, Yq \
	VBROADCASTSS off+16(DX), Y8 \
	VMULPS (R13), Y8, Y8 \
	VADDPS Y8, Yq, Yq \
	VBROADCASTSS off+20(DX), Y9 \
	VMULPS (R13)(R8*1), Y9, Y9 \
	VADDPS Y9, Yq, Yq

// func gridSampleCL(out, plane *float32, taps *gridTap[float32], nb, nk, cs, p, ws int)
//
// GridSample's bilinear S for nb blocks of 8 pixels and nk chunks of 8
// channels (AVX2; nb, nk > 0) from a zero-framed channels-last plane
// (cell stride cs and row stride ws in bytes; every tap's corners inside
// it): out + c·p (p in bytes) + 4j is channel c's value at pixel j, with
// tap j at taps + 24j. Per chunk, 8 pixels' channel vectors, transposed
// in registers, stored as 8 channels' rows. Separate multiplies and adds
// in gridTap.value's order: its result, bitwise.
TEXT ·gridSampleCL(SB), NOSPLIT, $0-64
	MOVQ out+0(FP), DI
	MOVQ plane+8(FP), SI
	MOVQ taps+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ cs+40(FP), R8
	MOVQ ws+56(FP), R9
	MOVQ p+48(FP), R14

sblock:
	XORQ R10, R10
	MOVQ DI, R11
	MOVQ nk+32(FP), BX

schunk:
	CLPIXEL(0, Y0)
	CLPIXEL(24, Y1)
	CLPIXEL(48, Y2)
	CLPIXEL(72, Y3)
	CLPIXEL(96, Y4)
	CLPIXEL(120, Y5)
	CLPIXEL(144, Y6)
	CLPIXEL(168, Y7)
	TRANSPOSE8
	VMOVUPS Y8, (R11)
	ADDQ R14, R11
	VMOVUPS Y9, (R11)
	ADDQ R14, R11
	VMOVUPS Y10, (R11)
	ADDQ R14, R11
	VMOVUPS Y11, (R11)
	ADDQ R14, R11
	VMOVUPS Y12, (R11)
	ADDQ R14, R11
	VMOVUPS Y13, (R11)
	ADDQ R14, R11
	VMOVUPS Y14, (R11)
	ADDQ R14, R11
	VMOVUPS Y15, (R11)
	ADDQ R14, R11
	ADDQ $32, R10
	DECQ BX
	JNZ  schunk
	ADDQ $192, DX
	ADDQ $32, DI
	DECQ CX
	JNZ  sblock
	VZEROUPPER
	RET

// CLSCATTER adds pixel q's 8-channel upstream vector Yv, weighted by tap q
// at off(DX), to its 4 corners of a channels-last plane (SI, channel
// offset R10, cell stride R8, row stride R9): corner += w·v, in the order
// nw, ne, sw, se (gridScatterTaps').
#define CLSCATTER(off, Yv) \
	MOVLQSX off(DX), R12 \
	IMULQ R8, R12 \
	ADDQ SI, R12 \
	ADDQ R10, R12 \
	LEAQ (R12)(R9*1), R13 \
	VBROADCASTSS off+8(DX), Y0 \
	VMULPS Yv, Y0, Y0 \
	VADDPS (R12), Y0, Y0 \
	VMOVUPS Y0, (R12) \
	VBROADCASTSS off+12(DX), Y1 \
	VMULPS Yv, Y1, Y1 \
	VADDPS (R12)(R8*1), Y1, Y1 \
	VMOVUPS Y1, (R12)(R8*1) \
	VBROADCASTSS off+16(DX), Y2 \
	VMULPS Yv, Y2, Y2 \
	VADDPS (R13), Y2, Y2 \
	VMOVUPS Y2, (R13) \
	VBROADCASTSS off+20(DX), Y3 \
	VMULPS Yv, Y3, Y3 \
	VADDPS (R13)(R8*1), Y3, Y3 \
	VMOVUPS Y3, (R13)(R8*1)

// func gridScatterCL(plane, gr *float32, taps *gridTap[float32], nb, nk, cs, p, ws int)
//
// GridSample's bilinear T for nb blocks of 8 pixels and nk chunks of 8
// channels (AVX2; nb, nk > 0): adds w·gr to the corners of each pixel's
// cell in a channels-last plane (cell stride cs, row stride ws, in bytes;
// every corner inside it), gr + c·p (p in bytes) + 4j channel c's upstream
// value at pixel j, tap j at taps + 24j. Per chunk, the upstream block is
// transposed in registers to 8 pixels' channel vectors, then the pixels
// are added in order, corners nw, ne, sw, se: every element's sum in the
// Go scatter's order, bitwise its result.
TEXT ·gridScatterCL(SB), NOSPLIT, $0-64
	MOVQ plane+0(FP), SI
	MOVQ gr+8(FP), DI
	MOVQ taps+16(FP), DX
	MOVQ nb+24(FP), CX
	MOVQ cs+40(FP), R8
	MOVQ ws+56(FP), R9
	MOVQ p+48(FP), R14

tsblock:
	XORQ R10, R10
	MOVQ DI, R11
	MOVQ nk+32(FP), BX

tschunk:
	VMOVUPS (R11), Y0
	ADDQ R14, R11
	VMOVUPS (R11), Y1
	ADDQ R14, R11
	VMOVUPS (R11), Y2
	ADDQ R14, R11
	VMOVUPS (R11), Y3
	ADDQ R14, R11
	VMOVUPS (R11), Y4
	ADDQ R14, R11
	VMOVUPS (R11), Y5
	ADDQ R14, R11
	VMOVUPS (R11), Y6
	ADDQ R14, R11
	VMOVUPS (R11), Y7
	ADDQ R14, R11
	TRANSPOSE8
	CLSCATTER(0, Y8)
	CLSCATTER(24, Y9)
	CLSCATTER(48, Y10)
	CLSCATTER(72, Y11)
	CLSCATTER(96, Y12)
	CLSCATTER(120, Y13)
	CLSCATTER(144, Y14)
	CLSCATTER(168, Y15)
	ADDQ $32, R10
	DECQ BX
	JNZ  tschunk
	ADDQ $192, DX
	ADDQ $32, DI
	DECQ CX
	JNZ  tsblock
	VZEROUPPER
	RET

// CLODIFF computes, into Yq, pixel q's (b − a)·f + (d − c)·f′ for 8
// channels of a channels-last plane: tap q at off(DX) (its corner i at 0),
// plane SI, cell stride R8, row stride R9; a, b, c, d are the corners at
// offsets oa, ob, oc, od from the north-west corner's row pointer
// (R12: the north row, R13: the south row, as "(R12)" or "(R13)(R8*1)"),
// f, f′ the tap's factors at fo, fo′. GridSampleO's per-channel terms.
#define CLODIFF(off, ma, mb, fo, mc, md, fo2, Yq) \
	MOVLQSX off(DX), R12 \
	IMULQ R8, R12 \
	ADDQ SI, R12 \
	LEAQ (R12)(R9*1), R13 \
	VMOVUPS ma, Y8 \
	VMOVUPS mb, Y9 \
	VSUBPS Y8, Y9, Y9 \
	VBROADCASTSS off+fo(DX), Y10 \
	VMULPS Y10, Y9, Yq \
	VMOVUPS mc, Y8 \
	VMOVUPS md, Y9 \
	VSUBPS Y8, Y9, Y9 \
	VBROADCASTSS off+fo2(DX), Y10 \
	VMULPS Y10, Y9, Y9 \
	VADDPS Y9, Yq, Yq

// CLOSUM transposes Y0-Y7 (pixels' channel vectors) and adds
// Σ_c row_c·gr_c, summed from 0 in channel order (gr_c at R11 + c·R14),
// to the 8 floats at acc.
#define CLOSUM(acc) \
	TRANSPOSE8 \
	MOVQ R11, R13 \
	VXORPS Y0, Y0, Y0 \
	VMULPS (R13), Y8, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ R14, R13 \
	VMULPS (R13), Y9, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ R14, R13 \
	VMULPS (R13), Y10, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ R14, R13 \
	VMULPS (R13), Y11, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ R14, R13 \
	VMULPS (R13), Y12, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ R14, R13 \
	VMULPS (R13), Y13, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ R14, R13 \
	VMULPS (R13), Y14, Y1 \
	VADDPS Y1, Y0, Y0 \
	ADDQ R14, R13 \
	VMULPS (R13), Y15, Y1 \
	VADDPS Y1, Y0, Y0 \
	VADDPS acc, Y0, Y0 \
	VMOVUPS Y0, acc

// func gridContractOCL(acc, plane, gr *float32, taps *gridTap[float32], nb, cs, p, ws int)
//
// GridSampleO's sums over one chunk of 8 channels for nb > 0 blocks of 8
// pixels (AVX2), from a channels-last plane of those channels (cell
// stride cs, row stride ws, in bytes; every tap's corners inside it): for
// pixel j (tap j at taps + 24j, factors fx0, fx1, fy0, fy1 at 8…20) and
// channel c (upstream gr + c·p + 4j, p in bytes)
//   sx = Σ_c ((ne − nw)·fy0 + (se − sw)·fy1)·g,  sy = Σ_c ((sw − nw)·fx0 + (se − ne)·fx1)·g
// summed from 0 in channel order, then acc[j] += sx, acc[j + p/4] += sy:
// the Go loop's operations in its order, bitwise its result.
TEXT ·gridContractOCL(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), DI
	MOVQ plane+8(FP), SI
	MOVQ gr+16(FP), R11
	MOVQ taps+24(FP), DX
	MOVQ nb+32(FP), CX
	MOVQ cs+40(FP), R8
	MOVQ p+48(FP), R14
	MOVQ ws+56(FP), R9

oblock:
	CLODIFF(0, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y0)
	CLODIFF(24, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y1)
	CLODIFF(48, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y2)
	CLODIFF(72, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y3)
	CLODIFF(96, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y4)
	CLODIFF(120, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y5)
	CLODIFF(144, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y6)
	CLODIFF(168, (R12), (R12)(R8*1), 16, (R13), (R13)(R8*1), 20, Y7)
	CLOSUM((DI))
	CLODIFF(0, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y0)
	CLODIFF(24, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y1)
	CLODIFF(48, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y2)
	CLODIFF(72, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y3)
	CLODIFF(96, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y4)
	CLODIFF(120, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y5)
	CLODIFF(144, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y6)
	CLODIFF(168, (R12), (R13), 8, (R12)(R8*1), (R13)(R8*1), 12, Y7)
	CLOSUM((DI)(R14*1))
	ADDQ $192, DX
	ADDQ $32, DI
	ADDQ $32, R11
	DECQ CX
	JNZ  oblock
	VZEROUPPER
	RET
