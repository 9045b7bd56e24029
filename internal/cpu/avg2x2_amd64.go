//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func avgPairs2S(dst, a, b, div *float32, blocks int)

//go:noescape
func avgPairs2D(dst, a, b, div *float64, blocks int)

//go:noescape
func avgSpread2S(row, v *float32, blocks int)

//go:noescape
func avgSpread2D(row, v *float64, blocks int)

// lanes is the number of T in 32 bytes.
func lanes[T Float]() int { return int(32 / unsafe.Sizeof(T(0))) }

// pairs2 sets dst[i] = (0 + (0 + a[2i] + a[2i+1]) + (0 + b[2i] +
// b[2i+1])) / div[i] for the first i in whole blocks of 32 bytes of dst
// with AVX2 (avgAVX2); it returns how many i it did. a and b hold at
// least 2·len(dst), div len(dst).
func pairs2[T Float](dst, a, b, div []T) int {
	w := lanes[T]()
	blocks := len(dst) / w
	if !avgAVX2 || blocks == 0 {
		return 0
	}
	_, _, _ = a[2*w*blocks-1], b[2*w*blocks-1], div[w*blocks-1]
	pd, pa, pb, pv := unsafe.Pointer(&dst[0]), unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&div[0])
	if w == 8 {
		avgPairs2S((*float32)(pd), (*float32)(pa), (*float32)(pb), (*float32)(pv), blocks)
	} else {
		avgPairs2D((*float64)(pd), (*float64)(pa), (*float64)(pb), (*float64)(pv), blocks)
	}
	return w * blocks
}

// spread2 adds 0 + v[i] into row[2i] and row[2i+1] for the first i in
// whole blocks of 32 bytes of v with AVX2 (avgAVX2); it returns how many
// i it did. row holds at least 2·len(v).
func spread2[T Float](row, v []T) int {
	w := lanes[T]()
	blocks := len(v) / w
	if !avgAVX2 || blocks == 0 {
		return 0
	}
	_ = row[2*w*blocks-1]
	pr, pv := unsafe.Pointer(&row[0]), unsafe.Pointer(&v[0])
	if w == 8 {
		avgSpread2S((*float32)(pr), (*float32)(pv), blocks)
	} else {
		avgSpread2D((*float64)(pr), (*float64)(pv), blocks)
	}
	return w * blocks
}
