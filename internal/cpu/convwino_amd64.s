//go:build amd64 && !purego

#include "textflag.h"

// Winograd's output transform (convwino.go, winoOutputRow) on 16 tiles a
// step, float32: the 16 planes M_ξ loaded from four row pointers (ξ = 4i
// + j at row i's pointer + j·stride), Aᵀ M A in the Go loop's order of
// additions and subtractions, each output row's even and odd columns
// interleaved by VPERMI2PS into 32 consecutive elements.

// Lanes 0–7 (lo) and 8–15 (hi) of the even columns (table 1) and the odd
// ones (table 2), interleaved.
DATA winoLo<>+0(SB)/4, $0
DATA winoLo<>+4(SB)/4, $16
DATA winoLo<>+8(SB)/4, $1
DATA winoLo<>+12(SB)/4, $17
DATA winoLo<>+16(SB)/4, $2
DATA winoLo<>+20(SB)/4, $18
DATA winoLo<>+24(SB)/4, $3
DATA winoLo<>+28(SB)/4, $19
DATA winoLo<>+32(SB)/4, $4
DATA winoLo<>+36(SB)/4, $20
DATA winoLo<>+40(SB)/4, $5
DATA winoLo<>+44(SB)/4, $21
DATA winoLo<>+48(SB)/4, $6
DATA winoLo<>+52(SB)/4, $22
DATA winoLo<>+56(SB)/4, $7
DATA winoLo<>+60(SB)/4, $23
GLOBL winoLo<>(SB), RODATA|NOPTR, $64

DATA winoHi<>+0(SB)/4, $8
DATA winoHi<>+4(SB)/4, $24
DATA winoHi<>+8(SB)/4, $9
DATA winoHi<>+12(SB)/4, $25
DATA winoHi<>+16(SB)/4, $10
DATA winoHi<>+20(SB)/4, $26
DATA winoHi<>+24(SB)/4, $11
DATA winoHi<>+28(SB)/4, $27
DATA winoHi<>+32(SB)/4, $12
DATA winoHi<>+36(SB)/4, $28
DATA winoHi<>+40(SB)/4, $13
DATA winoHi<>+44(SB)/4, $29
DATA winoHi<>+48(SB)/4, $14
DATA winoHi<>+52(SB)/4, $30
DATA winoHi<>+56(SB)/4, $15
DATA winoHi<>+60(SB)/4, $31
GLOBL winoHi<>(SB), RODATA|NOPTR, $64

// LOADROW loads M_ξ, ξ = 4i..4i+3, from row pointer P into A, B, C, D:
// the lanes of mask K1 (all 16 but in the last block of a row), the others
// 0 and not read.
#define LOADROW(P, A, B, C, D) \
	VMOVUPS.Z (P), K1, A \
	VMOVUPS.Z (P)(BX*1), K1, B \
	VMOVUPS.Z (P)(BX*2), K1, C \
	VMOVUPS.Z (P)(DX*1), K1, D

// OUTSETUP loads winoOutS's arguments but n: AX the planes ξ = 0–3, R8
// 4–7, R9 8–11, R10 12–15 (BX the stride in bytes, DX three), DI top, SI
// bottom, Z28 and Z29 the interleaving tables.
#define OUTSETUP \
	MOVQ m+0(FP), AX \
	MOVQ stride+8(FP), BX \
	MOVQ top+16(FP), DI \
	MOVQ bottom+24(FP), SI \
	SHLQ $2, BX \
	LEAQ (BX)(BX*2), DX \
	LEAQ (AX)(BX*4), R8 \
	LEAQ (R8)(BX*4), R9 \
	LEAQ (R9)(BX*4), R10 \
	VMOVUPS winoLo<>(SB), Z28 \
	VMOVUPS winoHi<>(SB), Z29

// OUTBLOCK transforms one block of 16 tiles: M loaded (LOADROW, mask K1),
// s_j = m_j + m_(4+j) + m_(8+j) and e_j = m_(4+j) − m_(8+j) − m_(12+j),
// then top s0 + s1 + s2, s1 − s2 − s3 and bottom the same of the e_j,
// each row's even and odd columns interleaved and stored, the first 8
// tiles' 16 columns under mask K2 and the last 8's under K3.
#define OUTBLOCK \
	LOADROW(AX, Z0, Z1, Z2, Z3) \
	LOADROW(R8, Z4, Z5, Z6, Z7) \
	LOADROW(R9, Z8, Z9, Z10, Z11) \
	LOADROW(R10, Z12, Z13, Z14, Z15) \
	VADDPS    Z4, Z0, Z16 \
	VADDPS    Z8, Z16, Z16 \
	VADDPS    Z5, Z1, Z17 \
	VADDPS    Z9, Z17, Z17 \
	VADDPS    Z6, Z2, Z18 \
	VADDPS    Z10, Z18, Z18 \
	VADDPS    Z7, Z3, Z19 \
	VADDPS    Z11, Z19, Z19 \
	VSUBPS    Z8, Z4, Z20 \
	VSUBPS    Z12, Z20, Z20 \
	VSUBPS    Z9, Z5, Z21 \
	VSUBPS    Z13, Z21, Z21 \
	VSUBPS    Z10, Z6, Z22 \
	VSUBPS    Z14, Z22, Z22 \
	VSUBPS    Z11, Z7, Z23 \
	VSUBPS    Z15, Z23, Z23 \
	VADDPS    Z17, Z16, Z24 \
	VADDPS    Z18, Z24, Z24 \
	VSUBPS    Z18, Z17, Z25 \
	VSUBPS    Z19, Z25, Z25 \
	VADDPS    Z21, Z20, Z26 \
	VADDPS    Z22, Z26, Z26 \
	VSUBPS    Z22, Z21, Z27 \
	VSUBPS    Z23, Z27, Z27 \
	VMOVAPS   Z28, Z30 \
	VPERMI2PS Z25, Z24, Z30 \
	VMOVAPS   Z29, Z31 \
	VPERMI2PS Z25, Z24, Z31 \
	VMOVUPS   Z30, K2, (DI) \
	VMOVUPS   Z31, K3, 64(DI) \
	VMOVAPS   Z28, Z30 \
	VPERMI2PS Z27, Z26, Z30 \
	VMOVAPS   Z29, Z31 \
	VPERMI2PS Z27, Z26, Z31 \
	VMOVUPS   Z30, K2, (SI) \
	VMOVUPS   Z31, K3, 64(SI)

// func winoOutS(m *float32, stride int, top, bottom *float32, n int)
TEXT ·winoOutS(SB), NOSPLIT, $0-40
	OUTSETUP
	MOVQ    n+32(FP), CX
	KXNORW  K1, K1, K1 // every lane
	KXNORW  K2, K2, K2
	KXNORW  K3, K3, K3
	SHRQ    $4, CX

loop:
	TESTQ CX, CX
	JZ    done
	OUTBLOCK
	ADDQ  $64, AX
	ADDQ  $64, R8
	ADDQ  $64, R9
	ADDQ  $64, R10
	ADDQ  $128, DI
	ADDQ  $128, SI
	DECQ  CX
	JMP   loop

done:
	VZEROUPPER
	RET

// func winoOutSTail(m *float32, stride int, top, bottom *float32, lanes, outs uint32)
// winoOutS's step on one block of fewer than 16 tiles: the tiles of mask
// lanes read (the others 0), the output columns of mask outs written (its
// low 16 bits the first 8 tiles' columns, its high 16 the last 8's).
TEXT ·winoOutSTail(SB), NOSPLIT, $0-40
	OUTSETUP
	MOVL  lanes+32(FP), R11
	KMOVW R11, K1
	MOVL  outs+36(FP), R11
	KMOVW R11, K2
	SHRL  $16, R11
	KMOVW R11, K3
	OUTBLOCK
	VZEROUPPER
	RET

// Winograd's input transform (convwino.go, winoInputRow) on 16 tiles a
// step, float32: each of the four padded input rows loaded as columns
// 0–31 and 2–33 of the block, split by VPERMI2PS into the tiles' columns
// 2tc, 2tc+1 (even and odd of the first) and 2tc+2, 2tc+3 (of the
// second); Bᵀ d B in the Go loop's order of additions and subtractions;
// element ξ of the 16 tiles stored at v + ξ·stride.

DATA winoEven<>+0(SB)/4, $0
DATA winoEven<>+4(SB)/4, $2
DATA winoEven<>+8(SB)/4, $4
DATA winoEven<>+12(SB)/4, $6
DATA winoEven<>+16(SB)/4, $8
DATA winoEven<>+20(SB)/4, $10
DATA winoEven<>+24(SB)/4, $12
DATA winoEven<>+28(SB)/4, $14
DATA winoEven<>+32(SB)/4, $16
DATA winoEven<>+36(SB)/4, $18
DATA winoEven<>+40(SB)/4, $20
DATA winoEven<>+44(SB)/4, $22
DATA winoEven<>+48(SB)/4, $24
DATA winoEven<>+52(SB)/4, $26
DATA winoEven<>+56(SB)/4, $28
DATA winoEven<>+60(SB)/4, $30
GLOBL winoEven<>(SB), RODATA|NOPTR, $64

DATA winoOdd<>+0(SB)/4, $1
DATA winoOdd<>+4(SB)/4, $3
DATA winoOdd<>+8(SB)/4, $5
DATA winoOdd<>+12(SB)/4, $7
DATA winoOdd<>+16(SB)/4, $9
DATA winoOdd<>+20(SB)/4, $11
DATA winoOdd<>+24(SB)/4, $13
DATA winoOdd<>+28(SB)/4, $15
DATA winoOdd<>+32(SB)/4, $17
DATA winoOdd<>+36(SB)/4, $19
DATA winoOdd<>+40(SB)/4, $21
DATA winoOdd<>+44(SB)/4, $23
DATA winoOdd<>+48(SB)/4, $25
DATA winoOdd<>+52(SB)/4, $27
DATA winoOdd<>+56(SB)/4, $29
DATA winoOdd<>+60(SB)/4, $31
GLOBL winoOdd<>(SB), RODATA|NOPTR, $64

// COLS loads the 16 tiles' columns 2tc+j of the padded row at P into
// C0..C3 (j = 0..3); clobbers Z16–Z19.
#define COLS(P, C0, C1, C2, C3) \
	VMOVUPS   (P), Z16 \
	VMOVUPS   64(P), Z17 \
	VMOVUPS   8(P), Z18 \
	VMOVUPS   72(P), Z19 \
	VMOVAPS   Z30, C0 \
	VPERMI2PS Z17, Z16, C0 \
	VMOVAPS   Z31, C1 \
	VPERMI2PS Z17, Z16, C1 \
	VMOVAPS   Z30, C2 \
	VPERMI2PS Z19, Z18, C2 \
	VMOVAPS   Z31, C3 \
	VPERMI2PS Z19, Z18, C3

// BROW stores row T0..T3 of Bᵀ d times B, the Go loop's t_i0 − t_i2,
// t_i1 + t_i2, t_i2 − t_i1, t_i1 − t_i3, at the planes ξ = 4i..4i+3 from
// P (DX the stride in bytes, R12 three strides); clobbers Z24–Z27.
#define BROW(T0, T1, T2, T3, P) \
	VSUBPS  T2, T0, Z24 \
	VADDPS  T2, T1, Z25 \
	VSUBPS  T1, T2, Z26 \
	VSUBPS  T3, T1, Z27 \
	VMOVUPS Z24, (P) \
	VMOVUPS Z25, (P)(DX*1) \
	VMOVUPS Z26, (P)(DX*2) \
	VMOVUPS Z27, (P)(R12*1)

// func winoInS(rows *float32, width int, v *float32, stride int, n int)
TEXT ·winoInS(SB), NOSPLIT, $0-40
	MOVQ rows+0(FP), AX
	MOVQ width+8(FP), BX
	MOVQ v+16(FP), DI
	MOVQ stride+24(FP), DX
	MOVQ n+32(FP), CX
	SHLQ $2, BX                 // width in bytes
	SHLQ $2, DX                 // stride in bytes
	LEAQ (DX)(DX*2), R12        // 3·stride
	LEAQ (DI)(DX*4), R13        // ξ = 4
	LEAQ (R13)(DX*4), R14       // ξ = 8
	LEAQ (R14)(DX*4), SI        // ξ = 12
	VMOVUPS winoEven<>(SB), Z30
	VMOVUPS winoOdd<>(SB), Z31
	SHRQ $4, CX

inloop:
	TESTQ CX, CX
	JZ    indone
	LEAQ  (AX)(BX*1), R9
	LEAQ  (AX)(BX*2), R10
	LEAQ  (R9)(BX*2), R11
	COLS(AX, Z0, Z1, Z2, Z3)
	COLS(R9, Z4, Z5, Z6, Z7)
	COLS(R10, Z8, Z9, Z10, Z11)
	COLS(R11, Z12, Z13, Z14, Z15)

	// Bᵀ d: rows a − c, b + c, c − b, b − d (a..d: Z0, Z4, Z8, Z12 on).
	VSUBPS Z8, Z0, Z20
	VSUBPS Z9, Z1, Z21
	VSUBPS Z10, Z2, Z22
	VSUBPS Z11, Z3, Z23
	BROW(Z20, Z21, Z22, Z23, DI)
	VADDPS Z8, Z4, Z20
	VADDPS Z9, Z5, Z21
	VADDPS Z10, Z6, Z22
	VADDPS Z11, Z7, Z23
	BROW(Z20, Z21, Z22, Z23, R13)
	VSUBPS Z4, Z8, Z20
	VSUBPS Z5, Z9, Z21
	VSUBPS Z6, Z10, Z22
	VSUBPS Z7, Z11, Z23
	BROW(Z20, Z21, Z22, Z23, R14)
	VSUBPS Z12, Z4, Z20
	VSUBPS Z13, Z5, Z21
	VSUBPS Z14, Z6, Z22
	VSUBPS Z15, Z7, Z23
	BROW(Z20, Z21, Z22, Z23, SI)

	ADDQ $128, AX
	ADDQ $64, DI
	ADDQ $64, R13
	ADDQ $64, R14
	ADDQ $64, SI
	DECQ CX
	JMP  inloop

indone:
	VZEROUPPER
	RET

// COLS8 is COLS for a block of 8 tiles: columns 0–15 and 2–17 of the row
// at P (those of mask K1: every one but in a row's last block; the others
// 0 and not read), the permutes' upper 8 lanes unused.
#define COLS8(P, C0, C1, C2, C3) \
	VMOVUPS.Z (P), K1, Z16 \
	VMOVUPS.Z 8(P), K1, Z18 \
	VMOVAPS   Z30, C0 \
	VPERMI2PS Z16, Z16, C0 \
	VMOVAPS   Z31, C1 \
	VPERMI2PS Z16, Z16, C1 \
	VMOVAPS   Z30, C2 \
	VPERMI2PS Z18, Z18, C2 \
	VMOVAPS   Z31, C3 \
	VPERMI2PS Z18, Z18, C3

// BROW8 is BROW storing the lower 8 lanes (those of mask K2).
#define BROW8(T0, T1, T2, T3, P) \
	VSUBPS  T2, T0, Z24 \
	VADDPS  T2, T1, Z25 \
	VSUBPS  T1, T2, Z26 \
	VSUBPS  T3, T1, Z27 \
	VMOVUPS Y24, K2, (P) \
	VMOVUPS Y25, K2, (P)(DX*1) \
	VMOVUPS Y26, K2, (P)(DX*2) \
	VMOVUPS Y27, K2, (P)(R12*1)

// INS8 is winoInS8's block of 8 tiles, masks K1 and K2 set: the
// arguments loaded (AX, R9–R11 the four rows, DI, R13, R14, SI the planes
// ξ = 0, 4, 8, 12, DX the plane stride in bytes, R12 three), the rows'
// columns split, Bᵀ d B stored.
#define INS8 \
	MOVQ      rows+0(FP), AX \
	MOVQ      width+8(FP), BX \
	MOVQ      v+16(FP), DI \
	MOVQ      stride+24(FP), DX \
	SHLQ      $2, BX \
	SHLQ      $2, DX \
	LEAQ      (DX)(DX*2), R12 \
	LEAQ      (DI)(DX*4), R13 \
	LEAQ      (R13)(DX*4), R14 \
	LEAQ      (R14)(DX*4), SI \
	VMOVUPS   winoEven<>(SB), Z30 \
	VMOVUPS   winoOdd<>(SB), Z31 \
	LEAQ      (AX)(BX*1), R9 \
	LEAQ      (AX)(BX*2), R10 \
	LEAQ      (R9)(BX*2), R11 \
	COLS8(AX, Z0, Z1, Z2, Z3) \
	COLS8(R9, Z4, Z5, Z6, Z7) \
	COLS8(R10, Z8, Z9, Z10, Z11) \
	COLS8(R11, Z12, Z13, Z14, Z15) \
	VSUBPS    Z8, Z0, Z20 \
	VSUBPS    Z9, Z1, Z21 \
	VSUBPS    Z10, Z2, Z22 \
	VSUBPS    Z11, Z3, Z23 \
	BROW8(Z20, Z21, Z22, Z23, DI) \
	VADDPS    Z8, Z4, Z20 \
	VADDPS    Z9, Z5, Z21 \
	VADDPS    Z10, Z6, Z22 \
	VADDPS    Z11, Z7, Z23 \
	BROW8(Z20, Z21, Z22, Z23, R13) \
	VSUBPS    Z4, Z8, Z20 \
	VSUBPS    Z5, Z9, Z21 \
	VSUBPS    Z6, Z10, Z22 \
	VSUBPS    Z7, Z11, Z23 \
	BROW8(Z20, Z21, Z22, Z23, R14) \
	VSUBPS    Z12, Z4, Z20 \
	VSUBPS    Z13, Z5, Z21 \
	VSUBPS    Z14, Z6, Z22 \
	VSUBPS    Z15, Z7, Z23 \
	BROW8(Z20, Z21, Z22, Z23, SI)

// func winoInS8(rows *float32, width int, v *float32, stride int)
TEXT ·winoInS8(SB), NOSPLIT, $0-32
	KXNORW K1, K1, K1 // every lane
	KXNORW K2, K2, K2
	INS8
	VZEROUPPER
	RET

// func winoInS8Tail(rows *float32, width int, v *float32, stride int, cols, tiles uint32)
// winoInS8 on fewer than 8 tiles: the columns of mask cols read from
// each row (the first load's and the second's, 2 further on), the others
// 0; the tiles of mask tiles stored.
TEXT ·winoInS8Tail(SB), NOSPLIT, $0-40
	MOVL  cols+32(FP), R8
	KMOVW R8, K1
	MOVL  tiles+36(FP), R8
	KMOVW R8, K2
	INS8
	VZEROUPPER
	RET

// Winograd's weight transform (convwino.go, winoWeights) on 16 kernels a
// step, float32: the nine taps of the 16 kernels (step elements apart,
// reversed for a flipped weight) gathered by VGATHERDPS, G g Gᵀ in the Go
// loop's order of additions and halvings (a multiplication by ½, exact
// as the division is), element ξ of the 16 kernels stored at u + ξ·su.

DATA winoHalf<>+0(SB)/4, $0.5
GLOBL winoHalf<>(SB), RODATA|NOPTR, $4

// GATHER loads tap D/4 of the 16 kernels at P (indices Z16) into R.
#define GATHER(D, P, R) \
	KXNORW     K1, K1, K1 \
	VGATHERDPS D(P)(Z16*4), K1, R

// UROW stores row R0, R1, R2 of G g times Gᵀ, the Go loop's r0,
// (r0 + r1 + r2)/2, (r0 − r1 + r2)/2, r2, at the planes ξ = 4i..4i+3
// from P (DX the plane stride in bytes, R12 three strides); clobbers
// Z20, Z21.
#define UROW(R0, R1, R2, P) \
	VMOVUPS R0, (P) \
	VADDPS  R1, R0, Z20 \
	VADDPS  R2, Z20, Z20 \
	VMULPS  Z15, Z20, Z20 \
	VMOVUPS Z20, (P)(DX*1) \
	VSUBPS  R1, R0, Z21 \
	VADDPS  R2, Z21, Z21 \
	VMULPS  Z15, Z21, Z21 \
	VMOVUPS Z21, (P)(DX*2) \
	VMOVUPS R2, (P)(R12*1)

// BCOL computes column J's (k_j + k_3+j + k_6+j)/2 into B and
// (k_j − k_3+j + k_6+j)/2 into C from taps K0, K3, K6.
#define BCOL(K0, K3, K6, B, C) \
	VADDPS K3, K0, B \
	VADDPS K6, B, B \
	VMULPS Z15, B, B \
	VSUBPS K3, K0, C \
	VADDPS K6, C, C \
	VMULPS Z15, C, C

// func winoWtS(w *float32, idx *int32, u *float32, su int, n int, flip bool, step int)
TEXT ·winoWtS(SB), NOSPLIT, $0-56
	MOVQ   w+0(FP), AX
	MOVQ   idx+8(FP), BX
	MOVQ   u+16(FP), DI
	MOVQ   su+24(FP), DX
	MOVQ   n+32(FP), CX
	MOVBLZX flip+40(FP), R8
	MOVQ   step+48(FP), R9
	SHLQ   $6, R9               // 16 kernels: 16·step·4 bytes
	SHLQ   $2, DX               // plane stride in bytes
	LEAQ   (DX)(DX*2), R12
	LEAQ   (DI)(DX*4), R13      // ξ = 4
	LEAQ   (R13)(DX*4), R14     // ξ = 8
	LEAQ   (R14)(DX*4), SI      // ξ = 12
	VMOVUPS (BX), Z16
	VBROADCASTSS winoHalf<>(SB), Z15
	SHRQ   $4, CX

wtloop:
	TESTQ CX, CX
	JZ    wtdone
	TESTQ R8, R8
	JNZ   wtflip
	GATHER(0, AX, Z0)
	GATHER(4, AX, Z1)
	GATHER(8, AX, Z2)
	GATHER(12, AX, Z3)
	GATHER(16, AX, Z4)
	GATHER(20, AX, Z5)
	GATHER(24, AX, Z6)
	GATHER(28, AX, Z7)
	GATHER(32, AX, Z8)
	JMP   wtcompute

wtflip:
	GATHER(32, AX, Z0)
	GATHER(28, AX, Z1)
	GATHER(24, AX, Z2)
	GATHER(20, AX, Z3)
	GATHER(16, AX, Z4)
	GATHER(12, AX, Z5)
	GATHER(8, AX, Z6)
	GATHER(4, AX, Z7)
	GATHER(0, AX, Z8)

wtcompute:
	// G g: rows a = k0..k2 (Z0–Z2), b (Z9–Z11), c (Z12–Z14), d = k6..k8.
	BCOL(Z0, Z3, Z6, Z9, Z12)
	BCOL(Z1, Z4, Z7, Z10, Z13)
	BCOL(Z2, Z5, Z8, Z11, Z14)
	UROW(Z0, Z1, Z2, DI)
	UROW(Z9, Z10, Z11, R13)
	UROW(Z12, Z13, Z14, R14)
	UROW(Z6, Z7, Z8, SI)

	ADDQ R9, AX
	ADDQ $64, DI
	ADDQ $64, R13
	ADDQ $64, R14
	ADDQ $64, SI
	DECQ CX
	JMP  wtloop

wtdone:
	VZEROUPPER
	RET
