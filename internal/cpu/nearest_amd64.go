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
