//go:build amd64 && !purego

#include "textflag.h"

// Winograd's output and input transforms (convwino.go, winoOutputRow and
// winoInputRow) on 8 tiles a step in AVX2, float32, for CPUs without
// AVX-512 (convwino_amd64.s): the same additions and subtractions in the
// Go loops' order and operand order (so the same bits; a NaN's payload
// may differ where an operation meets two NaNs, whose operands the Go
// compiler may order otherwise, as in convwino_amd64.s), a row's last block of fewer than 8 tiles under VMASKMOVPS
// masks (lanes off neither read nor written).

// wino2Mask: 8 lanes on, then 8 off; the mask of the first n lanes (0 ≤ n
// ≤ 8) is the 32 bytes from wino2Mask + 32 − 4n.
DATA wino2Mask<>+0(SB)/8, $-1
DATA wino2Mask<>+8(SB)/8, $-1
DATA wino2Mask<>+16(SB)/8, $-1
DATA wino2Mask<>+24(SB)/8, $-1
DATA wino2Mask<>+32(SB)/8, $0
DATA wino2Mask<>+40(SB)/8, $0
DATA wino2Mask<>+48(SB)/8, $0
DATA wino2Mask<>+56(SB)/8, $0
GLOBL wino2Mask<>(SB), RODATA|NOPTR, $64

// MASK2 loads the mask of the first n lanes (n in register N, clobbered)
// into Y, through register T.
#define MASK2(N, Y, T) \
	SHLQ    $2, N \
	NEGQ    N \
	LEAQ    wino2Mask<>+32(SB), T \
	VMOVDQU (T)(N*1), Y

// OUT2SETUP: AX the planes ξ = 0–3, R8 4–7, R9 8–11, R10 12–15 (BX the
// plane stride in bytes, DX three times it), DI top, SI bottom.
#define OUT2SETUP \
	MOVQ m+0(FP), AX \
	MOVQ stride+8(FP), BX \
	MOVQ top+16(FP), DI \
	MOVQ bottom+24(FP), SI \
	SHLQ $2, BX \
	LEAQ (BX)(BX*2), DX \
	LEAQ (AX)(BX*4), R8 \
	LEAQ (R8)(BX*4), R9 \
	LEAQ (R9)(BX*4), R10

// IN2SETUP: AX the first row (BX the row width in bytes), DI, R13, R14,
// SI the planes ξ = 0, 4, 8, 12 (DX the plane stride in bytes, R12 three
// times it).
#define IN2SETUP \
	MOVQ rows+0(FP), AX \
	MOVQ width+8(FP), BX \
	MOVQ v+16(FP), DI \
	MOVQ stride+24(FP), DX \
	SHLQ $2, BX \
	SHLQ $2, DX \
	LEAQ (DX)(DX*2), R12 \
	LEAQ (DI)(DX*4), R13 \
	LEAQ (R13)(DX*4), R14 \
	LEAQ (R14)(DX*4), SI

// OUT2COL computes, for column j of M (its planes j, 4 + j, 8 + j and
// 12 + j at A0–A3, loaded by LD), s_j = m_j + m_(4+j) + m_(8+j) into S
// and e_j = m_(4+j) − m_(8+j) − m_(12+j) into E.
#define OUT2COL(LD, A0, A1, A2, A3, S, E) \
	LD(A0, Y0) \
	LD(A1, Y1) \
	LD(A2, Y2) \
	LD(A3, Y3) \
	VADDPS Y1, Y0, S \
	VADDPS Y2, S, S \
	VSUBPS Y2, Y1, E \
	VSUBPS Y3, E, E

#define LDFULL(A, Y) VMOVUPS A, Y
#define LDMASK(A, Y) VMASKMOVPS A, Y14, Y

// OUT2ROWS computes a block's output rows from s_j (Y4–Y7) and e_j
// (Y8–Y11): top s0 + s1 + s2, s1 − s2 − s3, bottom the same of the e_j,
// each row's even and odd columns interleaved into Y0, Y1 (top) and Y2,
// Y3 (bottom): output columns 0–7 and 8–15.
#define OUT2ROWS \
	VADDPS     Y5, Y4, Y12 \
	VADDPS     Y6, Y12, Y12 \
	VSUBPS     Y6, Y5, Y13 \
	VSUBPS     Y7, Y13, Y13 \
	VUNPCKLPS  Y13, Y12, Y4 \
	VUNPCKHPS  Y13, Y12, Y5 \
	VPERM2F128 $0x20, Y5, Y4, Y0 \
	VPERM2F128 $0x31, Y5, Y4, Y1 \
	VADDPS     Y9, Y8, Y12 \
	VADDPS     Y10, Y12, Y12 \
	VSUBPS     Y10, Y9, Y13 \
	VSUBPS     Y11, Y13, Y13 \
	VUNPCKLPS  Y13, Y12, Y4 \
	VUNPCKHPS  Y13, Y12, Y5 \
	VPERM2F128 $0x20, Y5, Y4, Y2 \
	VPERM2F128 $0x31, Y5, Y4, Y3

// OUT2LOAD loads a block's M (by LD) into s_j and e_j.
#define OUT2LOAD(LD) \
	OUT2COL(LD, (AX), (R8), (R9), (R10), Y4, Y8) \
	OUT2COL(LD, (AX)(BX*1), (R8)(BX*1), (R9)(BX*1), (R10)(BX*1), Y5, Y9) \
	OUT2COL(LD, (AX)(BX*2), (R8)(BX*2), (R9)(BX*2), (R10)(BX*2), Y6, Y10) \
	OUT2COL(LD, (AX)(DX*1), (R8)(DX*1), (R9)(DX*1), (R10)(DX*1), Y7, Y11)

// func winoOut8(m *float32, stride int, top, bottom *float32, n int)
// n (a multiple of 8) tiles, all of whose output columns are in the image.
TEXT ·winoOut8(SB), NOSPLIT, $0-40
	OUT2SETUP
	MOVQ n+32(FP), CX
	SHRQ $3, CX

out8loop:
	TESTQ CX, CX
	JZ    out8done
	OUT2LOAD(LDFULL)
	OUT2ROWS
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (SI)
	VMOVUPS Y3, 32(SI)
	ADDQ    $32, AX
	ADDQ    $32, R8
	ADDQ    $32, R9
	ADDQ    $32, R10
	ADDQ    $64, DI
	ADDQ    $64, SI
	DECQ    CX
	JMP     out8loop

out8done:
	VZEROUPPER
	RET

// func winoOut8Tail(m *float32, stride int, top, bottom *float32, r, lo, hi int)
// One block of r < 8 tiles: the first r lanes of M read, the first lo +
// hi = 2r output columns of each row written, through the stack (AMD's
// masked stores cost more than the whole block).
TEXT ·winoOut8Tail(SB), NOSPLIT, $128-56
	OUT2SETUP
	MOVQ    r+32(FP), CX
	MASK2(CX, Y14, R11)
	OUT2LOAD(LDMASK)
	OUT2ROWS
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y1, 32(SP)
	VMOVUPS Y2, 64(SP)
	VMOVUPS Y3, 96(SP)
	VZEROUPPER
	MOVQ    lo+40(FP), CX
	ADDQ    hi+48(FP), CX
	XORQ    R11, R11

out8tailcopy:
	MOVL 0(SP)(R11*4), R12
	MOVL R12, (DI)(R11*4)
	MOVL 64(SP)(R11*4), R12
	MOVL R12, (SI)(R11*4)
	INCQ R11
	CMPQ R11, CX
	JLT  out8tailcopy
	RET

// IN2COLS splits the row at P into its columns c_k[t] = row[2t + k] for
// the block's 8 tiles, k = 0–3, into C0–C3 (columns 0–15 and 2–17 loaded
// by LDLO and LDHI, Y12 and Y13 scratch).
#define IN2COLS(LDLO, LDHI, P, C0, C1, C2, C3) \
	LDLO(0(P), Y12) \
	LDHI(32(P), Y13) \
	VSHUFPS $0x88, Y13, Y12, C0 \
	VPERMPD $0xD8, C0, C0 \
	VSHUFPS $0xDD, Y13, Y12, C1 \
	VPERMPD $0xD8, C1, C1 \
	LDLO(8(P), Y12) \
	LDHI(40(P), Y13) \
	VSHUFPS $0x88, Y13, Y12, C2 \
	VPERMPD $0xD8, C2, C2 \
	VSHUFPS $0xDD, Y13, Y12, C3 \
	VPERMPD $0xD8, C3, C3

#define LDLOMASK(A, Y) VMASKMOVPS A, Y14, Y
#define LDHIMASK(A, Y) VMASKMOVPS A, Y15, Y
#define STFULL(Y, A) VMOVUPS Y, A
#define STMASK(Y, A) VMASKMOVPS Y, Y13, A

// IN2ROW stores (Bᵀ d) B's row from t_0–t_3 (T0–T3) at planes P, P +
// stride, +2, +3 (DX the stride in bytes, R12 three times it): t0 − t2,
// t1 + t2, t2 − t1, t1 − t3, through Y12 (by ST).
#define IN2ROW(ST, T0, T1, T2, T3, P) \
	VSUBPS T2, T0, Y12 \
	ST(Y12, (P)) \
	VADDPS T2, T1, Y12 \
	ST(Y12, (P)(DX*1)) \
	VSUBPS T1, T2, Y12 \
	ST(Y12, (P)(DX*2)) \
	VSUBPS T3, T1, Y12 \
	ST(Y12, (P)(R12*1))

// IN2BLOCK transforms one block of 8 tiles: rows AX, R9, R10, R11 (d0–d3),
// planes DI, R13, R14, SI (ξ = 0, 4, 8, 12). d2 in Y4–Y7 and d0 in Y0–Y3
// give Bᵀ d's row d0 − d2; d1 in Y0–Y3 then rows d1 + d2 and d2 − d1 (Y8–
// Y11); d3 in Y4–Y7, row d1 − d3. SETM reloads the store mask into Y13
// where there is one.
#define IN2BLOCK(LDLO, LDHI, ST, SETM) \
	IN2COLS(LDLO, LDHI, R10, Y4, Y5, Y6, Y7) \
	IN2COLS(LDLO, LDHI, AX, Y0, Y1, Y2, Y3) \
	VSUBPS Y4, Y0, Y0 \
	VSUBPS Y5, Y1, Y1 \
	VSUBPS Y6, Y2, Y2 \
	VSUBPS Y7, Y3, Y3 \
	SETM \
	IN2ROW(ST, Y0, Y1, Y2, Y3, DI) \
	IN2COLS(LDLO, LDHI, R9, Y0, Y1, Y2, Y3) \
	VADDPS Y4, Y0, Y8 \
	VADDPS Y5, Y1, Y9 \
	VADDPS Y6, Y2, Y10 \
	VADDPS Y7, Y3, Y11 \
	SETM \
	IN2ROW(ST, Y8, Y9, Y10, Y11, R13) \
	VSUBPS Y0, Y4, Y8 \
	VSUBPS Y1, Y5, Y9 \
	VSUBPS Y2, Y6, Y10 \
	VSUBPS Y3, Y7, Y11 \
	IN2ROW(ST, Y8, Y9, Y10, Y11, R14) \
	IN2COLS(LDLO, LDHI, R11, Y4, Y5, Y6, Y7) \
	VSUBPS Y4, Y0, Y8 \
	VSUBPS Y5, Y1, Y9 \
	VSUBPS Y6, Y2, Y10 \
	VSUBPS Y7, Y3, Y11 \
	SETM \
	IN2ROW(ST, Y8, Y9, Y10, Y11, SI)

#define NOMASK
#define SETMASK VMOVDQU (R8), Y13

// func winoIn8(rows *float32, width int, v *float32, stride int, n int)
// n (a multiple of 8) tiles: the four padded rows width elements apart
// from rows, element ξ of tile tc at v[ξ·stride + tc].
TEXT ·winoIn8(SB), NOSPLIT, $0-40
	IN2SETUP
	MOVQ n+32(FP), CX
	SHRQ $3, CX

in8loop:
	TESTQ CX, CX
	JZ    in8done
	LEAQ  (AX)(BX*1), R9
	LEAQ  (AX)(BX*2), R10
	LEAQ  (R9)(BX*2), R11
	IN2BLOCK(LDFULL, LDFULL, STFULL, NOMASK)
	ADDQ  $64, AX
	ADDQ  $32, DI
	ADDQ  $32, R13
	ADDQ  $32, R14
	ADDQ  $32, SI
	DECQ  CX
	JMP   in8loop

in8done:
	VZEROUPPER
	RET

// func winoIn8Tail(rows *float32, width int, v *float32, stride int, r, lo, hi int)
// One block of r < 8 tiles: of each row the first lo (≤ 8) columns from 0
// and from 2, the first hi from 8 and from 10 read (2r + 2 columns), the
// first r lanes of each plane written.
TEXT ·winoIn8Tail(SB), NOSPLIT, $0-56
	IN2SETUP
	MOVQ lo+40(FP), CX
	MASK2(CX, Y14, R11)
	MOVQ hi+48(FP), CX
	MASK2(CX, Y15, R11)
	MOVQ r+32(FP), CX
	SHLQ $2, CX
	LEAQ wino2Mask<>+32(SB), R8
	SUBQ CX, R8 // the store mask's address
	LEAQ (AX)(BX*1), R9
	LEAQ (AX)(BX*2), R10
	LEAQ (R9)(BX*2), R11
	IN2BLOCK(LDLOMASK, LDHIMASK, STMASK, SETMASK)
	VZEROUPPER
	RET
