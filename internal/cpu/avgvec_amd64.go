//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// avgAVX2 enables the AVX2 kernels of average pooling and bilinear
// interpolation (tests switch it off to cover the Go loops). Each kernel
// computes whole blocks of 8 outputs with separate multiplies and adds in
// the Go loop's order, the same result bitwise; the callers finish the
// rest in Go.
var avgAVX2 = cpu.X86.HasAVX2

//go:noescape
func avgWindowSums2(dst, src *float32, blocks, k int)

//go:noescape
func avgSumRows(dst, src *float32, blocks, n, stride int, div *float32)

//go:noescape
func avgScatter2(row, acc *float32, blocks, j0, j1 int)

//go:noescape
func interpPairs2(h, row *float32, blocks int, w *[4]float32)

//go:noescape
func interpLerp(d, t, u *float32, blocks int, a, b float32)

//go:noescape
func interpPairsT2(dx, v *float32, blocks int, w *[5]float32)

// use32 reports whether the AVX2 kernels run for T: float32 (its size
// tells, a constant per instantiation) with AVX2.
func use32[T Float]() bool { return unsafe.Sizeof(T(0)) == 4 && avgAVX2 }

// p32 is the address of s[i] as a *float32 (T is float32 underneath).
func p32[T Float](s []T, i int) *float32 { return (*float32)(unsafe.Pointer(&s[i])) }

// windowSums2 sets dst[m] = Σ src[2m+i], i < k, summed from 0 in order,
// for the first blocks of 8 m whose reads stay inside src; it returns how
// many m it did (0 but for float32 with AVX2).
func windowSums2[T Float](dst, src []T, k int) int {
	// block b reads src[16b+i .. 16b+i+15] for i < k
	blocks := min(len(dst), (len(src)-k+1)/2) / 8
	if !use32[T]() || k < 1 || blocks <= 0 {
		return 0
	}
	avgWindowSums2(p32(dst, 0), p32(src, 0), blocks, k)
	return 8 * blocks
}

// sumRows32 is sumRows for the first blocks of 8 of dst, returning how
// many it did (0 but for float32 with AVX2).
func sumRows32[T Float](dst, src []T, n, stride int, div []T) int {
	blocks := len(dst) / 8
	if !use32[T]() || blocks == 0 {
		return 0
	}
	sp := p32(dst, 0) // not read when n is 0
	if n > 0 {
		_ = src[(n-1)*stride+8*blocks-1]
		sp = p32(src, 0)
	}
	var dp *float32
	if div != nil {
		_ = div[8*blocks-1]
		dp = p32(div, 0)
	}
	avgSumRows(p32(dst, 0), sp, blocks, n, 4*stride, dp)
	return 8 * blocks
}

// windowScatter2 adds the sums of run's outputs into row[2m], row[2m+1]
// (row starting at run.First) for the first blocks of 8 m of the run;
// it returns how many m it did (0 but for float32 with AVX2).
func windowScatter2[T Float](row, acc []T, run scatterRun) int {
	a := acc[run.Lo-run.J[0]:]
	blocks := min(run.Count, len(row)/2, len(a)-run.J[0]) / 8
	if !use32[T]() || blocks <= 0 {
		return 0
	}
	avgScatter2(p32(row, 0), p32(a, 0), blocks, run.J[0], run.J[1])
	return 8 * blocks
}

// interp2x sets h[2m] = w0a·row[m] + w1a·row[m+1] and h[2m+1] = w0b·row[m]
// + w1b·row[m+1] for the first blocks of 8 m; it returns how many m it did
// (0 but for float32 with AVX2).
func interp2x[T Float](h, row []T, w0a, w1a, w0b, w1b T) int {
	blocks := min(len(h)/2, len(row)-1) / 8
	if !use32[T]() || blocks <= 0 {
		return 0
	}
	w := [4]float32{float32(w0a), float32(w1a), float32(w0b), float32(w1b)}
	interpPairs2(p32(h, 0), p32(row, 0), blocks, &w)
	return 8 * blocks
}

// lerpRows sets d[i] = a·t[i] + b·u[i] for the first blocks of 8 of d; it
// returns how many it did (0 but for float32 with AVX2).
func lerpRows[T Float](d, t, u []T, a, b T) int {
	blocks := min(len(d), len(t), len(u)) / 8
	if !use32[T]() || blocks <= 0 {
		return 0
	}
	interpLerp(p32(d, 0), p32(t, 0), p32(u, 0), blocks, float32(a), float32(b))
	return 8 * blocks
}

// interpT2x adds into dx[m], for the first blocks of 8 m, w1a·(wy·v[2m]),
// w1b·(wy·v[2m+1]), w0a·(wy·v[2m+2]), w0b·(wy·v[2m+3]) in that order; it
// returns how many m it did (0 but for float32 with AVX2).
func interpT2x[T Float](dx, v []T, wy, w1a, w1b, w0a, w0b T) int {
	blocks := min(len(dx), (len(v)-2)/2) / 8
	if !use32[T]() || blocks <= 0 {
		return 0
	}
	w := [5]float32{float32(wy), float32(w1a), float32(w1b), float32(w0a), float32(w0b)}
	interpPairsT2(p32(dx, 0), p32(v, 0), blocks, &w)
	return 8 * blocks
}
