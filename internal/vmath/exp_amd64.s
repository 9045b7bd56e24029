//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA kernels of package vmath. Each processes n elements, n a
// positive multiple of the vector width (8 float32, 4 float64); the Go
// wrappers in vmath_amd64.go handle the tails.
//
// exp(x), as in Cephes/Sleef-style vector libraries: n = round(x·log2 e),
// r = x − n·ln2 (ln2 split in a high part exact for |n| < 2^8 or 2^11 and a
// low part, Cody–Waite), exp(r) by its Taylor polynomial (degree 7 for
// float32, 13 for float64, |r| ≤ ln2/2: truncation below 2^−26 and 2^−56
// relative), and the result scaled by 2^n by adding n to the exponent
// field. Inputs below lo (−87.33, −708.3) give exactly 0 (the result would
// be subnormal), which also makes exp(−Inf) = 0.

#define VEC32(name, v) DATA name+0(SB)/4, v; DATA name+4(SB)/4, v; DATA name+8(SB)/4, v; DATA name+12(SB)/4, v; DATA name+16(SB)/4, v; DATA name+20(SB)/4, v; DATA name+24(SB)/4, v; DATA name+28(SB)/4, v; GLOBL name(SB), RODATA|NOPTR, $32
#define VEC64(name, v) DATA name+0(SB)/8, v; DATA name+8(SB)/8, v; DATA name+16(SB)/8, v; DATA name+24(SB)/8, v; GLOBL name(SB), RODATA|NOPTR, $32

// LANES4 adds Y6's four float64 lanes in order into X0 (clobbers X1, X2).
#define LANES4 VEXTRACTF128 $1, Y6, X1; VPERMILPD $1, X6, X2; VADDSD X2, X6, X0; VADDSD X1, X0, X0; VPERMILPD $1, X1, X2; VADDSD X2, X0, X0

// LANES8 adds eight float64 lanes, 0-3 in Y6 and 4-7 in Y7, in order into
// X0 (clobbers X1, X2, X6).
#define LANES8 LANES4; VADDSD X7, X0, X0; VPERMILPD $1, X7, X2; VADDSD X2, X0, X0; VEXTRACTF128 $1, Y7, X1; VADDSD X1, X0, X0; VPERMILPD $1, X1, X2; VADDSD X2, X0, X0

// WIDEN8 converts Y0's eight float32 lanes to float64 in Y6 (0-3) and Y7
// (4-7).
#define WIDEN8 VCVTPS2PD X0, Y6; VEXTRACTF128 $1, Y0, X0; VCVTPS2PD X0, Y7

VEC32(expS_lo<>, $0xc2aea8f6)    // -87.33
VEC32(expS_hi<>, $0x42b0999a)    // 88.3
VEC32(expS_log2e<>, $0x3fb8aa3b) // log2 e
VEC32(expS_ln2hi<>, $0x3f318000) // 0.693359375
VEC32(expS_ln2lo<>, $0xb95e8083) // -2.12194440e-4
VEC32(expS_c2<>, $0x3f000000)    // 1/2!
VEC32(expS_c3<>, $0x3e2aaaab)    // 1/3!
VEC32(expS_c4<>, $0x3d2aaaab)    // 1/4!
VEC32(expS_c5<>, $0x3c088889)    // 1/5!
VEC32(expS_c6<>, $0x3ab60b61)    // 1/6!
VEC32(expS_c7<>, $0x39500d01)    // 1/7!
VEC32(expS_one<>, $0x3f800000)   // 1

DATA expS512_lo<>+0(SB)/4, $0xc2d00000 // -104
GLOBL expS512_lo<>(SB), RODATA|NOPTR, $4
DATA expS512_hi<>+0(SB)/4, $0x42b20000 // 89
GLOBL expS512_hi<>(SB), RODATA|NOPTR, $4
DATA expD512_lo<>+0(SB)/8, $0xc087500000000000 // -746
GLOBL expD512_lo<>(SB), RODATA|NOPTR, $8
DATA expD512_hi<>+0(SB)/8, $0x4086300000000000 // 710
GLOBL expD512_hi<>(SB), RODATA|NOPTR, $8

VEC64(expD_lo<>, $0xc086226666666666)    // -708.3
VEC64(expD_hi<>, $0x4086280000000000)    // 709
VEC64(expD_log2e<>, $0x3ff71547652b82fe) // log2 e
VEC64(expD_ln2hi<>, $0x3fe62e42fee00000) // ln 2, high part
VEC64(expD_ln2lo<>, $0x3dea39ef35793c76) // ln 2, low part
VEC64(expD_c2<>, $0x3fe0000000000000)
VEC64(expD_c3<>, $0x3fc5555555555555)
VEC64(expD_c4<>, $0x3fa5555555555555)
VEC64(expD_c5<>, $0x3f81111111111111)
VEC64(expD_c6<>, $0x3f56c16c16c16c17)
VEC64(expD_c7<>, $0x3f2a01a01a01a01a)
VEC64(expD_c8<>, $0x3efa01a01a01a01a)
VEC64(expD_c9<>, $0x3ec71de3a556c734)
VEC64(expD_c10<>, $0x3e927e4fb7789f5c)
VEC64(expD_c11<>, $0x3e5ae64567f544e4)
VEC64(expD_c12<>, $0x3e21eed8eff8d898)
VEC64(expD_c13<>, $0x3de6124613a86d09)
VEC64(expD_one<>, $0x3ff0000000000000)

// EXPS computes P = exp(X − shift) for 8 float32 lanes, X loaded from
// mem, with N and M as scratch; constants in Y10-Y15 (see expSumS).
#define EXPS(mem, X, N, M, P) \
	VMOVUPS mem, X; \
	VSUBPS Y15, X, X; \
	VCMPPS $13, Y14, X, M; \
	VMAXPS Y14, X, X; \
	VMINPS expS_hi<>(SB), X, X; \
	VMULPS Y13, X, N; \
	VROUNDPS $0, N, N; \
	VFNMADD231PS Y12, N, X; \
	VFNMADD231PS Y11, N, X; \
	VMOVUPS expS_c7<>(SB), P; \
	VFMADD213PS expS_c6<>(SB), X, P; \
	VFMADD213PS expS_c5<>(SB), X, P; \
	VFMADD213PS expS_c4<>(SB), X, P; \
	VFMADD213PS expS_c3<>(SB), X, P; \
	VFMADD213PS expS_c2<>(SB), X, P; \
	VFMADD213PS Y10, X, P; \
	VFMADD213PS Y10, X, P; \
	VCVTPS2DQ N, N; \
	VPSLLD $23, N, N; \
	VPADDD N, P, P; \
	VANDPS M, P, P

// ACCS adds the 8 float32 lanes of PY (PX its low half), widened, to the
// float64 accumulators Y8 (lanes 0-3) and Y9 (4-7), with TY as scratch.
#define ACCS(PY, PX, TY) \
	VCVTPS2PD PX, TY; \
	VADDPD TY, Y8, Y8; \
	VEXTRACTF128 $1, PY, PX; \
	VCVTPS2PD PX, TY; \
	VADDPD TY, Y9, Y9

// func expSumS(dst, src *float32, n int, shift float32) float64
// dst[i] = exp(src[i] − shift); returns Σ dst[i], summed in float64 in
// 8 lanes (lane j holds elements i ≡ j mod 8), lanes added in order.
// Two blocks of 8 per iteration, independent, for instruction-level
// parallelism; a lone first block when n/8 is odd.
TEXT ·expSumS(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y15
	VMOVUPS expS_lo<>(SB), Y14
	VMOVUPS expS_log2e<>(SB), Y13
	VMOVUPS expS_ln2hi<>(SB), Y12
	VMOVUPS expS_ln2lo<>(SB), Y11
	VMOVUPS expS_one<>(SB), Y10
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	TESTQ $8, CX
	JZ pairsS
	EXPS((SI), Y0, Y1, Y2, Y3)
	VMOVUPS Y3, (DI)
	ACCS(Y3, X3, Y0)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JZ doneS

pairsS:
	EXPS((SI), Y0, Y1, Y2, Y3)
	EXPS(32(SI), Y4, Y5, Y6, Y7)
	VMOVUPS Y3, (DI)
	VMOVUPS Y7, 32(DI)
	ACCS(Y3, X3, Y0)
	ACCS(Y7, X7, Y4)
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ pairsS

doneS:
	VMOVAPD Y8, Y6
	VMOVAPD Y9, Y7
	LANES8
	VZEROUPPER
	MOVSD X0, ret+32(FP)
	RET

// func expSumD(dst, src *float64, n int, shift float64) float64
// dst[i] = exp(src[i] − shift); returns Σ dst[i] summed in 4 lanes,
// added in lane order.
TEXT ·expSumD(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD shift+24(FP), Y15
	VMOVUPD expD_lo<>(SB), Y14
	VMOVUPD expD_log2e<>(SB), Y13
	VMOVUPD expD_ln2hi<>(SB), Y12
	VMOVUPD expD_ln2lo<>(SB), Y11
	VMOVUPD expD_one<>(SB), Y10
	VMOVUPD expD_c2<>(SB), Y9
	VMOVUPD expD_c3<>(SB), Y8
	VXORPD Y6, Y6, Y6

loopD:
	VMOVUPD (SI), Y0
	VSUBPD Y15, Y0, Y0
	VCMPPD $13, Y14, Y0, Y3
	VMAXPD Y14, Y0, Y1
	VMINPD expD_hi<>(SB), Y1, Y1
	VMULPD Y13, Y1, Y2
	VROUNDPD $0, Y2, Y2
	VFNMADD231PD Y12, Y2, Y1
	VFNMADD231PD Y11, Y2, Y1
	VMOVUPD expD_c13<>(SB), Y4
	VFMADD213PD expD_c12<>(SB), Y1, Y4
	VFMADD213PD expD_c11<>(SB), Y1, Y4
	VFMADD213PD expD_c10<>(SB), Y1, Y4
	VFMADD213PD expD_c9<>(SB), Y1, Y4
	VFMADD213PD expD_c8<>(SB), Y1, Y4
	VFMADD213PD expD_c7<>(SB), Y1, Y4
	VFMADD213PD expD_c6<>(SB), Y1, Y4
	VFMADD213PD expD_c5<>(SB), Y1, Y4
	VFMADD213PD expD_c4<>(SB), Y1, Y4
	VFMADD213PD Y8, Y1, Y4
	VFMADD213PD Y9, Y1, Y4
	VFMADD213PD Y10, Y1, Y4
	VFMADD213PD Y10, Y1, Y4
	VCVTPD2DQY Y2, X5
	VPMOVSXDQ X5, Y5
	VPSLLQ $52, Y5, Y5
	VPADDQ Y5, Y4, Y4
	VANDPD Y3, Y4, Y4
	VMOVUPD Y4, (DI)
	VADDPD Y4, Y6, Y6
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopD

	LANES4
	VZEROUPPER
	MOVSD X0, ret+32(FP)
	RET

// MAXBODY is the loop of maxS and maxD: maxima in Y0, Y4, Y5, Y6 and NaN
// flags in Y1, Y7, Y8, Y9 over four vectors per iteration (the four
// chains hide VMAXP's latency), then single vectors; the four are merged
// into Y0 and Y1. W is the vector width in elements, P the PS/PD suffix.
#define MAXBODY(MAXP, CMPP, ORP, MOVU, W, L4, L1, DONE) \
	MOVU (SI), Y0; \
	CMPP $3, Y0, Y0, Y1; \
	VMOVAPS Y0, Y4; \
	VMOVAPS Y0, Y5; \
	VMOVAPS Y0, Y6; \
	VMOVAPS Y1, Y7; \
	VMOVAPS Y1, Y8; \
	VMOVAPS Y1, Y9; \
	ADDQ $32, SI; \
	SUBQ $W, CX; \
L4:; \
	CMPQ CX, $(4*W); \
	JLT L1; \
	MOVU (SI), Y2; \
	MOVU 32(SI), Y3; \
	MOVU 64(SI), Y10; \
	MOVU 96(SI), Y11; \
	MAXP Y2, Y0, Y0; \
	MAXP Y3, Y4, Y4; \
	MAXP Y10, Y5, Y5; \
	MAXP Y11, Y6, Y6; \
	CMPP $3, Y2, Y2, Y2; \
	CMPP $3, Y3, Y3, Y3; \
	CMPP $3, Y10, Y10, Y10; \
	CMPP $3, Y11, Y11, Y11; \
	ORP Y2, Y1, Y1; \
	ORP Y3, Y7, Y7; \
	ORP Y10, Y8, Y8; \
	ORP Y11, Y9, Y9; \
	ADDQ $128, SI; \
	SUBQ $(4*W), CX; \
	JMP L4; \
L1:; \
	TESTQ CX, CX; \
	JZ DONE; \
	MOVU (SI), Y2; \
	MAXP Y2, Y0, Y0; \
	CMPP $3, Y2, Y2, Y2; \
	ORP Y2, Y1, Y1; \
	ADDQ $32, SI; \
	SUBQ $W, CX; \
	JMP L1; \
DONE:; \
	MAXP Y4, Y0, Y0; \
	MAXP Y5, Y0, Y0; \
	MAXP Y6, Y0, Y0; \
	ORP Y7, Y1, Y1; \
	ORP Y8, Y1, Y1; \
	ORP Y9, Y1, Y1

// func maxS(x *float32, n int, out *[16]float32)
// out[0:8] = lane-wise maxima, out[8:16] non-zero in a lane that saw a NaN.
TEXT ·maxS(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), DI
	MAXBODY(VMAXPS, VCMPPS, VORPS, VMOVUPS, 8, fourS, oneS, doneMaxS)
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET

// func maxD(x *float64, n int, out *[8]float64)
TEXT ·maxD(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ out+16(FP), DI
	MAXBODY(VMAXPD, VCMPPD, VORPD, VMOVUPD, 4, fourD, oneD, doneMaxD)
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func axpbS(dst, src *float32, n int, a, b float32)
// dst[i] = a·src[i] + b, fused.
TEXT ·axpbS(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y14
	VBROADCASTSS b+28(FP), Y15

loopAxpbS:
	VMOVUPS (SI), Y0
	VFMADD213PS Y15, Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopAxpbS
	VZEROUPPER
	RET

// func axpbD(dst, src *float64, n int, a, b float64)
TEXT ·axpbD(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD a+24(FP), Y14
	VBROADCASTSD b+32(FP), Y15

loopAxpbD:
	VMOVUPD (SI), Y0
	VFMADD213PD Y15, Y14, Y0
	VMOVUPD Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopAxpbD
	VZEROUPPER
	RET

// REDBODY is the loop of dotS, dotD, sumS and sumD: four accumulators
// (Y0, Y3, Y4, Y5) over four vectors per iteration, then single vectors
// into Y0, then Y0 += Y3 + Y4 + Y5 (in that order). STEP(mem, acc)
// accumulates one vector at mem (and at the same offset from DI).
#define REDBODY(STEP, W, L4, L1, DONE) \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
L4:; \
	CMPQ CX, $(4*W); \
	JLT L1; \
	STEP(0, Y0); \
	STEP(32, Y3); \
	STEP(64, Y4); \
	STEP(96, Y5); \
	ADDQ $128, SI; \
	ADDQ $128, DI; \
	SUBQ $(4*W), CX; \
	JMP L4; \
L1:; \
	TESTQ CX, CX; \
	JZ DONE; \
	STEP(0, Y0); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	SUBQ $W, CX; \
	JMP L1; \
DONE:

#define DOTSTEPS(off, acc) VMOVUPS off(SI), Y1; VFMADD231PS off(DI), Y1, acc
#define DOTSTEPD(off, acc) VMOVUPD off(SI), Y1; VFMADD231PD off(DI), Y1, acc
#define SUMSTEPS(off, acc) VADDPS off(SI), acc, acc
#define SUMSTEPD(off, acc) VADDPD off(SI), acc, acc

// FOLDS and FOLDD add the four accumulators into Y0.
#define FOLDS VADDPS Y3, Y0, Y0; VADDPS Y4, Y0, Y0; VADDPS Y5, Y0, Y0
#define FOLDD VADDPD Y3, Y0, Y0; VADDPD Y4, Y0, Y0; VADDPD Y5, Y0, Y0

// func dotS(x, y *float32, n int) float64
// Σ x[i]·y[i] in float32 lanes (fused; four accumulators of 8 lanes,
// added together), the 8 lanes then added in order in float64.
TEXT ·dotS(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	REDBODY(DOTSTEPS, 8, fourDotS, oneDotS, doneDotS)
	FOLDS
	WIDEN8
	LANES8
	VZEROUPPER
	MOVSD X0, ret+24(FP)
	RET

// func dotD(x, y *float64, n int) float64
TEXT ·dotD(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	REDBODY(DOTSTEPD, 4, fourDotD, oneDotD, doneDotD)
	FOLDD
	VMOVAPD Y0, Y6
	LANES4
	VZEROUPPER
	MOVSD X0, ret+24(FP)
	RET

// func sumS(x *float32, n int) float64
TEXT ·sumS(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ SI, DI
	REDBODY(SUMSTEPS, 8, fourSumS, oneSumS, doneSumS)
	FOLDS
	WIDEN8
	LANES8
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET

// func sumD(x *float64, n int) float64
TEXT ·sumD(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ SI, DI
	REDBODY(SUMSTEPD, 4, fourSumD, oneSumD, doneSumD)
	FOLDD
	VMOVAPD Y0, Y6
	LANES4
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET

// func mulSubS(dst, s, u *float32, n int, d float32)
// dst[i] = s[i]·(u[i] − d), softmax's gradient.
TEXT ·mulSubS(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS d+32(FP), Y15

loopMulSubS:
	VMOVUPS (DX), Y0
	VSUBPS Y15, Y0, Y0
	VMULPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopMulSubS
	VZEROUPPER
	RET

// func mulSubD(dst, s, u *float64, n int, d float64)
TEXT ·mulSubD(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ u+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD d+32(FP), Y15

loopMulSubD:
	VMOVUPD (DX), Y0
	VSUBPD Y15, Y0, Y0
	VMULPD (SI), Y0, Y0
	VMOVUPD Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopMulSubD
	VZEROUPPER
	RET

// func subMulS(dst, u, e *float32, n int, c float32)
// dst[i] = u[i] − c·e[i] (fused), log-softmax's gradient.
TEXT ·subMulS(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ e+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS c+32(FP), Y15

loopSubMulS:
	VMOVUPS (SI), Y0
	VFNMADD231PS (DX), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopSubMulS
	VZEROUPPER
	RET

// func subMulD(dst, u, e *float64, n int, c float64)
TEXT ·subMulD(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ u+8(FP), SI
	MOVQ e+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD c+32(FP), Y15

loopSubMulD:
	VMOVUPD (SI), Y0
	VFNMADD231PD (DX), Y15, Y0
	VMOVUPD Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopSubMulD
	VZEROUPPER
	RET

// The AVX-512 exp: the same reduction and polynomial, the scaling by 2^n
// done by VSCALEFPS/PD, which also gives the subnormal results and 0
// below them; inputs are clamped to [−104, 89] (float32) or [−746, 710]
// (float64), where the result is already 0 or +Inf.

// func expSumS512(dst, src *float32, n int, shift float32, lanes *[16]float64)
// dst[i] = exp(src[i] − shift) for n a positive multiple of 16; lanes[j]
// += Σ dst[i] over i ≡ j mod 16, in float64.
TEXT ·expSumS512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS shift+24(FP), Z15
	MOVQ lanes+32(FP), DX
	VMOVUPD (DX), Z8
	VMOVUPD 64(DX), Z9
	VBROADCASTSS expS512_lo<>(SB), Z14
	VBROADCASTSS expS512_hi<>(SB), Z13
	VBROADCASTSS expS_log2e<>(SB), Z12
	VBROADCASTSS expS_ln2hi<>(SB), Z11
	VBROADCASTSS expS_ln2lo<>(SB), Z10
	VBROADCASTSS expS_one<>(SB), Z16
	VBROADCASTSS expS_c2<>(SB), Z17
	VBROADCASTSS expS_c3<>(SB), Z18
	VBROADCASTSS expS_c4<>(SB), Z19
	VBROADCASTSS expS_c5<>(SB), Z20
	VBROADCASTSS expS_c6<>(SB), Z21
	VBROADCASTSS expS_c7<>(SB), Z22

loopS512:
	VMOVUPS (SI), Z0
	VSUBPS Z15, Z0, Z0
	VMAXPS Z14, Z0, Z0
	VMINPS Z13, Z0, Z0
	VMULPS Z12, Z0, Z1
	VRNDSCALEPS $0, Z1, Z1
	VFNMADD231PS Z11, Z1, Z0
	VFNMADD231PS Z10, Z1, Z0
	VMOVAPS Z22, Z3
	VFMADD213PS Z21, Z0, Z3
	VFMADD213PS Z20, Z0, Z3
	VFMADD213PS Z19, Z0, Z3
	VFMADD213PS Z18, Z0, Z3
	VFMADD213PS Z17, Z0, Z3
	VFMADD213PS Z16, Z0, Z3
	VFMADD213PS Z16, Z0, Z3
	VSCALEFPS Z1, Z3, Z3
	VMOVUPS Z3, (DI)
	VCVTPS2PD Y3, Z4
	VADDPD Z4, Z8, Z8
	VEXTRACTF64X4 $1, Z3, Y3
	VCVTPS2PD Y3, Z4
	VADDPD Z4, Z9, Z9
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ loopS512
	VMOVUPD Z8, (DX)
	VMOVUPD Z9, 64(DX)
	VZEROUPPER
	RET

// func expSumD512(dst, src *float64, n int, shift float64, lanes *[16]float64)
// As expSumS512 for float64, n a positive multiple of 8; lanes[0:8].
TEXT ·expSumD512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD shift+24(FP), Z15
	MOVQ lanes+32(FP), DX
	VMOVUPD (DX), Z8
	VBROADCASTSD expD512_lo<>(SB), Z14
	VBROADCASTSD expD512_hi<>(SB), Z13
	VBROADCASTSD expD_log2e<>(SB), Z12
	VBROADCASTSD expD_ln2hi<>(SB), Z11
	VBROADCASTSD expD_ln2lo<>(SB), Z10
	VBROADCASTSD expD_one<>(SB), Z16
	VBROADCASTSD expD_c2<>(SB), Z17
	VBROADCASTSD expD_c3<>(SB), Z18
	VBROADCASTSD expD_c4<>(SB), Z19
	VBROADCASTSD expD_c5<>(SB), Z20
	VBROADCASTSD expD_c6<>(SB), Z21
	VBROADCASTSD expD_c7<>(SB), Z22
	VBROADCASTSD expD_c8<>(SB), Z23
	VBROADCASTSD expD_c9<>(SB), Z24
	VBROADCASTSD expD_c10<>(SB), Z25
	VBROADCASTSD expD_c11<>(SB), Z26
	VBROADCASTSD expD_c12<>(SB), Z27
	VBROADCASTSD expD_c13<>(SB), Z28

loopD512:
	VMOVUPD (SI), Z0
	VSUBPD Z15, Z0, Z0
	VMAXPD Z14, Z0, Z0
	VMINPD Z13, Z0, Z0
	VMULPD Z12, Z0, Z1
	VRNDSCALEPD $0, Z1, Z1
	VFNMADD231PD Z11, Z1, Z0
	VFNMADD231PD Z10, Z1, Z0
	VMOVAPD Z28, Z3
	VFMADD213PD Z27, Z0, Z3
	VFMADD213PD Z26, Z0, Z3
	VFMADD213PD Z25, Z0, Z3
	VFMADD213PD Z24, Z0, Z3
	VFMADD213PD Z23, Z0, Z3
	VFMADD213PD Z22, Z0, Z3
	VFMADD213PD Z21, Z0, Z3
	VFMADD213PD Z20, Z0, Z3
	VFMADD213PD Z19, Z0, Z3
	VFMADD213PD Z18, Z0, Z3
	VFMADD213PD Z17, Z0, Z3
	VFMADD213PD Z16, Z0, Z3
	VFMADD213PD Z16, Z0, Z3
	VSCALEFPD Z1, Z3, Z3
	VMOVUPD Z3, (DI)
	VADDPD Z3, Z8, Z8
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JNZ loopD512
	VMOVUPD Z8, (DX)
	VZEROUPPER
	RET

// The row-normalisation kernels: each is a composition of the kernels
// above on the same elements, with the same roundings in the same order
// (d = x + (−m) is fma(1, x, −m), y = fma(r, d, 0)), so that one pass does
// what several did.

// SUBSQSTEPS, SUBSQSTEPD: acc += d·d, d = x + (−m) (−m in Y14).
#define SUBSQSTEPS(off, acc) VADDPS off(SI), Y14, Y1; VFMADD231PS Y1, Y1, acc
#define SUBSQSTEPD(off, acc) VADDPD off(SI), Y14, Y1; VFMADD231PD Y1, Y1, acc

// func subSqS(x *float32, n int, negm float32) float64
// dotS(d, d) for d[i] = x[i] + negm, d not stored.
TEXT ·subSqS(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS negm+16(FP), Y14
	MOVQ SI, DI
	REDBODY(SUBSQSTEPS, 8, fourSubSqS, oneSubSqS, doneSubSqS)
	FOLDS
	WIDEN8
	LANES8
	VZEROUPPER
	MOVSD X0, ret+24(FP)
	RET

// func subSqD(x *float64, n int, negm float64) float64
TEXT ·subSqD(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD negm+16(FP), Y14
	MOVQ SI, DI
	REDBODY(SUBSQSTEPD, 4, fourSubSqD, oneSubSqD, doneSubSqD)
	FOLDD
	VMOVAPD Y0, Y6
	LANES4
	VZEROUPPER
	MOVSD X0, ret+24(FP)
	RET

// SUBDOTSTEPS, SUBDOTSTEPD: acc += u·d, u at SI, d = x + (−m), x at DI.
#define SUBDOTSTEPS(off, acc) VADDPS off(DI), Y14, Y1; VFMADD231PS off(SI), Y1, acc
#define SUBDOTSTEPD(off, acc) VADDPD off(DI), Y14, Y1; VFMADD231PD off(SI), Y1, acc

// func subDotS(u, x *float32, n int, negm float32) float64
// dotS(u, d) for d[i] = x[i] + negm, d not stored.
TEXT ·subDotS(SB), NOSPLIT, $0-40
	MOVQ u+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS negm+24(FP), Y14
	REDBODY(SUBDOTSTEPS, 8, fourSubDotS, oneSubDotS, doneSubDotS)
	FOLDS
	WIDEN8
	LANES8
	VZEROUPPER
	MOVSD X0, ret+32(FP)
	RET

// func subDotD(u, x *float64, n int, negm float64) float64
TEXT ·subDotD(SB), NOSPLIT, $0-40
	MOVQ u+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD negm+24(FP), Y14
	REDBODY(SUBDOTSTEPD, 4, fourSubDotD, oneSubDotD, doneSubDotD)
	FOLDD
	VMOVAPD Y0, Y6
	LANES4
	VZEROUPPER
	MOVSD X0, ret+32(FP)
	RET

// SUMDOTBODY is REDBODY with two sets of accumulators: Σ u (Y0, Y3, Y4,
// Y5, as sumS) and Σ u·y (Y8, Y9, Y10, Y11, as dotS), u at SI, x at DI,
// y = fma(r, x + (−m), 0) (−m in Y14, r in Y15, 0 in Y13). STEP(off,
// sacc, dacc) accumulates one vector.
#define SUMDOTBODY(STEP, W, L4, L1, DONE) \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y13, Y13, Y13; \
L4:; \
	CMPQ CX, $(4*W); \
	JLT L1; \
	STEP(0, Y0, Y8); \
	STEP(32, Y3, Y9); \
	STEP(64, Y4, Y10); \
	STEP(96, Y5, Y11); \
	ADDQ $128, SI; \
	ADDQ $128, DI; \
	SUBQ $(4*W), CX; \
	JMP L4; \
L1:; \
	TESTQ CX, CX; \
	JZ DONE; \
	STEP(0, Y0, Y8); \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	SUBQ $W, CX; \
	JMP L1; \
DONE:

#define SUMDOTSTEPS(off, sacc, dacc) VADDPS off(SI), sacc, sacc; VADDPS off(DI), Y14, Y1; VFMADD213PS Y13, Y15, Y1; VFMADD231PS off(SI), Y1, dacc
#define SUMDOTSTEPD(off, sacc, dacc) VADDPD off(SI), sacc, sacc; VADDPD off(DI), Y14, Y1; VFMADD213PD Y13, Y15, Y1; VFMADD231PD off(SI), Y1, dacc

// func sumDotNormS(u, x *float32, n int, negm, r float32, out *[2]float64)
// out = sumS(u), dotS(u, y) for y[i] = fma(r, x[i] + negm, 0), y not
// stored.
TEXT ·sumDotNormS(SB), NOSPLIT, $0-40
	MOVQ u+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS negm+24(FP), Y14
	VBROADCASTSS r+28(FP), Y15
	MOVQ out+32(FP), DX
	SUMDOTBODY(SUMDOTSTEPS, 8, fourSumDotS, oneSumDotS, doneSumDotS)
	FOLDS
	WIDEN8
	LANES8
	MOVSD X0, (DX)
	VADDPS Y9, Y8, Y8
	VADDPS Y10, Y8, Y8
	VADDPS Y11, Y8, Y0
	WIDEN8
	LANES8
	MOVSD X0, 8(DX)
	VZEROUPPER
	RET

// func sumDotNormD(u, x *float64, n int, negm, r float64, out *[2]float64)
TEXT ·sumDotNormD(SB), NOSPLIT, $0-48
	MOVQ u+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSD negm+24(FP), Y14
	VBROADCASTSD r+32(FP), Y15
	MOVQ out+40(FP), DX
	SUMDOTBODY(SUMDOTSTEPD, 4, fourSumDotD, oneSumDotD, doneSumDotD)
	FOLDD
	VMOVAPD Y0, Y6
	LANES4
	MOVSD X0, (DX)
	VADDPD Y9, Y8, Y8
	VADDPD Y10, Y8, Y8
	VADDPD Y11, Y8, Y6
	LANES4
	MOVSD X0, 8(DX)
	VZEROUPPER
	RET

// func normAffineS(dst, x *float32, n int, negm, r, w, b float32)
// dst[i] = fma(w, fma(r, x[i] + negm, 0), b).
TEXT ·normAffineS(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS negm+24(FP), Y12
	VBROADCASTSS r+28(FP), Y13
	VBROADCASTSS w+32(FP), Y14
	VBROADCASTSS b+36(FP), Y15
	VXORPS Y11, Y11, Y11

loopNormAffineS:
	VADDPS (SI), Y12, Y0
	VFMADD213PS Y11, Y13, Y0
	VFMADD213PS Y15, Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopNormAffineS
	VZEROUPPER
	RET

// func normAffineD(dst, x *float64, n int, negm, r, w, b float64)
TEXT ·normAffineD(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD negm+24(FP), Y12
	VBROADCASTSD r+32(FP), Y13
	VBROADCASTSD w+40(FP), Y14
	VBROADCASTSD b+48(FP), Y15
	VXORPD Y11, Y11, Y11

loopNormAffineD:
	VADDPD (SI), Y12, Y0
	VFMADD213PD Y11, Y13, Y0
	VFMADD213PD Y15, Y14, Y0
	VMOVUPD Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopNormAffineD
	VZEROUPPER
	RET

// func normGradS(dst, u, x *float32, n int, k *[6]float32)
// k = (negm, r, a, b, nr, c): y = fma(r, x[i] + negm, 0),
// t = fma(nr, fma(a, y, b), 0), dst[i] = t − c·u[i] (fused).
TEXT ·normGradS(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ u+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ k+32(FP), AX
	VBROADCASTSS 0(AX), Y9
	VBROADCASTSS 4(AX), Y10
	VBROADCASTSS 8(AX), Y11
	VBROADCASTSS 12(AX), Y12
	VBROADCASTSS 16(AX), Y13
	VBROADCASTSS 20(AX), Y14
	VXORPS Y15, Y15, Y15

loopNormGradS:
	VADDPS (SI), Y9, Y0
	VFMADD213PS Y15, Y10, Y0
	VFMADD213PS Y12, Y11, Y0
	VFMADD213PS Y15, Y13, Y0
	VFNMADD231PS (DX), Y14, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ loopNormGradS
	VZEROUPPER
	RET

// func normGradD(dst, u, x *float64, n int, k *[6]float64)
TEXT ·normGradD(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ u+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ k+32(FP), AX
	VBROADCASTSD 0(AX), Y9
	VBROADCASTSD 8(AX), Y10
	VBROADCASTSD 16(AX), Y11
	VBROADCASTSD 24(AX), Y12
	VBROADCASTSD 32(AX), Y13
	VBROADCASTSD 40(AX), Y14
	VXORPD Y15, Y15, Y15

loopNormGradD:
	VADDPD (SI), Y9, Y0
	VFMADD213PD Y15, Y10, Y0
	VFMADD213PD Y12, Y11, Y0
	VFMADD213PD Y15, Y13, Y0
	VFNMADD231PD (DX), Y14, Y0
	VMOVUPD Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ loopNormGradD
	VZEROUPPER
	RET
