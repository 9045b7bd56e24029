//go:build amd64 && !purego

#include "textflag.h"

// SigmoidSoftplus32's AVX2 + FMA loop; see sigsoft.go for the method and
// sigmoidSoftplus1 for the same operations in Go.

#define VEC64(name, v) DATA name+0(SB)/8, v; DATA name+8(SB)/8, v; DATA name+16(SB)/8, v; DATA name+24(SB)/8, v; GLOBL name(SB), RODATA|NOPTR, $32

VEC64(ssp_sign<>, $0x8000000000000000)
VEC64(ssp_shift<>, $0x43380000000003ff)  // 0x1.8p52 + 1023
VEC64(ssp_log2e<>, $0x3ff71547652b82fe)
VEC64(ssp_ln2hi<>, $0x3fe62e42fee00000)
VEC64(ssp_ln2lo<>, $0x3dea39ef35793c76)
VEC64(ssp_negmax<>, $0xc086200000000000) // -708
VEC64(ssp_one<>, $0x3ff0000000000000)
VEC64(ssp_two<>, $0x4000000000000000)
VEC64(ssp_e1<>, $0x3feffffffffd282e)
VEC64(ssp_e2<>, $0x3fdfffffffff6ea7)
VEC64(ssp_e3<>, $0x3fc555555a3c6315)
VEC64(ssp_e4<>, $0x3fa55555574b284e)
VEC64(ssp_e5<>, $0x3f811107f0147c6d)
VEC64(ssp_e6<>, $0x3f56c164c9aad499)
VEC64(ssp_e7<>, $0x3f2a1acd0505b8d4)
VEC64(ssp_e8<>, $0x3efa15c2e8887591)
VEC64(ssp_g0<>, $0x4000000000002b15)
VEC64(ssp_g1<>, $0x3fe555555304b386)
VEC64(ssp_g2<>, $0x3fd9999c3048b496)
VEC64(ssp_g3<>, $0x3fd2489a575651dc)
VEC64(ssp_g4<>, $0x3fcc8d0693b1d3dd)
VEC64(ssp_g5<>, $0x3fc5e9fe2fb2ec10)
VEC64(ssp_g6<>, $0x3fcbfda209e24a29)

// SSP4 computes the terms of the four float32 logits at in(SI) into
// out(DI) (s), out(DX) (sc) and out(R8) (l), float64. Constants: Y15 the
// sign bit, Y14 the shifter, Y13 log2 e, Y12 1, Y11 −708; Y0-Y6 scratch.
#define SSP4(in, out) \
	VCVTPS2PD in(SI), Y0; \
	VORPD Y15, Y0, Y1; \
	VCMPPD $0x16, Y11, Y1, Y2; \
	VMOVAPD Y14, Y3; \
	VFMADD231PD Y13, Y1, Y3; \
	VSUBPD Y14, Y3, Y4; \
	VFNMADD231PD ssp_ln2hi<>(SB), Y4, Y1; \
	VFNMADD231PD ssp_ln2lo<>(SB), Y4, Y1; \
	VMOVAPD ssp_e8<>(SB), Y5; \
	VFMADD213PD ssp_e7<>(SB), Y1, Y5; \
	VFMADD213PD ssp_e6<>(SB), Y1, Y5; \
	VFMADD213PD ssp_e5<>(SB), Y1, Y5; \
	VFMADD213PD ssp_e4<>(SB), Y1, Y5; \
	VFMADD213PD ssp_e3<>(SB), Y1, Y5; \
	VFMADD213PD ssp_e2<>(SB), Y1, Y5; \
	VFMADD213PD ssp_e1<>(SB), Y1, Y5; \
	VFMADD213PD Y12, Y1, Y5; \
	VPSLLQ $52, Y3, Y3; \
	VMULPD Y3, Y5, Y5; \
	VANDPD Y2, Y5, Y5; \
	VADDPD Y12, Y5, Y1; \
	VADDPD ssp_two<>(SB), Y5, Y2; \
	VMULPD Y2, Y1, Y3; \
	VDIVPD Y3, Y12, Y3; \
	VMULPD Y3, Y2, Y4; \
	VMULPD Y3, Y1, Y1; \
	VMULPD Y4, Y5, Y2; \
	VMULPD Y1, Y5, Y3; \
	VMULPD Y3, Y3, Y5; \
	VMOVAPD ssp_g6<>(SB), Y6; \
	VFMADD213PD ssp_g5<>(SB), Y5, Y6; \
	VFMADD213PD ssp_g4<>(SB), Y5, Y6; \
	VFMADD213PD ssp_g3<>(SB), Y5, Y6; \
	VFMADD213PD ssp_g2<>(SB), Y5, Y6; \
	VFMADD213PD ssp_g1<>(SB), Y5, Y6; \
	VFMADD213PD ssp_g0<>(SB), Y5, Y6; \
	VMULPD Y6, Y3, Y6; \
	VBLENDVPD Y0, Y2, Y4, Y1; \
	VBLENDVPD Y0, Y4, Y2, Y5; \
	VMOVUPD Y1, out(DI); \
	VMOVUPD Y5, out(DX); \
	VMOVUPD Y6, out(R8)

// func sigSoftS(x *float32, s, sc, l *float64, n int)
// Eight logits an iteration, n a positive multiple of 8. Each element's
// value is the same as sigmoidSoftplus1's: x widened exactly, na = −|x|
// (Y1, then r), keep = !(na ≤ −708) (Y2), t = fma(na, log2 e, shifter)
// (Y3), n = t − shifter (Y4), r = fma(−n, ln2hi, na), r = fma(−n, ln2lo,
// r), p by Horner (Y5), e = p·(t << 52) masked by keep; u1 = 1 + e (Y1),
// u2 = 2 + e (Y2), d = 1/(u1·u2) (Y3), rr = u2·d (Y4), v = u1·d (Y1),
// er = e·rr (Y2), w = e·v (Y3), z = w·w (Y5), g by Horner (Y6), l = w·g;
// s, sc = rr, er, swapped where x's sign bit is set.
TEXT ·sigSoftS(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ sc+16(FP), DX
	MOVQ l+24(FP), R8
	MOVQ n+32(FP), CX
	VMOVUPD ssp_sign<>(SB), Y15
	VMOVUPD ssp_shift<>(SB), Y14
	VMOVUPD ssp_log2e<>(SB), Y13
	VMOVUPD ssp_one<>(SB), Y12
	VMOVUPD ssp_negmax<>(SB), Y11

loopSigSoftS:
	SSP4(0, 0)
	SSP4(16, 32)
	ADDQ $32, SI
	ADDQ $64, DI
	ADDQ $64, DX
	ADDQ $64, R8
	SUBQ $8, CX
	JNZ loopSigSoftS
	VZEROUPPER
	RET

// SSP8 is SSP4 with AVX-512 on eight logits, constants in Z16-Z31 (see
// sigSoftS512) and the atanh polynomial's broadcast from memory, scratch
// Z(a)..: X, NA, T, N, P, and two more; masks KK (keep), KS (sign).
#define SSP8(in, out, X, A, T, N, P, B, C, KK, KS) \
	VCVTPS2PD in(SI), X; \
	VORPD Z31, X, A; \
	VCMPPD $0x16, Z27, A, KK; \
	VMOVAPD Z30, T; \
	VFMADD231PD Z29, A, T; \
	VSUBPD Z30, T, N; \
	VFNMADD231PD Z26, N, A; \
	VFNMADD231PD Z25, N, A; \
	VMOVAPD Z23, P; \
	VFMADD213PD Z22, A, P; \
	VFMADD213PD Z21, A, P; \
	VFMADD213PD Z20, A, P; \
	VFMADD213PD Z19, A, P; \
	VFMADD213PD Z18, A, P; \
	VFMADD213PD Z17, A, P; \
	VFMADD213PD Z16, A, P; \
	VFMADD213PD Z28, A, P; \
	VPSLLQ $52, T, T; \
	VMULPD T, P, P; \
	VMOVAPD.Z P, KK, P; \
	VADDPD Z28, P, A; \
	VADDPD Z24, P, N; \
	VMULPD N, A, T; \
	VDIVPD T, Z28, T; \
	VMULPD T, N, B; \
	VMULPD T, A, A; \
	VMULPD B, P, N; \
	VMULPD A, P, T; \
	VMULPD T, T, P; \
	VBROADCASTSD ssp_g6<>(SB), C; \
	VFMADD213PD.BCST ssp_g5<>(SB), P, C; \
	VFMADD213PD.BCST ssp_g4<>(SB), P, C; \
	VFMADD213PD.BCST ssp_g3<>(SB), P, C; \
	VFMADD213PD.BCST ssp_g2<>(SB), P, C; \
	VFMADD213PD.BCST ssp_g1<>(SB), P, C; \
	VFMADD213PD.BCST ssp_g0<>(SB), P, C; \
	VMULPD C, T, C; \
	VPMOVQ2M X, KS; \
	VBLENDMPD N, B, KS, A; \
	VBLENDMPD B, N, KS, P; \
	VMOVUPD A, out(DI); \
	VMOVUPD P, out(DX); \
	VMOVUPD C, out(R8)

// func sigSoftS512(x *float32, s, sc, l *float64, n int)
// sigSoftS with AVX-512, n a positive multiple of 16, the same operations
// (so the same bits). Z31 sign bit, Z30 shifter, Z29 log2 e, Z28 1, Z27
// −708, Z26 ln2hi, Z25 ln2lo, Z24 2, Z23-Z16 the exp polynomial's c8-c1.
TEXT ·sigSoftS512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ sc+16(FP), DX
	MOVQ l+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSD ssp_sign<>(SB), Z31
	VBROADCASTSD ssp_shift<>(SB), Z30
	VBROADCASTSD ssp_log2e<>(SB), Z29
	VBROADCASTSD ssp_one<>(SB), Z28
	VBROADCASTSD ssp_negmax<>(SB), Z27
	VBROADCASTSD ssp_ln2hi<>(SB), Z26
	VBROADCASTSD ssp_ln2lo<>(SB), Z25
	VBROADCASTSD ssp_two<>(SB), Z24
	VBROADCASTSD ssp_e8<>(SB), Z23
	VBROADCASTSD ssp_e7<>(SB), Z22
	VBROADCASTSD ssp_e6<>(SB), Z21
	VBROADCASTSD ssp_e5<>(SB), Z20
	VBROADCASTSD ssp_e4<>(SB), Z19
	VBROADCASTSD ssp_e3<>(SB), Z18
	VBROADCASTSD ssp_e2<>(SB), Z17
	VBROADCASTSD ssp_e1<>(SB), Z16

loopSigSoftS512:
	SSP8(0, 0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, K1, K2)
	SSP8(32, 64, Z7, Z8, Z9, Z10, Z11, Z12, Z13, K3, K4)
	ADDQ $64, SI
	ADDQ $128, DI
	ADDQ $128, DX
	ADDQ $128, R8
	SUBQ $16, CX
	JNZ loopSigSoftS512
	VZEROUPPER
	RET
