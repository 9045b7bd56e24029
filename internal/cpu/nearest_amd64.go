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
