//go:build amd64 && !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:generate go run ./asmgen

//go:noescape
func kernS512(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD512(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

// kernS512r4, kernS512r8, kernD512r4 and kernD512r8 are the AVX-512
// kernels' edge kernels: the first 4 or 8 rows of their tile, from the
// same packed A (12 elements per p), bitwise those rows of the full tile.
//
//go:noescape
func kernS512r4(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernS512r8(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD512r4(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernD512r8(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernS512h(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernS512hr4(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernS512hr8(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD512h(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernD512hr4(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernD512hr8(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernS256(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD256(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

// kernS256r2 … kernD256hr4 are the AVX2 kernels' edge kernels: the first
// 2 or 4 rows of their tile (a power-of-two number of rows of 4 or more
// leaves 2 or 4 over a multiple of 6), and those of their first vector of columns (6, 2 or 4
// rows), reading the same packed A and B, bitwise those rows and columns
// of the full tile.
//
//go:noescape
func kernS256r2(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernS256r4(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD256r2(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernD256r4(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernS256h(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernS256hr2(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernS256hr4(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD256h(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernD256hr2(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

//go:noescape
func kernD256hr4(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

// kernS512m, kernD512m, kernS256m and kernD256m run kernS512 … kernD256
// over a column of tiles tiles: tile t from the packed A's panel t
// (a + t·MR·kc elements) into C's rows from t·MR on, the same panel of
// B, each tile bitwise the single kernel's; with bias not nil, row i's
// sum then becomes 1·sum + bias[i], fused (multiFn).
//
//go:noescape
func kernS512m(kc int, a, b, c *float32, ldb, ldc int, overwrite bool, tiles int, bias *float32)

//go:noescape
func kernD512m(kc int, a, b, c *float64, ldb, ldc int, overwrite bool, tiles int, bias *float64)

//go:noescape
func kernS256m(kc int, a, b, c *float32, ldb, ldc int, overwrite bool, tiles int, bias *float32)

//go:noescape
func kernD256m(kc int, a, b, c *float64, ldb, ldc int, overwrite bool, tiles int, bias *float64)

// kernS512mo, kernD512mo, kernS512r4o … kernD512r8o are kernS512m,
// kernD512m and the AVX-512 edge kernels reading B's rows in place: row p
// the vectors at b + offs[p] and b2 + offs[p] (multiOffsFn, offsFn),
// each tile bitwise the packed panel's.
//
//go:noescape
func kernS512mo(kc int, a, b, c *float32, offs *int, ldc int, overwrite bool, tiles int, bias *float32, b2 *float32)

//go:noescape
func kernD512mo(kc int, a, b, c *float64, offs *int, ldc int, overwrite bool, tiles int, bias *float64, b2 *float64)

//go:noescape
func kernS512r4o(kc int, a, b, c *float32, offs *int, ldc int, overwrite bool, b2 *float32)

//go:noescape
func kernS512r8o(kc int, a, b, c *float32, offs *int, ldc int, overwrite bool, b2 *float32)

//go:noescape
func kernD512r4o(kc int, a, b, c *float64, offs *int, ldc int, overwrite bool, b2 *float64)

//go:noescape
func kernD512r8o(kc int, a, b, c *float64, offs *int, ldc int, overwrite bool, b2 *float64)

// kernS512ms and kernD512ms are kernS512m and kernD512m storing each
// tile's columns j < w at c + j and the others at c2 + (j − w), by
// masked loads and stores (multiSplitFn), bitwise kernS512m's and
// kernD512m's tiles.
//
//go:noescape
func kernS512ms(kc int, a, b, c *float32, ldb, ldc int, overwrite bool, tiles int, bias *float32, c2 *float32, w, masks int)

//go:noescape
func kernD512ms(kc int, a, b, c *float64, ldb, ldc int, overwrite bool, tiles int, bias *float64, c2 *float64, w, masks int)

var (
	hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

// kernels32 and kernels64 list the micro-kernels this CPU can run, best
// first.
func kernels32() []impl[float32] {
	return kernelsFor(16,
		kernels[float32]{kernS512, kernS512m, []edge[float32]{{4, kernS512r4}, {8, kernS512r8}},
			[]edge[float32]{{4, kernS512hr4}, {8, kernS512hr8}, {12, kernS512h}},
			kernS512mo, []offsEdge[float32]{{4, kernS512r4o}, {8, kernS512r8o}}, kernS512ms},
		kernels[float32]{kernS256, kernS256m, []edge[float32]{{2, kernS256r2}, {4, kernS256r4}},
			[]edge[float32]{{2, kernS256hr2}, {4, kernS256hr4}, {6, kernS256h}}, nil, nil, nil})
}

func kernels64() []impl[float64] {
	return kernelsFor(8,
		kernels[float64]{kernD512, kernD512m, []edge[float64]{{4, kernD512r4}, {8, kernD512r8}},
			[]edge[float64]{{4, kernD512hr4}, {8, kernD512hr8}, {12, kernD512h}},
			kernD512mo, []offsEdge[float64]{{4, kernD512r4o}, {8, kernD512r8o}}, kernD512ms},
		kernels[float64]{kernD256, kernD256m, []edge[float64]{{2, kernD256r2}, {4, kernD256r4}},
			[]edge[float64]{{2, kernD256hr2}, {4, kernD256hr4}, {6, kernD256h}}, nil, nil, nil})
}

// kernels is one instruction set's micro-kernel and its kernel over a
// column of tiles, with its edge kernels (by rows, ascending) and
// half-width kernels (by rows, ascending, the last of the full tile's
// rows), and those reading B's rows in place (none for AVX2: its 6-row
// tiles load B as often as a, and rows read unaligned in place ran
// slower than packed panels).
type kernels[T Float] struct {
	kern          kernelFn[T]
	multi         multiFn[T]
	edges, halves []edge[T]
	multiOffs     multiOffsFn[T]
	edgesOffs     []offsEdge[T]
	multiSplit    multiSplitFn[T]
}

// kernelsFor lists, for lanes values of T per AVX-512 register, the
// AVX-512 kernels k512 (12 rows by 2 registers) and the AVX2 kernels
// k256 (6 rows by 2 half-width registers) this CPU can run, then the Go
// one.
func kernelsFor[T Float](lanes int, k512, k256 kernels[T]) []impl[T] {
	var ks []impl[T]
	if hasAVX512 {
		ks = append(ks, impl[T]{name: "avx512", mr: 12, nr: 2 * lanes, kern: k512.kern, multi: k512.multi, edges: k512.edges, halves: k512.halves,
			multiOffs: k512.multiOffs, edgesOffs: k512.edgesOffs, multiSplit: k512.multiSplit})
	}
	if hasAVX2 {
		ks = append(ks, impl[T]{name: "avx2", mr: 6, nr: lanes, kern: k256.kern, multi: k256.multi, edges: k256.edges, halves: k256.halves})
	}
	return append(ks, goImpl[T]())
}

// peakS512 and peakS256 run n iterations of 24 (AVX-512) or 12 (AVX2)
// independent float32 FMAs on registers: BenchmarkPeak's FMA ceiling.
//
//go:noescape
func peakS512(n int)

//go:noescape
func peakS256(n int)

// interleaveS8 and interleaveD4 transpose 8×8 (float32) or 4×4 (float64)
// blocks of rows into panel columns with AVX (see interleave): for r below
// 8 (or 4) and p < kb, a multiple of 8 (or 4), dst[p·st+r] =
// alpha·src[r·ld+p].
//
//go:noescape
func interleaveS8(dst *float32, st int, src *float32, ld, kb int, alpha float32)

//go:noescape
func interleaveD4(dst *float64, st int, src *float64, ld, kb int, alpha float64)

// interleavePtrsS8 and interleavePtrsD4 are interleaveS8 and
// interleaveD4 with each of the 8 (or 4) rows at its own pointer: for
// r below 8 (or 4) and p < kb, a multiple of 8 (or 4), dst[p·st+r] =
// alpha·rows[r][p].
//
//go:noescape
func interleavePtrsS8(dst *float32, st int, rows *unsafe.Pointer, kb int, alpha float32)

//go:noescape
func interleavePtrsD4(dst *float64, st int, rows *unsafe.Pointer, kb int, alpha float64)

// interleaveS6 transposes 6 rows into a panel of 6 (the AVX2 kernels'
// packed A) with AVX: for r < 6 and p < kb, a multiple of 8,
// dst[p·6+r] = alpha·src[r·ld+p], writing dst[:6·kb] alone.
//
//go:noescape
func interleaveS6(dst *float32, src *float32, ld, kb int, alpha float32)

// interleave6 runs interleaveS6 on the first kb/8·8 columns of 6 rows
// from src[0] into dst (a panel of 6 rows: st = 6) and returns how many
// columns it did: 0 for float64 or without AVX2. The caller has checked
// that dst and src hold every element read and written.
func interleave6[T Float](dst []T, src []T, ld, kb int, alpha T) int {
	kv := kb / 8 * 8
	d, ok := any(dst).([]float32)
	if !hasAVX2 || !ok || kv == 0 {
		return 0
	}
	interleaveS6(&d[0], &any(src).([]float32)[0], ld, kv, any(alpha).(float32))
	return kv
}

// interleaveRows is the number of rows interleaveBlock takes for T, 0 when
// the CPU has no AVX2 (the portable loops do it all).
func interleaveRows[T Float]() int {
	if !hasAVX2 {
		return 0
	}
	var z T
	if any(z) == any(float32(0)) {
		return 8
	}
	return 4
}

// interleaveBlock runs interleaveS8 or interleaveD4 on interleaveRows
// rows; the caller has checked that dst and src hold every element read
// and written.
func interleaveBlock[T Float](dst []T, st int, src []T, ld, kb int, alpha T) {
	switch d := any(dst).(type) {
	case []float32:
		interleaveS8(&d[0], st, &any(src).([]float32)[0], ld, kb, any(alpha).(float32))
	case []float64:
		interleaveD4(&d[0], st, &any(src).([]float64)[0], ld, kb, any(alpha).(float64))
	}
}

// interleavePtrsBlock runs interleavePtrsS8 or interleavePtrsD4 on
// interleaveRows rows, rows[r] from its first element on; the caller has
// checked that dst and every row hold every element read and written.
func interleavePtrsBlock[T Float](dst []T, st int, rows [][]T, kb int) {
	var ptrs [8]unsafe.Pointer
	for r := range rows[:interleaveRows[T]()] {
		ptrs[r] = unsafe.Pointer(unsafe.SliceData(rows[r]))
	}
	switch d := any(dst).(type) {
	case []float32:
		interleavePtrsS8(&d[0], st, &ptrs[0], kb, 1)
	case []float64:
		interleavePtrsD4(&d[0], st, &ptrs[0], kb, 1)
	}
}
