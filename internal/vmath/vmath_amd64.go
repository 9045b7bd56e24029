//go:build amd64 && !purego

package vmath

import (
	"math"

	"golang.org/x/sys/cpu"
)

var (
	hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	// hasAVX512 picks the AVX-512 exp (tests switch it off to cover the
	// AVX2 one).
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F
)

// The assembly loops (exp_amd64.s) take n > 0, a multiple of 8 (float32)
// or 4 (float64).

//go:noescape
func expSumS(dst, src *float32, n int, shift float32) float64

//go:noescape
func expSumD(dst, src *float64, n int, shift float64) float64

//go:noescape
func expSumS512(dst, src *float32, n int, shift float32, lanes *[16]float64)

//go:noescape
func expSumD512(dst, src *float64, n int, shift float64, lanes *[16]float64)

//go:noescape
func maxS(x *float32, n int, out *[16]float32)

//go:noescape
func maxD(x *float64, n int, out *[8]float64)

//go:noescape
func axpbS(dst, src *float32, n int, a, b float32)

//go:noescape
func axpbD(dst, src *float64, n int, a, b float64)

func max32(x []float32) float32 {
	n := len(x) &^ 7
	if !hasAVX2 || n == 0 {
		return maxGo(x)
	}
	var lanes [16]float32
	maxS(&x[0], n, &lanes)
	m := maxGo(lanes[:8])
	for _, f := range lanes[8:] {
		if f != 0 {
			return float32(math.NaN())
		}
	}
	if t := maxGo(x[n:]); t != t || t > m {
		return t
	}
	return m
}

func max64(x []float64) float64 {
	n := len(x) &^ 3
	if !hasAVX2 || n == 0 {
		return maxGo(x)
	}
	var lanes [8]float64
	maxD(&x[0], n, &lanes)
	m := maxGo(lanes[:4])
	for _, f := range lanes[4:] {
		if math.Float64bits(f) != 0 {
			return math.NaN()
		}
	}
	if t := maxGo(x[n:]); t != t || t > m {
		return t
	}
	return m
}

// expChunk32 is the most elements one expSumS512 call takes: it adds
// them in float32 lanes (32 of them, each at most 32 values) before
// widening into the float64 lanes, which bounds the float32 rounding of
// the sum whatever the length.
const expChunk32 = 1024

func expSum32(dst, src []float32, shift float32) float64 {
	if hasAVX512 {
		var lanes [16]float64
		var pad [16]float32
		n := len(src) &^ 15
		for i := 0; i < n; i += expChunk32 {
			expSumS512(&dst[i], &src[i], min(expChunk32, n-i), shift, &lanes)
		}
		expTail(dst[n:], src[n:], pad[:], func() { expSumS512(&pad[0], &pad[0], 16, shift, &lanes) })
		return sumLanes(lanes[:])
	}
	if !hasAVX2 {
		return expSumGo(dst, src, shift)
	}
	var s float64
	var pad [8]float32
	n := vecRun(len(src), 8, func(n int) { s = expSumS(&dst[0], &src[0], n, shift) })
	expTail(dst[n:], src[n:], pad[:], func() { s += expSumS(&pad[0], &pad[0], 8, shift) })
	return s
}

func expSum64(dst, src []float64, shift float64) float64 {
	if hasAVX512 {
		var lanes [16]float64
		var pad [8]float64
		n := len(src) &^ 7
		if n > 0 {
			expSumD512(&dst[0], &src[0], n, shift, &lanes)
		}
		expTail(dst[n:], src[n:], pad[:], func() { expSumD512(&pad[0], &pad[0], 8, shift, &lanes) })
		return sumLanes(lanes[:8])
	}
	if !hasAVX2 {
		return expSumGo(dst, src, shift)
	}
	var s float64
	var pad [4]float64
	n := vecRun(len(src), 4, func(n int) { s = expSumD(&dst[0], &src[0], n, shift) })
	expTail(dst[n:], src[n:], pad[:], func() { s += expSumD(&pad[0], &pad[0], 4, shift) })
	return s
}

// expTail runs the assembly exp (run, in place on pad) on the tail src
// that the vector loop left, padded with −Inf (whose exp adds 0) to one
// vector, and copies the tail's results to dst. No tail, no call.
func expTail[T Float](dst, src, pad []T, run func()) {
	if len(src) == 0 {
		return
	}
	for i := range pad {
		pad[i] = T(math.Inf(-1))
	}
	copy(pad, src)
	run()
	copy(dst, pad[:len(src)])
}

func axpb32(dst, src []float32, a, b float32) {
	n := vecRun(len(src), 8, func(n int) { axpbS(&dst[0], &src[0], n, a, b) })
	axpbGo(dst[n:], src[n:], a, b)
}

func axpb64(dst, src []float64, a, b float64) {
	n := vecRun(len(src), 4, func(n int) { axpbD(&dst[0], &src[0], n, a, b) })
	axpbGo(dst[n:], src[n:], a, b)
}

// axpbFused32 is Axpb's vector loop on all of src, any length: the last
// len mod 8 elements on a padded copy.
func axpbFused32(dst, src []float32, a, b float32) {
	n := len(src) &^ 7
	if n > 0 {
		axpbS(&dst[0], &src[0], n, a, b)
	}
	if n < len(src) {
		var pad [8]float32
		copy(pad[:], src[n:])
		axpbS(&pad[0], &pad[0], 8, a, b)
		copy(dst[n:], pad[:])
	}
}

// axpbFused64 is axpbFused32 for float64 (vectors of 4).
func axpbFused64(dst, src []float64, a, b float64) {
	n := len(src) &^ 3
	if n > 0 {
		axpbD(&dst[0], &src[0], n, a, b)
	}
	if n < len(src) {
		var pad [4]float64
		copy(pad[:], src[n:])
		axpbD(&pad[0], &pad[0], 4, a, b)
		copy(dst[n:], pad[:])
	}
}

//go:noescape
func dotS(x, y *float32, n int) float64

//go:noescape
func dotD(x, y *float64, n int) float64

//go:noescape
func sumS(x *float32, n int) float64

//go:noescape
func sumD(x *float64, n int) float64

//go:noescape
func mulSubS(dst, s, u *float32, n int, d float32)

//go:noescape
func mulSubD(dst, s, u *float64, n int, d float64)

//go:noescape
func subMulS(dst, u, e *float32, n int, c float32)

//go:noescape
func subMulD(dst, u, e *float64, n int, c float64)

// vecLen is the part of a length l that the assembly takes (a multiple of
// w), 0 without AVX2.
func vecLen(l, w int) int {
	if !hasAVX2 {
		return 0
	}
	return l &^ (w - 1)
}

// vecRun calls asm with vecLen(l, w) unless that is 0, and returns it: the
// typed wrappers below run their assembly loop on that prefix and the Go
// loop on the rest.
func vecRun(l, w int, asm func(n int)) int {
	n := vecLen(l, w)
	if n > 0 {
		asm(n)
	}
	return n
}

// dot, sum, lanewise and axpb run the assembly loop asm (taking a
// multiple of w elements) on the longest prefix it takes, and the Go loop
// on the tail.
func dot[T Float](x, y []T, w int, asm func(x, y *T, n int) float64) float64 {
	var s float64
	if n := vecLen(len(x), w); n > 0 {
		s = asm(&x[0], &y[0], n)
		x, y = x[n:], y[n:]
	}
	return s + dotGo(x, y)
}

func sum[T Float](x []T, w int, asm func(x *T, n int) float64) float64 {
	var s float64
	if n := vecLen(len(x), w); n > 0 {
		s = asm(&x[0], n)
		x = x[n:]
	}
	return s + sumGo(x)
}

func lanewise[T Float](dst, a, b []T, k T, w int, asm func(dst, a, b *T, n int, k T), tail func(dst, a, b []T, k T)) {
	if n := vecLen(len(a), w); n > 0 {
		asm(&dst[0], &a[0], &b[0], n, k)
		dst, a, b = dst[n:], a[n:], b[n:]
	}
	tail(dst, a, b, k)
}

func dot32(x, y []float32) float64 { return dot(x, y, 8, dotS) }
func dot64(x, y []float64) float64 { return dot(x, y, 4, dotD) }
func sum32(x []float32) float64    { return sum(x, 8, sumS) }
func sum64(x []float64) float64    { return sum(x, 4, sumD) }

func mulSub32(dst, s, u []float32, d float32) { lanewise(dst, s, u, d, 8, mulSubS, mulSubGo[float32]) }
func mulSub64(dst, s, u []float64, d float64) { lanewise(dst, s, u, d, 4, mulSubD, mulSubGo[float64]) }
func subMul32(dst, u, e []float32, c float32) { lanewise(dst, u, e, c, 8, subMulS, subMulGo[float32]) }
func subMul64(dst, u, e []float64, c float64) { lanewise(dst, u, e, c, 4, subMulD, subMulGo[float64]) }

// sumLanes adds the lanes in order.
func sumLanes(l []float64) float64 {
	var s float64
	for _, v := range l {
		s += v
	}
	return s
}

//go:noescape
func subSqS(x *float32, n int, negm float32) float64

//go:noescape
func subSqD(x *float64, n int, negm float64) float64

//go:noescape
func subDotS(u, x *float32, n int, negm float32) float64

//go:noescape
func subDotD(u, x *float64, n int, negm float64) float64

//go:noescape
func sumDotNormS(u, x *float32, n int, negm, r float32, out *[2]float64)

//go:noescape
func sumDotNormD(u, x *float64, n int, negm, r float64, out *[2]float64)

//go:noescape
func normAffineS(dst, x *float32, n int, negm, r, w, b float32)

//go:noescape
func normAffineD(dst, x *float64, n int, negm, r, w, b float64)

//go:noescape
func normGradS(dst, u, x *float32, n int, k *[6]float32)

//go:noescape
func normGradD(dst, u, x *float64, n int, k *[6]float64)

func vectorWhole(n, w int) bool { return !hasAVX2 || n%w == 0 }

func vectorLoops() bool { return hasAVX2 }

func subSq32(x []float32, m float32) float64 {
	var s float64
	n := vecRun(len(x), 8, func(n int) { s = subSqS(&x[0], n, -m) })
	return s + subSqGo(x[n:], m)
}

func subSq64(x []float64, m float64) float64 {
	var s float64
	n := vecRun(len(x), 4, func(n int) { s = subSqD(&x[0], n, -m) })
	return s + subSqGo(x[n:], m)
}

func subDot32(u, x []float32, m float32) float64 {
	var s float64
	n := vecRun(len(u), 8, func(n int) { s = subDotS(&u[0], &x[0], n, -m) })
	return s + subDotGo(u[n:], x[n:], m)
}

func subDot64(u, x []float64, m float64) float64 {
	var s float64
	n := vecRun(len(u), 4, func(n int) { s = subDotD(&u[0], &x[0], n, -m) })
	return s + subDotGo(u[n:], x[n:], m)
}

func sumDotNorm32(u, x []float32, m, r float32) (su, suy float64) {
	var s [2]float64
	n := vecRun(len(u), 8, func(n int) { sumDotNormS(&u[0], &x[0], n, -m, r, &s) })
	tu, tuy := sumDotNormGo(u[n:], x[n:], m, r)
	return s[0] + tu, s[1] + tuy
}

func sumDotNorm64(u, x []float64, m, r float64) (su, suy float64) {
	var s [2]float64
	n := vecRun(len(u), 4, func(n int) { sumDotNormD(&u[0], &x[0], n, -m, r, &s) })
	tu, tuy := sumDotNormGo(u[n:], x[n:], m, r)
	return s[0] + tu, s[1] + tuy
}

func normAffine32(dst, x []float32, m, r, w, b float32) {
	n := vecRun(len(x), 8, func(n int) { normAffineS(&dst[0], &x[0], n, -m, r, w, b) })
	normAffineGo(dst[n:], x[n:], m, r, w, b)
}

func normAffine64(dst, x []float64, m, r, w, b float64) {
	n := vecRun(len(x), 4, func(n int) { normAffineD(&dst[0], &x[0], n, -m, r, w, b) })
	normAffineGo(dst[n:], x[n:], m, r, w, b)
}

func normGrad32(dst, u, x []float32, k *[6]float32) {
	n := vecRun(len(dst), 8, func(n int) { normGradS(&dst[0], &u[0], &x[0], n, k) })
	normGradGo(dst[n:], u[n:], x[n:], k)
}

func normGrad64(dst, u, x []float64, k *[6]float64) {
	n := vecRun(len(dst), 4, func(n int) { normGradD(&dst[0], &u[0], &x[0], n, k) })
	normGradGo(dst[n:], u[n:], x[n:], k)
}
