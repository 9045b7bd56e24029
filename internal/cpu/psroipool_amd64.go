//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// psAVX2 enables PSRoIPool's AVX2 bin loops (psroipool_amd64.s; tests
// switch it off to cover the Go loops).
var psAVX2 = cpu.X86.HasAVX2

//go:noescape
func binSumS(x *float32, stride, rows, cols int) float32

//go:noescape
func binSumD(x *float64, stride, rows, cols int) float64

//go:noescape
func binAddS(x *float32, stride, rows, cols int, d float32)

//go:noescape
func binAddD(x *float64, stride, rows, cols int, d float64)

// binFits reports whether the AVX2 loops may run on a bin of rows ≥ 1
// rows of cols ≥ 1 elements of x, w apart: with psAVX2, when every row's
// blocks of 32 bytes (a last partial one whole) lie in x.
func binFits[T Float](x []T, w, rows, cols int) bool {
	v := 32 / int(unsafe.Sizeof(T(0)))
	return psAVX2 && rows > 0 && cols > 0 && (rows-1)*w+(cols+v-1)/v*v <= len(x)
}

// binSumFit is binSumLanes by the AVX2 loop, for a bin that fits x
// (binFits).
func binSumFit[T Float](x []T, w, rows, cols int) T {
	if unsafe.Sizeof(T(0)) == 4 {
		return T(binSumS((*float32)(unsafe.Pointer(unsafe.SliceData(x))), w, rows, cols))
	}
	return T(binSumD((*float64)(unsafe.Pointer(unsafe.SliceData(x))), w, rows, cols))
}

// binAddAsm is binAdd by the AVX2 loop when the bin fits x (binFits: the
// loop rewrites whole blocks, a partial one's other elements unchanged,
// so x must end where the caller's own elements do), and whether it ran.
func binAddAsm[T Float](x []T, w, rows, cols int, d T) bool {
	if !binFits(x, w, rows, cols) {
		return false
	}
	if unsafe.Sizeof(T(0)) == 4 {
		binAddS((*float32)(unsafe.Pointer(&x[0])), w, rows, cols, float32(d))
	} else {
		binAddD((*float64)(unsafe.Pointer(&x[0])), w, rows, cols, float64(d))
	}
	return true
}
