//go:build !amd64 || purego

package cpu

import "unsafe"

// prefetchLines is a cache prefetch hint on amd64; nothing here.
func prefetchLines(p unsafe.Pointer, n int) {}

// maxPoolPhasesAsm is the AVX2 key conversion of maxPoolPhases on amd64;
// here there is none: no column done.
func maxPoolPhasesAsm(phase []int32, row []float32, l *maxPoolLayout) (int, bool) { return 0, false }

// maxPoolRowPassAsm is the AVX2 row pass on amd64; here there is none
// (false: use the Go loop).
func maxPoolRowPassAsm(key, pos, phase []int32, l *maxPoolLayout, base int32) bool { return false }

// maxPoolAVX2 is false: no AVX2 loops.
var maxPoolAVX2 = false

// maxPoolPlaneAsm is the AVX2 plane loop on amd64; here there is none.
func maxPoolPlaneAsm(phase, rowKey, rowPos []int32, l *maxPoolLayout, x []float32, at, h, w int) (ok, nan bool) {
	return false, false
}

// maxPoolColsAsm is the AVX2 plane column pass on amd64; here there is
// none: no output column done.
func maxPoolColsAsm(dst []int, rowKey, rowPos []int32, windows []int32, wo, wop, step int) int {
	return 0
}
