// Package vmath holds the vector loops of the row kernels in
// internal/cpu: for softmax, log-softmax and their gradients, the maximum
// of a row, exp(x − shift) with its sum, dot products, sums and a·x + b;
// for the row normalisations (LayerNorm, GroupNorm), fused passes that
// recompute x − μ and the normalised y instead of storing them; the terms
// of a sigmoid focal loss from float32 logits (SigmoidSoftplus32, in
// float64 lanes). On amd64 with AVX2 and FMA (the exp and
// SigmoidSoftplus32 also with AVX-512) they are Go assembly; elsewhere,
// and under the purego tag, plain Go with math.Exp (SigmoidSoftplus32: its
// assembly's operations, in Go).
//
// The assembly's exp is a polynomial, within 2 ulp of math.Exp for
// float32 and float64 (tested); results are deterministic: each function
// gives the same bits for the same input, independent of the slice's
// position in a larger buffer only up to the tail (the last len mod 8
// float32 or len mod 4 float64 elements go through the same code on a
// padded copy).
package vmath

import "math"

// Float is the element type of the loops.
type Float interface{ ~float32 | ~float64 }

// Max returns the largest element of x; NaN if any element is NaN, −Inf
// when x is empty.
func Max[T Float](x []T) T {
	switch xs := any(x).(type) {
	case []float32:
		return T(max32(xs))
	case []float64:
		return T(max64(xs))
	}
	return maxGo(x)
}

// ExpSum sets dst[i] = exp(src[i] − shift) for i < len(src) and returns
// the sum of those values, accumulated in float64 (the AVX-512 float32
// kernel first adds at most 32 values per vector lane in float32, as
// torch's float reductions do: 31 roundings, so a relative error of at
// most 31·2⁻²⁴ ≈ 1.85e-6, which rows built for it reach, and a few 1e-8
// on random rows).
// dst must be at least as long as src (it may be src itself). Defined for
// src[i] − shift ≤ 88 (float32) or 709 (float64), as when shift is the
// maximum of src; values of src[i] − shift below −87.33 (float32) or
// −708.3 (float64) give 0. Neither src nor shift may be NaN (callers check
// with Max). Above the domain the kernels differ: the AVX-512 one and
// math.Exp overflow to +Inf, the AVX2 one saturates near the largest float
// (its input is clamped).
func ExpSum[T Float](dst, src []T, shift T) float64 {
	dst = dst[:len(src)]
	switch xs := any(src).(type) {
	case []float32:
		return expSum32(any(dst).([]float32), xs, float32(shift))
	case []float64:
		return expSum64(any(dst).([]float64), xs, float64(shift))
	}
	return expSumGo(dst, src, shift)
}

// Axpb sets dst[i] = a·src[i] + b for i < len(src) (fused where the CPU
// has FMA); dst may be src.
func Axpb[T Float](dst, src []T, a, b T) {
	dst = dst[:len(src)]
	switch xs := any(src).(type) {
	case []float32:
		axpb32(any(dst).([]float32), xs, float32(a), float32(b))
		return
	case []float64:
		axpb64(any(dst).([]float64), xs, float64(a), float64(b))
		return
	}
	axpbGo(dst, src, a, b)
}

// AxpbAt sets dst[i] = a·src[i] + b for i < len(src), rounded as Axpb
// rounds element at + i of a vector of whole elements (0 ≤ at,
// at + len(src) ≤ whole): fused where Axpb's vector loop takes that
// element, as its Go tail elsewhere (the two can differ in float32). So a
// vector done part by part with AxpbAt is bitwise one Axpb on it. dst may
// be src.
func AxpbAt[T Float](dst, src []T, a, b T, at, whole int) {
	dst = dst[:len(src)]
	v := min(max(vecLen(whole, vecWidth[T]())-at, 0), len(src))
	switch xs := any(src[:v]).(type) {
	case []float32:
		axpbFused32(any(dst[:v]).([]float32), xs, float32(a), float32(b))
	case []float64:
		axpbFused64(any(dst[:v]).([]float64), xs, float64(a), float64(b))
	default:
		v = 0 // Axpb runs other element types in Go alone
	}
	axpbGo(dst[v:], src[v:], a, b)
}

// vecWidth is the assembly loops' vector width in elements of T.
func vecWidth[T Float]() int {
	var z T
	if _, ok := any(z).(float32); ok {
		return 8
	}
	return 4
}

func maxGo[T Float](x []T) T {
	m := T(math.Inf(-1))
	for _, v := range x {
		if v != v {
			return v
		}
		if v > m {
			m = v
		}
	}
	return m
}

func expSumGo[T Float](dst, src []T, shift T) float64 {
	var s float64
	for i, v := range src {
		e := T(math.Exp(float64(v - shift)))
		dst[i] = e
		s += float64(e)
	}
	return s
}

func axpbGo[T Float](dst, src []T, a, b T) {
	for i, v := range src {
		dst[i] = T(math.FMA(float64(a), float64(v), float64(b)))
	}
}

// Dot returns Σ x[i]·y[i] for i < len(x) (y at least as long), the
// float32 products accumulated in float32 vector lanes, the lanes and the
// tail added in float64.
func Dot[T Float](x, y []T) float64 {
	y = y[:len(x)]
	switch xs := any(x).(type) {
	case []float32:
		return dot32(xs, any(y).([]float32))
	case []float64:
		return dot64(xs, any(y).([]float64))
	}
	return dotGo(x, y)
}

// Sum returns Σ x[i], accumulated as Dot.
func Sum[T Float](x []T) float64 {
	switch xs := any(x).(type) {
	case []float32:
		return sum32(xs)
	case []float64:
		return sum64(xs)
	}
	return sumGo(x)
}

// MulSub sets dst[i] = s[i]·(u[i] − d) for i < len(s): softmax's gradient
// for upstream u and output s, with d = Σ u·s.
func MulSub[T Float](dst, s, u []T, d T) {
	dst, u = dst[:len(s)], u[:len(s)]
	switch ss := any(s).(type) {
	case []float32:
		mulSub32(any(dst).([]float32), ss, any(u).([]float32), float32(d))
		return
	case []float64:
		mulSub64(any(dst).([]float64), ss, any(u).([]float64), float64(d))
		return
	}
	mulSubGo(dst, s, u, d)
}

// SubMul sets dst[i] = u[i] − c·e[i] for i < len(u) (fused where the CPU
// has FMA): log-softmax's gradient for upstream u, e = exp(output) and
// c = Σ u.
func SubMul[T Float](dst, u, e []T, c T) {
	dst, e = dst[:len(u)], e[:len(u)]
	switch us := any(u).(type) {
	case []float32:
		subMul32(any(dst).([]float32), us, any(e).([]float32), float32(c))
		return
	case []float64:
		subMul64(any(dst).([]float64), us, any(e).([]float64), float64(c))
		return
	}
	subMulGo(dst, u, e, c)
}

func dotGo[T Float](x, y []T) float64 {
	var s float64
	for i, v := range x {
		s += float64(v * y[i])
	}
	return s
}

func sumGo[T Float](x []T) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

func mulSubGo[T Float](dst, s, u []T, d T) {
	for i, v := range s {
		dst[i] = v * (u[i] - d)
	}
}

func subMulGo[T Float](dst, u, e []T, c T) {
	for i, v := range u {
		dst[i] = T(math.FMA(-float64(c), float64(e[i]), float64(v)))
	}
}

// The row-normalisation kernels below each fuse a chain of the kernels
// above over the same elements into one pass, with the same roundings in
// the same order (bitwise the chain): with d = Axpb(x, 1, −m) (x − m
// rounded once) and y = Axpb(d, r, 0), never stored.

// SubSqSum returns Dot(d, d), the sum of squared deviations from m.
func SubSqSum[T Float](x []T, m T) float64 {
	switch xs := any(x).(type) {
	case []float32:
		return subSq32(xs, float32(m))
	case []float64:
		return subSq64(xs, float64(m))
	}
	return subSqGo(x, m)
}

// SubDot returns Dot(u, d), d from x (at least as long as u).
func SubDot[T Float](u, x []T, m T) float64 {
	x = x[:len(u)]
	switch us := any(u).(type) {
	case []float32:
		return subDot32(us, any(x).([]float32), float32(m))
	case []float64:
		return subDot64(us, any(x).([]float64), float64(m))
	}
	return subDotGo(u, x, m)
}

// SumDotNorm returns Sum(u) and Dot(u, y), y from x (at least as long as
// u) normalised by m and r.
func SumDotNorm[T Float](u, x []T, m, r T) (su, suy float64) {
	x = x[:len(u)]
	switch us := any(u).(type) {
	case []float32:
		return sumDotNorm32(us, any(x).([]float32), float32(m), float32(r))
	case []float64:
		return sumDotNorm64(us, any(x).([]float64), float64(m), float64(r))
	}
	return sumDotNormGo(u, x, m, r)
}

// NormAffine sets dst = Axpb(y, w, b), y from x normalised by m and r; dst
// may be x.
func NormAffine[T Float](dst, x []T, m, r, w, b T) {
	dst = dst[:len(x)]
	switch xs := any(x).(type) {
	case []float32:
		normAffine32(any(dst).([]float32), xs, float32(m), float32(r), float32(w), float32(b))
		return
	case []float64:
		normAffine64(any(dst).([]float64), xs, float64(m), float64(r), float64(w), float64(b))
		return
	}
	normAffineGo(dst, x, m, r, w, b)
}

// NormGrad sets dst = SubMul(Axpb(Axpb(y, a, b), nr, 0), u, c), y from x
// normalised by m and r (u and x at least as long as dst): a row
// normalisation's gradient, −r·(y·mean(u·y) + mean u) + r·u, with its
// constants rounded by the caller. dst may be u or x.
func NormGrad[T Float](dst, u, x []T, m, r, a, b, nr, c T) {
	u, x = u[:len(dst)], x[:len(dst)]
	k := [6]T{-m, r, a, b, nr, c}
	switch ds := any(dst).(type) {
	case []float32:
		normGrad32(ds, any(u).([]float32), any(x).([]float32), any(&k).(*[6]float32))
		return
	case []float64:
		normGrad64(ds, any(u).([]float64), any(x).([]float64), any(&k).(*[6]float64))
		return
	}
	normGradGo(dst, u, x, &k)
}

// VectorLoops reports whether this build and CPU run the assembly loops
// (else the Go loops, whose sums add in another order).
func VectorLoops() bool { return vectorLoops() }

// VectorWhole reports whether the assembly loops take all n elements of a
// slice of T or none (n a multiple of the vector width, or no vector
// loops): then elementwise kernels on consecutive parts of such lengths
// round every element as one call on the whole does.
func VectorWhole[T Float](n int) bool {
	var z T
	if _, ok := any(z).(float32); ok {
		return vectorWhole(n, 8)
	}
	return vectorWhole(n, 4)
}

// dev is Axpb(x, 1, −m)'s element in Go.
func dev[T Float](v, m T) T { return T(math.FMA(1, float64(v), -float64(m))) }

// scale0 is Axpb(v, r, 0)'s element in Go.
func scale0[T Float](v, r T) T { return T(math.FMA(float64(r), float64(v), 0)) }

func subSqGo[T Float](x []T, m T) float64 {
	var s float64
	for _, v := range x {
		d := dev(v, m)
		s += float64(d * d)
	}
	return s
}

func subDotGo[T Float](u, x []T, m T) float64 {
	var s float64
	for i, v := range u {
		s += float64(v * dev(x[i], m))
	}
	return s
}

func sumDotNormGo[T Float](u, x []T, m, r T) (su, suy float64) {
	for i, v := range u {
		su += float64(v)
		suy += float64(v * scale0(dev(x[i], m), r))
	}
	return su, suy
}

func normAffineGo[T Float](dst, x []T, m, r, w, b T) {
	for i, v := range x {
		dst[i] = T(math.FMA(float64(w), float64(scale0(dev(v, m), r)), float64(b)))
	}
}

// normGradGo is NormGrad in Go, k = (−m, r, a, b, nr, c).
func normGradGo[T Float](dst, u, x []T, k *[6]T) {
	for i, v := range x {
		t := T(math.FMA(float64(k[2]), float64(scale0(dev(v, -k[0]), k[1])), float64(k[3])))
		t = scale0(t, k[4])
		dst[i] = T(math.FMA(-float64(k[5]), float64(u[i]), float64(t)))
	}
}
