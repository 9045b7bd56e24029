//go:build amd64 && !purego

package cpu

import "unsafe"

// finiteS and finiteD report whether 32·blocks float32 (16·blocks
// float64) from x are all finite: finiteRun's sums of v − v in AVX2
// registers (avgAVX2).
//
//go:noescape
func finiteS(x *float32, blocks int) bool

//go:noescape
func finiteD(x *float64, blocks int) bool

// finiteAsm runs finiteS or finiteD on the leading whole blocks of s when
// the CPU has AVX2 and returns how many elements it checked (0: all left
// to the caller) and whether they are all finite.
func finiteAsm[T Float](s []T) (int, bool) {
	if !avgAVX2 {
		return 0, true
	}
	if unsafe.Sizeof(T(0)) == 4 {
		blocks := len(s) / 32
		if blocks == 0 {
			return 0, true
		}
		return 32 * blocks, finiteS((*float32)(unsafe.Pointer(unsafe.SliceData(s))), blocks)
	}
	blocks := len(s) / 16
	if blocks == 0 {
		return 0, true
	}
	return 16 * blocks, finiteD((*float64)(unsafe.Pointer(unsafe.SliceData(s))), blocks)
}
