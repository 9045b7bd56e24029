//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// directAVX512 enables the AVX-512 loops of the direct convolution
// kernels (tests switch it off to cover the Go loops).
var directAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

//go:noescape
func copyRowsB(dst, src *byte, rows, n, dstStride, srcStride int)

//go:noescape
func tapRows3x3S(dst, src, taps *float32, cols *int, rows, dstStride, srcStep, mask0, mask1 int, bias float32)

//go:noescape
func tapRows3x3D(dst, src, taps *float64, cols *int, rows, dstStride, srcStep, mask0, mask1 int, bias float64)

//go:noescape
func tapRowsS(dst, src, taps *float32, offs *int, ntaps, rows, dstStride, srcStep, mask int, bias float32)

//go:noescape
func tapRowsD(dst, src, taps *float64, offs *int, ntaps, rows, dstStride, srcStep, mask int, bias float64)

//go:noescape
func tapDots9S(dots, gr, src *float32, offs *int, rows, wo, grStride, srcStep int)

//go:noescape
func tapDots9D(dots, gr, src *float64, offs *int, rows, wo, grStride, srcStep int)

// tapsFit reports whether the reads of rows rows of wo elements at the
// offsets offs from src (row step srcStep) stay inside src, and the writes
// or reads of rows rows of wo elements of dst (row step dstStride) inside
// dst: the assembly loops test no bounds.
func tapsFit[T Float](dst, src []T, offs []int, rows, wo, dstStride, srcStep int) bool {
	if rows < 1 || wo < 1 || len(offs) == 0 || (rows-1)*dstStride+wo > len(dst) {
		return false
	}
	for _, off := range offs {
		if off < 0 || (rows-1)*srcStep+off+wo > len(src) {
			return false
		}
	}
	return true
}

// tapRows is tapRowsGo, by the AVX-512 loops where the CPU has them: one
// call per column block of 16 (float32) or 8 (float64) outputs.
func tapRows[T Float](dst, src, taps []T, offs []int, rows, wo, dstStride, srcStep int, bias T) {
	if !directAVX512 || len(taps) != len(offs) || !tapsFit(dst, src, offs, rows, wo, dstStride, srcStep) {
		tapRowsGo(dst, src, taps, offs, rows, wo, dstStride, srcStep, bias)
		return
	}
	lanes := 64 / int(unsafe.Sizeof(T(0)))
	if kernel3x3(offs, srcStep) && (rows+1)*srcStep+offs[2]+wo <= len(src) {
		cols := [3]int{offs[0], offs[1], offs[2]}
		for x := 0; x < wo; x += 2 * lanes {
			m0, m1 := 1<<min(lanes, wo-x)-1, 1<<min(lanes, max(wo-x-lanes, 0))-1
			if lanes == 16 {
				tapRows3x3S((*float32)(unsafe.Pointer(&dst[x])), (*float32)(unsafe.Pointer(&src[x])), (*float32)(unsafe.Pointer(&taps[0])),
					&cols[0], rows, dstStride, srcStep, m0, m1, float32(bias))
			} else {
				tapRows3x3D((*float64)(unsafe.Pointer(&dst[x])), (*float64)(unsafe.Pointer(&src[x])), (*float64)(unsafe.Pointer(&taps[0])),
					&cols[0], rows, dstStride, srcStep, m0, m1, float64(bias))
			}
		}
		return
	}
	for x := 0; x < wo; x += lanes {
		mask := 1<<min(lanes, wo-x) - 1
		if lanes == 16 {
			tapRowsS((*float32)(unsafe.Pointer(&dst[x])), (*float32)(unsafe.Pointer(&src[x])), (*float32)(unsafe.Pointer(&taps[0])),
				&offs[0], len(taps), rows, dstStride, srcStep, mask, float32(bias))
		} else {
			tapRowsD((*float64)(unsafe.Pointer(&dst[x])), (*float64)(unsafe.Pointer(&src[x])), (*float64)(unsafe.Pointer(&taps[0])),
				&offs[0], len(taps), rows, dstStride, srcStep, mask, float64(bias))
		}
	}
}

// kernel3x3 reports whether offs are a 3×3 kernel's taps whose rows are
// srcStep apart, rows in the order of the source rows: offsets
// c0, c1, c2, then the same plus srcStep, then plus 2·srcStep, with
// 0 ≤ c0 ≤ c1 ≤ c2.
func kernel3x3(offs []int, srcStep int) bool {
	if len(offs) != 9 || offs[0] < 0 || offs[1] < offs[0] || offs[2] < offs[1] {
		return false
	}
	for ki := 1; ki < 3; ki++ {
		for kj := 0; kj < 3; kj++ {
			if offs[ki*3+kj] != offs[kj]+ki*srcStep {
				return false
			}
		}
	}
	return true
}

// tapDots is tapDotsGo, by the AVX-512 loops where the CPU has them:
// nine taps a call (a 3×3 kernel's), the last call's missing taps reading at the last
// tap's offset into sums that are dropped.
func tapDots[T Float](dots, gr, src []T, offs []int, rows, wo, grStride, srcStep int) {
	if !directAVX512 || len(dots) != len(offs) || !tapsFit(gr, src, offs, rows, wo, grStride, srcStep) {
		tapDotsGo(dots, gr, src, offs, rows, wo, grStride, srcStep)
		return
	}
	var off9 [9]int
	var dots9 [9]T
	for k := 0; k < len(offs); k += 9 {
		n := copy(off9[:], offs[k:])
		for i := n; i < 9; i++ {
			off9[i] = off9[n-1]
		}
		if unsafe.Sizeof(T(0)) == 4 {
			tapDots9S((*float32)(unsafe.Pointer(&dots9[0])), (*float32)(unsafe.Pointer(&gr[0])), (*float32)(unsafe.Pointer(&src[0])),
				&off9[0], rows, wo, grStride, srcStep)
		} else {
			tapDots9D((*float64)(unsafe.Pointer(&dots9[0])), (*float64)(unsafe.Pointer(&gr[0])), (*float64)(unsafe.Pointer(&src[0])),
				&off9[0], rows, wo, grStride, srcStep)
		}
		copy(dots[k:], dots9[:n])
	}
}

// copyRows is copyRowsGo, by the AVX-512 loop where the CPU has it.
func copyRows[T Float](dst, src []T, rows, w, dstStride, srcStride int) {
	if !directAVX512 || rows < 1 || w < 1 || (rows-1)*dstStride+w > len(dst) || (rows-1)*srcStride+w > len(src) {
		copyRowsGo(dst, src, rows, w, dstStride, srcStride)
		return
	}
	size := int(unsafe.Sizeof(T(0)))
	copyRowsB((*byte)(unsafe.Pointer(&dst[0])), (*byte)(unsafe.Pointer(&src[0])), rows, w*size, dstStride*size, srcStride*size)
}
