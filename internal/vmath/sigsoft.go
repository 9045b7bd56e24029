package vmath

import "math"

// SigmoidSoftplus32 sets, for i < len(x), with e = exp(−|x[i]|):
//
//	s[i]  = sigmoid(x[i])  = 1/(1 + e) or e/(1 + e)
//	sc[i] = sigmoid(−x[i]) = 1 − s[i], without its cancellation
//	l[i]  = log1p(e), so that softplus(±x) = l + max(±x, 0)
//
// the terms of a sigmoid focal or cross-entropy loss, computed in float64
// from the float32 logits to about 5e-12 relative (so that, rounded to
// float32, each is within one ulp of the correctly rounded value, and
// differences such as s − t keep float64's headroom). s, sc and l must be
// at least as long as x.
//
// exp(−a) is 2^n·p(r), n = round(−a·log2 e), r = −a − n·ln2 (Cody–Waite),
// p a degree-8 polynomial (1.1e-12); e is 0 for a ≥ 708 (and ±Inf), where
// it would leave float64's normal range. log1p(e) = 2·atanh(w), w =
// e/(2 + e) ∈ [0, 1/3], by w·g(w²), g of degree 6 (2.6e-12); 1/(1 + e) and
// 1/(2 + e) come from one division, of (1 + e)(2 + e). A NaN gives NaNs.
//
// The AVX2 loop (amd64) and the Go loop do the same operations in the same
// order, fused where the other is, so they give the same bits; the last
// len mod 8 elements go through the vector loop on a padded copy, so each
// element's terms depend on its logit alone, not on its position.
func SigmoidSoftplus32(x []float32, s, sc, l []float64) {
	s, sc, l = s[:len(x)], sc[:len(x)], l[:len(x)]
	sigmoidSoftplus32(x, s, sc, l)
}

// The constants of SigmoidSoftplus32 (also in sigsoft_amd64.s).
const (
	sspShift = 0x1.8p52 + 1023 // t = −a·log2 e + sspShift: n in t's low bits, 2^n = bits(t) << 52
	sspLn2Hi = 0x1.62e42fee00000p-1
	sspLn2Lo = 0x1.a39ef35793c76p-33
	sspMax   = 708 // e = 0 from here up
)

// sspExp is p(r) ≈ exp(r) on |r| ≤ ln2/2 + 1e-3, low degree first
// (Chebyshev interpolation, 1.1e-12 relative).
var sspExp = [9]float64{
	1,
	0x1.ffffffffd282ep-01,
	0x1.fffffffff6ea7p-02,
	0x1.555555a3c6315p-03,
	0x1.55555574b284ep-05,
	0x1.11107f0147c6dp-07,
	0x1.6c164c9aad499p-10,
	0x1.a1acd0505b8d4p-13,
	0x1.a15c2e8887591p-16,
}

// sspAtanh is g(z) ≈ 2·atanh(√z)/√z on 0 ≤ z ≤ 1/9 + 1e-4, low degree
// first (Chebyshev interpolation, 2.6e-12 relative).
var sspAtanh = [7]float64{
	0x1.0000000002b15p+01,
	0x1.555555304b386p-01,
	0x1.9999c3048b496p-02,
	0x1.2489a575651dcp-02,
	0x1.c8d0693b1d3ddp-03,
	0x1.5e9fe2fb2ec1p-03,
	0x1.bfda209e24a29p-03,
}

// sigmoidSoftplusGo is SigmoidSoftplus32's loop in Go: the assembly's
// operations one by one (the float64 conversions keep the compiler from
// fusing a product into a sum where the assembly does not).
func sigmoidSoftplusGo(x []float32, s, sc, l []float64) {
	for i, xv := range x {
		s[i], sc[i], l[i] = sigmoidSoftplus1(float64(xv))
	}
}

func sigmoidSoftplus1(x float64) (s, sc, l float64) {
	na := -math.Abs(x)
	t := math.FMA(na, math.Log2E, sspShift)
	n := t - sspShift
	r := math.FMA(-n, sspLn2Hi, na)
	r = math.FMA(-n, sspLn2Lo, r)
	p := sspExp[8]
	for k := 7; k >= 0; k-- {
		p = math.FMA(p, r, sspExp[k])
	}
	e := float64(p * math.Float64frombits(math.Float64bits(t)<<52))
	if na <= -sspMax {
		e = 0
	}
	u1, u2 := 1+e, 2+e
	d := 1 / float64(u1*u2)
	rr, v := float64(u2*d), float64(u1*d)
	er, w := float64(e*rr), float64(e*v)
	z := float64(w * w)
	g := sspAtanh[6]
	for k := 5; k >= 0; k-- {
		g = math.FMA(g, z, sspAtanh[k])
	}
	l = float64(w * g)
	if math.Signbit(x) {
		return er, rr, l
	}
	return rr, er, l
}
