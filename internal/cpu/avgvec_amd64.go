//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// avgAVX2 enables the AVX2 kernels of average pooling, bilinear
// interpolation and Col2im's sums (addvec_amd64.go; tests switch it off to
// cover the Go loops). Each kernel
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
func interpPairsT2(dx, v *float32, blocks, n, stride int, wy *float32, w *[4]float32)

// use32 reports whether the AVX2 kernels run for T: float32 (its size
// tells, a constant per instantiation) with AVX2.
func use32[T Float]() bool { return unsafe.Sizeof(T(0)) == 4 && avgAVX2 }

// p32 is the address of s[i] as a *float32 (T is float32 underneath).
func p32[T Float](s []T, i int) *float32 { return (*float32)(unsafe.Pointer(&s[i])) }

// windowSums2 sets dst[m] = Σ src[2m+i], i < k, summed from 0 in order,
// for the first m whose reads stay inside src (at least 8); it returns how
// many m it did (0 but for float32 with AVX2). Like the kernels below, it
// does whole blocks of 8 and then, when some remain, the last 8 once more.
func windowSums2[T Float](dst, src []T, k int) int {
	// block b reads src[16b+i .. 16b+i+15] for i < k
	blocks := min(len(dst), (len(src)-k+1)/2) / 8
	if !use32[T]() || k < 1 || blocks <= 0 {
		return 0
	}
	avgWindowSums2(p32(dst, 0), p32(src, 0), blocks, k)
	n := min(len(dst), (len(src)-k+1)/2)
	if n > 8*blocks { // the last 8 again, overlapping: the same values
		avgWindowSums2(p32(dst, n-8), p32(src, 2*(n-8)), 1, k)
		return n
	}
	return 8 * blocks
}

// sumRows32 is sumRows for dst (at least 8 long), returning how many it
// did (0 but for float32 with AVX2).
func sumRows32[T Float](dst, src []T, n, stride int, div []T) int {
	blocks := len(dst) / 8
	if !use32[T]() || blocks == 0 {
		return 0
	}
	sp := p32(dst, 0) // not read when n is 0
	if n > 0 {
		_ = src[(n-1)*stride+len(dst)-1]
		sp = p32(src, 0)
	}
	var dp *float32
	if div != nil {
		_ = div[len(dst)-1]
		dp = p32(div, 0)
	}
	avgSumRows(p32(dst, 0), sp, blocks, n, 4*stride, dp)
	if l := len(dst); l > 8*blocks { // the last 8 again, overlapping
		if n > 0 {
			sp = p32(src, l-8)
		}
		if div != nil {
			dp = p32(div, l-8)
		}
		avgSumRows(p32(dst, l-8), sp, 1, n, 4*stride, dp)
	}
	return len(dst)
}

// windowScatter2 adds the sums of run's outputs into row[2m], row[2m+1]
// (row starting at run.First) for the run's m (at least 8);
// it returns how many m it did (0 but for float32 with AVX2).
func windowScatter2[T Float](row, acc []T, run scatterRun) int {
	a := acc[run.Lo-run.J[0]:]
	blocks := min(run.Count, len(row)/2, len(a)-run.J[0]) / 8
	if !use32[T]() || blocks <= 0 {
		return 0
	}
	// The last 8 m, if the blocks leave some, are computed first into a
	// copy (from row's values before any addition), then put back over
	// the part the blocks leave.
	n := min(run.Count, len(row)/2, len(a)-run.J[0])
	var last [16]T
	if n > 8*blocks {
		copy(last[:], row[2*(n-8):])
		avgScatter2(p32(last[:], 0), p32(a, n-8), 1, run.J[0], run.J[1])
	}
	avgScatter2(p32(row, 0), p32(a, 0), blocks, run.J[0], run.J[1])
	if n > 8*blocks {
		copy(row[16*blocks:2*n], last[16-2*(n-8*blocks):])
		return n
	}
	return 8 * blocks
}

// interp2x sets h[2m] = w0a·row[m] + w1a·row[m+1] and h[2m+1] = w0b·row[m]
// + w1b·row[m+1] for the m whose reads stay in row (at least 8); it returns how many m it did
// (0 but for float32 with AVX2).
func interp2x[T Float](h, row []T, w0a, w1a, w0b, w1b T) int {
	blocks := min(len(h)/2, len(row)-1) / 8
	if !use32[T]() || blocks <= 0 {
		return 0
	}
	w := [4]float32{float32(w0a), float32(w1a), float32(w0b), float32(w1b)}
	interpPairs2(p32(h, 0), p32(row, 0), blocks, &w)
	if n := min(len(h)/2, len(row)-1); n > 8*blocks { // the last 8 again
		interpPairs2(p32(h, 2*(n-8)), p32(row, n-8), 1, &w)
		return n
	}
	return 8 * blocks
}

// lerpRows sets d[i] = a·t[i] + b·u[i] for all of d (at least 8); it
// returns how many it did (0 but for float32 with AVX2).
func lerpRows[T Float](d, t, u []T, a, b T) int {
	blocks := min(len(d), len(t), len(u)) / 8
	if !use32[T]() || blocks <= 0 {
		return 0
	}
	interpLerp(p32(d, 0), p32(t, 0), p32(u, 0), blocks, float32(a), float32(b))
	if n := min(len(d), len(t), len(u)); n > 8*blocks { // the last 8 again
		interpLerp(p32(d, n-8), p32(t, n-8), p32(u, n-8), 1, float32(a), float32(b))
		return n
	}
	return 8 * blocks
}

// interpT2x adds into dx[m], for the m whose reads stay in v (at least 8) and each row j <
// n in turn, w1a·(wy[j]·q[2m]), w1b·(wy[j]·q[2m+1]), w0a·(wy[j]·q[2m+2]),
// w0b·(wy[j]·q[2m+3]), q = v[j·stride:]; it returns how many m it did (0
// but for float32 with AVX2).
func interpT2x[T Float](dx, v []T, n, stride int, wy []T, w1a, w1b, w0a, w0b T) int {
	blocks := min(len(dx), (len(v)-(n-1)*stride-2)/2) / 8
	if !use32[T]() || blocks <= 0 || n <= 0 {
		return 0
	}
	_ = wy[n-1]
	w := [4]float32{float32(w1a), float32(w1b), float32(w0a), float32(w0b)}
	// The last 8 m first into a copy, as in windowScatter2.
	l := min(len(dx), (len(v)-(n-1)*stride-2)/2)
	var last [8]T
	if l > 8*blocks {
		copy(last[:], dx[l-8:l])
		interpPairsT2(p32(last[:], 0), p32(v, 2*(l-8)), 1, n, 4*stride, p32(wy, 0), &w)
	}
	interpPairsT2(p32(dx, 0), p32(v, 0), blocks, n, 4*stride, p32(wy, 0), &w)
	if l > 8*blocks {
		copy(dx[8*blocks:l], last[8-(l-8*blocks):])
		return l
	}
	return 8 * blocks
}
