//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func nearestDup2S(d0, d1, src *float32, blocks int)

//go:noescape
func nearestDup2D(d0, d1, src *float64, blocks int)

// dup2 sets d0[2i] = d0[2i+1] = row[i], and the same in d1 unless d1 is
// nil, for the first i in whole blocks of 32 bytes of row (8 float32 or
// 4 float64) with AVX2 (avgAVX2); it returns how many i it did. d0 and
// d1 hold at least 2·len(row).
func dup2[T Float](d0, d1, row []T) int {
	w := int(32 / unsafe.Sizeof(T(0)))
	blocks := len(row) / w
	if !avgAVX2 || blocks == 0 {
		return 0
	}
	_ = d0[2*w*blocks-1]
	var p1 unsafe.Pointer
	if d1 != nil {
		_ = d1[2*w*blocks-1]
		p1 = unsafe.Pointer(&d1[0])
	}
	p0, src := unsafe.Pointer(&d0[0]), unsafe.Pointer(&row[0])
	if w == 8 {
		nearestDup2S((*float32)(p0), (*float32)(p1), (*float32)(src), blocks)
	} else {
		nearestDup2D((*float64)(p0), (*float64)(p1), (*float64)(src), blocks)
	}
	return w * blocks
}

//go:noescape
func nearestBlocks2S(d, a, b *float32, blocks int)

//go:noescape
func nearestBlocks2D(d, a, b *float64, blocks int)

// blocks2 adds into d[c] the 2×2 block a[2c], a[2c+1], b[2c], b[2c+1], in
// that order, for the first c in whole blocks of 32 bytes of d with AVX2
// (avgAVX2); it returns how many c it did. a and b hold at least 2·len(d).
func blocks2[T Float](d, a, b []T) int {
	w := int(32 / unsafe.Sizeof(T(0)))
	blocks := len(d) / w
	if !avgAVX2 || blocks == 0 {
		return 0
	}
	_, _ = a[2*w*blocks-1], b[2*w*blocks-1]
	pd, pa, pb := unsafe.Pointer(&d[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	if w == 8 {
		nearestBlocks2S((*float32)(pd), (*float32)(pa), (*float32)(pb), blocks)
	} else {
		nearestBlocks2D((*float64)(pd), (*float64)(pa), (*float64)(pb), blocks)
	}
	return w * blocks
}

//go:noescape
func nearestDup2NTS(d, src *float32, n int)

//go:noescape
func nearestDup2NTD(d, src *float64, n int)

func nearestFence()

// nearestStreamBytes is the size of a nearest ×2 result (in bytes) from
// which its rows are written with non-temporal stores (repeat2NT): far
// larger than a core's share of the last-level cache, so that the result
// would not stay there anyway, and such stores skip reading its lines in
// first (vmath's streamBytes for ReLU, measured the same way; tests lower it).
var nearestStreamBytes = 8 << 20

// nearestStreams reports whether interpNearest writes a result of n
// elements of T with repeat2NT (AVX2, at least nearestStreamBytes).
func nearestStreams[T Float](n int) bool {
	return avgAVX2 && n*int(unsafe.Sizeof(T(0))) >= nearestStreamBytes
}

// repeat2NT is repeat2 with non-temporal stores only (nearestDup2NTS or
// nearestDup2NTD; an ordinary store into a line being written by them
// costs more than the line's memory traffic): d0[2i] = d0[2i+1] = row[i],
// and the same in d1 unless d1 is nil. It does nothing and returns false
// unless d0 and d1 start on 32-byte boundaries. The caller calls
// nearestFence once its rows are written.
func repeat2NT[T Float](d0, d1, row []T) bool {
	aligned := func(d []T) bool { return d == nil || uintptr(unsafe.Pointer(unsafe.SliceData(d)))%32 == 0 }
	if len(row) == 0 || !aligned(d0) || !aligned(d1) {
		return false
	}
	for _, d := range [2][]T{d0, d1} {
		if d == nil {
			continue
		}
		d = d[:2*len(row)]
		if unsafe.Sizeof(T(0)) == 4 {
			nearestDup2NTS(&asF32(d)[0], &asF32(row)[0], len(row))
		} else {
			nearestDup2NTD(&asF64(d)[0], &asF64(row)[0], len(row))
		}
	}
	return true
}
