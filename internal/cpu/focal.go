package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// The fused kernels of torchvision.ops.sigmoid_focal_loss (gops'
// SigmoidFocalLoss, reduction "none") and of its first derivatives, one
// pass over the elements each instead of the formula's twenty-odd
// elementwise ops. Each element is computed in float64 and rounded to T,
// from s = sigmoid(x) and its complement 1 − s = sigmoid(−x) taken from one
// exp(−|x|), so that neither cancels:
//
//	ce = (1 − t)·softplus(x) + t·softplus(−x)
//	q  = 1 − p_t = s·(1 − t) + (1 − s)·t
//	l  = A·ce·q^γ,  A = α·t + (1 − α)·(1 − t) (α ≥ 0; 1 if α < 0)
//
// and the derivatives ce_x = (1 − t)·s − t·(1 − s) (= s − t), q_x = s(1 − s)(1 − 2t), ce_t = −x,
// q_t = 1 − 2s, A_t = 2α − 1 (0 if α < 0).

// focalTerms are an element's s, 1 − s, softplus(x) and softplus(−x).
func focalTerms(x float64) (s, sc, spPos, spNeg float64) {
	e := math.Exp(-math.Abs(x)) // in (0, 1]: no overflow
	l := math.Log1p(e)
	if x >= 0 {
		s, sc = 1/(1+e), e/(1+e)
		spPos, spNeg = x+l, l
	} else {
		s, sc = e/(1+e), 1/(1+e)
		spPos, spNeg = l, l-x
	}
	return
}

// focalTerms32 is focalTerms to about 1e-9 relative, for float32
// results (a float32 ulp is 6e-8): exp(−|x|) as 2^−k·exp(−r) with
// |r| ≤ ln2/2 and exp(−r) its Taylor polynomial of degree 8 (2.7e-10),
// log1p(e) as 2·atanh(u), u = e/(2 + e) ≤ 1/3, by nine terms of its series
// (1.5e-10): about three times faster than math.Exp and math.Log1p.
func focalTerms32(x float64) (s, sc, spPos, spNeg float64) {
	a := math.Abs(x)
	var e float64
	if a < 700 {
		k := math.Floor(a*(1/math.Ln2) + 0.5)
		r := -(a - k*math.Ln2) // exp(−a) = 2^−k·exp(r), |r| ≤ ln2/2
		// Σ r^i/i!, i ≤ 8, by Estrin's scheme (a short dependency chain).
		r2 := r * r
		r4 := r2 * r2
		p01 := 1 + r
		p23 := math.FMA(r, 1/6.0, 1/2.0)
		p45 := math.FMA(r, 1/120.0, 1/24.0)
		p67 := math.FMA(r, 1/5040.0, 1/720.0)
		p03 := math.FMA(r2, p23, p01)
		p47 := math.FMA(r2, p67, p45)
		p := math.FMA(r4, math.FMA(r4, 1/40320.0, p47), p03)
		if k < 1000 {
			e = p * math.Float64frombits(uint64(1023-int64(k))<<52) // 2^−k
		} else {
			e = math.Ldexp(p, -int(k)) // subnormal
		}
	}
	r := 1 / (1 + e)
	u := e * r / (1 + r) // e/(2 + e) = (e/(1 + e))/(1 + 1/(1 + e))
	u2 := u * u
	u4 := u2 * u2
	u8 := u4 * u4
	// Σ u^2i/(2i+1), i ≤ 8, by Estrin's scheme.
	t01 := math.FMA(u2, 1/3.0, 1)
	t23 := math.FMA(u2, 1/7.0, 1/5.0)
	t45 := math.FMA(u2, 1/11.0, 1/9.0)
	t67 := math.FMA(u2, 1/15.0, 1/13.0)
	t03 := math.FMA(u4, t23, t01)
	t47 := math.FMA(u4, t67, t45)
	t := math.FMA(u8, math.FMA(u8, 1/17.0, t47), t03)
	l := 2 * u * t
	// Without branches on the sign (logits' signs follow no pattern):
	er := e * r
	s, sc = er, r
	if x >= 0 {
		s, sc = r, er
	}
	return s, sc, l + max(x, 0), l + max(-x, 0) // not (|x| ± x)/2: NaN at an infinite x
}

// focalTermsOf is focalTerms32 for float32, focalTerms for float64: the
// terms of the generic loops, which FocalLoss and FocalLossGrad run for
// float64 and for float32 types other than float32 itself (float32 goes
// through vmath.SigmoidSoftplus32, in chunks).
func focalTermsOf[T Float]() func(float64) (s, sc, spPos, spNeg float64) {
	var z T
	if _, ok := any(z).(float32); ok {
		return focalTerms32
	}
	return focalTerms
}

// focalWeight is A and A_t at t.
func focalWeight(t, alpha float64) (a, at float64) {
	if alpha < 0 {
		return 1, 0
	}
	return alpha*t + (1-alpha)*(1-t), 2*alpha - 1
}

// focalLossAt is l at target t from x's terms.
func focalLossAt(t, s, sc, spPos, spNeg, alpha, gamma float64) float64 {
	ce := (1-t)*spPos + t*spNeg
	a, _ := focalWeight(t, alpha)
	q := s*(1-t) + sc*t
	var qg float64 // q^γ
	switch gamma {
	case 2:
		qg = q * q
	case 1:
		qg = q
	case 0:
		qg = 1
	default:
		qg = math.Pow(q, gamma)
	}
	return a * ce * qg
}

// focalGradAt is ∂l/∂x at (x, t), or ∂l/∂t when wrtT, from x's terms.
func focalGradAt(x, t, s, sc, spPos, spNeg, alpha, gamma float64, wrtT bool) float64 {
	ce := (1-t)*spPos + t*spNeg
	q := s*(1-t) + sc*t
	a, at := focalWeight(t, alpha)
	var ceD, qD float64
	if wrtT {
		ceD, qD = -x, sc-s // 1 − 2s
	} else {
		ceD, qD = (1-t)*s-t*sc, s*sc*(1-2*t) // s − t, without its cancellation at t = 1
	}
	var qg, dqg float64 // q^γ and γ·q^(γ−1)
	switch gamma {
	case 2:
		qg, dqg = q*q, 2*q
	case 1:
		qg, dqg = q, 1
	case 0:
		qg, dqg = 1, 0
	default:
		qg, dqg = math.Pow(q, gamma), gamma*math.Pow(q, gamma-1)
	}
	dd := ceD * qg
	if gamma != 0 { // ce·0 is NaN at an infinite logit
		dd += ce * dqg * qD
	}
	d := a * dd
	if wrtT && at != 0 {
		d += at * ce * qg
	}
	return d
}

// focalChunk is how many logits the float32 kernels hand
// vmath.SigmoidSoftplus32 at a time, its terms kept on the stack (12 KiB).
const focalChunk = 512

// focalChunks runs body on x[lo:hi] in chunks of at most focalChunk
// logits, with their terms s, sc and l = log1p(exp(−|x|)) from
// vmath.SigmoidSoftplus32 (to a few 1e-12 relative, softplus(±x) being
// l + max(±x, 0)). The terms of a logit depend on it alone, so the results
// do not depend on where the chunks (and par's ranges) begin.
func focalChunks(x []float32, lo, hi int, body func(c int, xs []float32, s, sc, l []float64)) {
	var s, sc, l [focalChunk]float64
	for c := lo; c < hi; c += focalChunk {
		xs := x[c:min(c+focalChunk, hi)]
		ss, scs, ls := s[:len(xs)], sc[:len(xs)], l[:len(xs)]
		vmath.SigmoidSoftplus32(xs, ss, scs, ls)
		body(c, xs, ss, scs, ls)
	}
}

// focalParts is ce and q at (x, t) from x's terms s, sc and l.
func focalParts(x, t, s, sc, l float64) (ce, q float64) {
	return (1-t)*(l+max(x, 0)) + t*(l+max(-x, 0)), s*(1-t) + sc*t
}

// focalLoss32 is FocalLoss's loop for float32 on one chunk, with its
// terms: focalLossAt written out, the branch on γ taken once.
func focalLoss32(out, x, t []float32, s, sc, l []float64, alpha, gamma float64) {
	out, t, s, sc, l = out[:len(x)], t[:len(x)], s[:len(x)], sc[:len(x)], l[:len(x)]
	switch gamma {
	case 2:
		for i, xv := range x {
			tv := float64(t[i])
			ce, q := focalParts(float64(xv), tv, s[i], sc[i], l[i])
			a, _ := focalWeight(tv, alpha)
			out[i] = float32(a * ce * (q * q))
		}
	case 1:
		for i, xv := range x {
			tv := float64(t[i])
			ce, q := focalParts(float64(xv), tv, s[i], sc[i], l[i])
			a, _ := focalWeight(tv, alpha)
			out[i] = float32(a * ce * q)
		}
	case 0:
		for i, xv := range x {
			tv := float64(t[i])
			ce, _ := focalParts(float64(xv), tv, s[i], sc[i], l[i])
			a, _ := focalWeight(tv, alpha)
			out[i] = float32(a * ce)
		}
	default:
		for i, xv := range x {
			tv := float64(t[i])
			ce, q := focalParts(float64(xv), tv, s[i], sc[i], l[i])
			a, _ := focalWeight(tv, alpha)
			out[i] = float32(a * ce * math.Pow(q, gamma))
		}
	}
}

// focalGrad32 is FocalLossGrad's loop for float32 on one chunk, with its
// terms: focalGradAt written out.
func focalGrad32(out, x, t, u []float32, s, sc, l []float64, alpha, gamma float64, wrtT bool) {
	out, t, u, s, sc, l = out[:len(x)], t[:len(x)], u[:len(x)], s[:len(x)], sc[:len(x)], l[:len(x)]
	if gamma == 2 && !wrtT { // RetinaNet's: the loop below, its branches taken
		for i, x32 := range x {
			xv, tv, si, sci := float64(x32), float64(t[i]), s[i], sc[i]
			ce, q := focalParts(xv, tv, si, sci, l[i])
			a, _ := focalWeight(tv, alpha)
			ceD, qD := (1-tv)*si-tv*sci, si*sci*(1-2*tv)
			out[i] = float32(float64(u[i]) * (a * (ceD*(q*q) + ce*(2*q)*qD)))
		}
		return
	}
	for i, x32 := range x {
		xv := float64(x32)
		d := focalGradAt(xv, float64(t[i]), s[i], sc[i], l[i]+max(xv, 0), l[i]+max(-xv, 0), alpha, gamma, wrtT)
		out[i] = float32(float64(u[i]) * d)
	}
}

// FocalLoss sets out[i] to the focal loss l at (x[i], t[i]) (see above);
// x, t and out have one length.
func FocalLoss[T Float](out, x, t []T, alpha, gamma float64) {
	out, t = out[:len(x)], t[:len(x)]
	if x32, ok := any(x).([]float32); ok {
		out32, t32 := any(out).([]float32), any(t).([]float32)
		par.ForWork(len(x), 16*len(x), func(lo, hi int) {
			focalChunks(x32, lo, hi, func(c int, xs []float32, s, sc, l []float64) {
				focalLoss32(out32[c:], xs, t32[c:], s, sc, l, alpha, gamma)
			})
		})
		return
	}
	terms := focalTermsOf[T]()
	par.ForWork(len(x), 16*len(x), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s, sc, spPos, spNeg := terms(float64(x[i]))
			out[i] = T(focalLossAt(float64(t[i]), s, sc, spPos, spNeg, alpha, gamma))
		}
	})
}

// FocalLossGrad sets out[i] to u[i]·∂l/∂x at (x[i], t[i]), or u[i]·∂l/∂t
// when wrtT; out, x, t and u have one length. With 0 < γ < 1 the value is
// NaN or infinite where q = 0, as torch's.
func FocalLossGrad[T Float](out, x, t, u []T, alpha, gamma float64, wrtT bool) {
	out, t, u = out[:len(x)], t[:len(x)], u[:len(x)]
	if x32, ok := any(x).([]float32); ok {
		out32, t32, u32 := any(out).([]float32), any(t).([]float32), any(u).([]float32)
		par.ForWork(len(x), 16*len(x), func(lo, hi int) {
			focalChunks(x32, lo, hi, func(c int, xs []float32, s, sc, l []float64) {
				focalGrad32(out32[c:], xs, t32[c:], u32[c:], s, sc, l, alpha, gamma, wrtT)
			})
		})
		return
	}
	terms := focalTermsOf[T]()
	par.ForWork(len(x), 16*len(x), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			xv := float64(x[i])
			s, sc, spPos, spNeg := terms(xv)
			d := focalGradAt(xv, float64(t[i]), s, sc, spPos, spNeg, alpha, gamma, wrtT)
			out[i] = T(float64(u[i]) * d)
		}
	})
}
