//go:build amd64 && !purego

package vmath

import "unsafe"

// The assembly loops (relu_amd64.s) take n > 0, a multiple of 8 (float32)
// or 4 (float64): a VMAXPS against 0 (which gives +0 for ±0), with a NaN
// blended back in; a compare with 0 blending a and b
// (then multiplied into u, for PositiveMul).

//go:noescape
func reluS(dst, src *float32, n int)

//go:noescape
func reluD(dst, src *float64, n int)

//go:noescape
func positiveS(dst, src *float32, n int, a, b float32)

//go:noescape
func positiveD(dst, src *float64, n int, a, b float64)

//go:noescape
func positiveMulS(dst, src, u *float32, n int, a, b float32)

//go:noescape
func positiveMulD(dst, src, u *float64, n int, a, b float64)

//go:noescape
func reluStreamS(dst, src *float32, n int)

//go:noescape
func reluStreamD(dst, src *float64, n int)

func relu32(dst, src []float32) {
	if h, n := streamParts(dst, src, nil, 16); n > 0 {
		reluCached32(dst[:h], src[:h])
		reluStreamS(&dst[h], &src[h], n)
		dst, src = dst[h+n:], src[h+n:]
	}
	reluCached32(dst, src)
}

func reluCached32(dst, src []float32) {
	n := vecRun(len(src), 8, func(n int) { reluS(&dst[0], &src[0], n) })
	reluGo(dst[n:], src[n:])
}

func relu64(dst, src []float64) {
	if h, n := streamParts(dst, src, nil, 8); n > 0 {
		reluCached64(dst[:h], src[:h])
		reluStreamD(&dst[h], &src[h], n)
		dst, src = dst[h+n:], src[h+n:]
	}
	reluCached64(dst, src)
}

func reluCached64(dst, src []float64) {
	n := vecRun(len(src), 4, func(n int) { reluD(&dst[0], &src[0], n) })
	reluGo(dst[n:], src[n:])
}

// streamBytes is the size of a destination (in bytes) from which ReLU
// writes with non-temporal stores (reluStreamS, reluStreamD): far larger
// than a core's share of the last-level cache, so that it would not stay
// there anyway, and such stores skip reading the destination's lines in
// first (a third of a cached store's memory traffic). The ResNet stem's
// ReLU of [8, 64, 112, 112], split over two cores (12.8 MB a call in
// float32), took 1.48 ms with cached stores and 0.87 with streaming ones
// (min of 500 calls alternating on a 2-core Zen 3 VM, 32 MiB L3).
var streamBytes = 8 << 20

// streamParts splits a call of ReLU (u nil) or PositiveMul (LeakyReLU's
// gradient) that streams dst (streams): its first h elements written with ordinary stores,
// up to dst's 32-byte boundary, then n, a multiple of block, with
// non-temporal ones (the rest ordinary again). n is 0 when the call does
// not stream.
func streamParts[T Float](dst, src, u []T, block int) (h, n int) {
	if !streams(dst, src, u) {
		return 0, 0
	}
	size := int(unsafe.Sizeof(dst[0]))
	d := uintptr(unsafe.Pointer(&dst[0]))
	h = min(len(src), int((32-d%32)%32)/size)
	return h, (len(src) - h) / block * block
}

// streams reports whether a call streams dst: at least streamBytes, AVX2,
// dst overlapping neither src nor u (in place the lines are read anyway).
func streams[T Float](dst, src, u []T) bool {
	size := int(unsafe.Sizeof(T(0)))
	return len(src) > 0 && len(src)*size >= streamBytes && hasAVX2 && !overlaps(dst, src) && (u == nil || !overlaps(dst, u))
}

// overlaps reports whether dst's first len(src) elements and src share
// memory (src not empty).
func overlaps[T Float](dst, src []T) bool {
	size := uintptr(unsafe.Sizeof(src[0]))
	d, s, n := uintptr(unsafe.Pointer(&dst[0])), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src))*size
	return d < s+n && s < d+n
}

func positive32(dst, src []float32, a, b float32) {
	n := vecRun(len(src), 8, func(n int) { positiveS(&dst[0], &src[0], n, a, b) })
	positiveGo(dst[n:], src[n:], a, b)
}

func positive64(dst, src []float64, a, b float64) {
	n := vecRun(len(src), 4, func(n int) { positiveD(&dst[0], &src[0], n, a, b) })
	positiveGo(dst[n:], src[n:], a, b)
}

//go:noescape
func positiveMulStreamS(dst, src, u *float32, n int, a, b float32)

//go:noescape
func positiveMulStreamD(dst, src, u *float64, n int, a, b float64)

func positiveMul32(dst, src, u []float32, a, b float32) {
	if h, n := streamParts(dst, src, u, 8); n > 0 {
		positiveMulCached32(dst[:h], src[:h], u[:h], a, b)
		positiveMulStreamS(&dst[h], &src[h], &u[h], n, a, b)
		dst, src, u = dst[h+n:], src[h+n:], u[h+n:]
	}
	positiveMulCached32(dst, src, u, a, b)
}

func positiveMulCached32(dst, src, u []float32, a, b float32) {
	n := vecRun(len(src), 8, func(n int) { positiveMulS(&dst[0], &src[0], &u[0], n, a, b) })
	positiveMulGo(dst[n:], src[n:], u[n:], a, b)
}

func positiveMul64(dst, src, u []float64, a, b float64) {
	if h, n := streamParts(dst, src, u, 4); n > 0 {
		positiveMulCached64(dst[:h], src[:h], u[:h], a, b)
		positiveMulStreamD(&dst[h], &src[h], &u[h], n, a, b)
		dst, src, u = dst[h+n:], src[h+n:], u[h+n:]
	}
	positiveMulCached64(dst, src, u, a, b)
}

func positiveMulCached64(dst, src, u []float64, a, b float64) {
	n := vecRun(len(src), 4, func(n int) { positiveMulD(&dst[0], &src[0], &u[0], n, a, b) })
	positiveMulGo(dst[n:], src[n:], u[n:], a, b)
}
