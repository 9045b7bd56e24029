//go:build amd64 && !purego

package cpu

import "unsafe"

//go:noescape
func evensS(dst, src *float32, blocks int)

//go:noescape
func evensD(dst, src *float64, blocks int)

// evens sets dst[i] = src[2i] for the first i in whole blocks of 32 bytes
// of dst whose pairs lie in src, with AVX2 (avgAVX2); it returns how many i
// it did: im2col's rows at stride 2.
func evens[T Float](dst, src []T) int {
	w := lanes[T]()
	blocks := min(len(dst), len(src)/2) / w
	if !avgAVX2 || blocks == 0 {
		return 0
	}
	_, _ = dst[w*blocks-1], src[2*w*blocks-1]
	pd, ps := unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0])
	if w == 8 {
		evensS((*float32)(pd), (*float32)(ps), blocks)
	} else {
		evensD((*float64)(pd), (*float64)(ps), blocks)
	}
	return w * blocks
}

//go:noescape
func addEvensS(dst, src *float32, blocks int)

//go:noescape
func addEvensD(dst, src *float64, blocks int)

// addEvens sets dst[2i] += src[i] for the first i in whole blocks of 32
// bytes of src whose pairs lie in dst, with AVX2 (avgAVX2), the odd
// elements of dst left as they are, bit for bit; it returns how many i it
// did: Col2im's rows at stride 2.
func addEvens[T Float](dst, src []T) int {
	w := lanes[T]()
	blocks := min(len(src), len(dst)/2) / w
	if !avgAVX2 || blocks == 0 {
		return 0
	}
	_, _ = src[w*blocks-1], dst[2*w*blocks-1]
	pd, ps := unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0])
	if w == 8 {
		addEvensS((*float32)(pd), (*float32)(ps), blocks)
	} else {
		addEvensD((*float64)(pd), (*float64)(ps), blocks)
	}
	return w * blocks
}
