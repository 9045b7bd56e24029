//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// directAVX512 enables the AVX-512 loops of the direct convolution
// kernels (tests switch it off to cover the Go loops). They add Y16 and
// up, registers only EVEX encodes at 256 bits: AVX512VL.
var directAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL

//go:noescape
func copyRowsB(dst, src *byte, rows, n, dstStride, srcStride int)

//go:noescape
func tapRows3x3S(dst, src, taps *float32, cols, masks *int, rows, dstStride, srcStep, rowLo, rowHi, srcOff int, bias float32)

//go:noescape
func tapRows3x3D(dst, src, taps *float64, cols, masks *int, rows, dstStride, srcStep, rowLo, rowHi, srcOff int, bias float64)

//go:noescape
func tapRowsS(dst, src, taps *float32, offs *int, ntaps, rows, dstStride, srcStep, mask int, bias float32)

//go:noescape
func tapRowsD(dst, src, taps *float64, offs *int, ntaps, rows, dstStride, srcStep, mask int, bias float64)

//go:noescape
func tapDots3x3S(dots, gr, src *float32, offs, masks *int, rows, grStride, srcStep, rowLo, rowHi int)

//go:noescape
func tapDots3x3D(dots, gr, src *float64, offs, masks *int, rows, grStride, srcStep, rowLo, rowHi int)

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
			m0, m1 := laneMask(x, lanes, wo), laneMask(x+lanes, lanes, wo)
			masks := [8]int{m0, m1, m0, m1, m0, m1, m0, m1}
			tapRows3x3(dst[x:], &src[x], taps, &cols, &masks, rows, dstStride, srcStep, 0, rows+2, 0, bias)
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

// tapRows3x3 calls tapRows3x3S or tapRows3x3D (T's), dst from dst[0].
func tapRows3x3[T Float](dst []T, src *T, taps []T, cols *[3]int, masks *[8]int, rows, dstStride, srcStep, rowLo, rowHi, srcOff int, bias T) {
	if unsafe.Sizeof(T(0)) == 4 {
		tapRows3x3S((*float32)(unsafe.Pointer(&dst[0])), (*float32)(unsafe.Pointer(src)), (*float32)(unsafe.Pointer(&taps[0])),
			&cols[0], &masks[0], rows, dstStride, srcStep, rowLo, rowHi, srcOff, float32(bias))
		return
	}
	tapRows3x3D((*float64)(unsafe.Pointer(&dst[0])), (*float64)(unsafe.Pointer(src)), (*float64)(unsafe.Pointer(&taps[0])),
		&cols[0], &masks[0], rows, dstStride, srcStep, rowLo, rowHi, srcOff, float64(bias))
}

// laneMask is the mask of the lanes x0 + l < n of a block of lanes lanes
// from column x0 (0 when none).
func laneMask(x0, lanes, n int) int {
	return 1<<min(lanes, max(n-x0, 0)) - 1
}

// spanMask is the mask of the lanes l < lanes whose column x0 + l lies in
// [lo, hi).
func spanMask(x0, lanes, lo, hi int) int {
	a, b := max(lo-x0, 0), min(hi-x0, lanes)
	if a >= b {
		return 0
	}
	return (1<<b - 1) &^ (1<<a - 1)
}

// tapRowsImage3x3 sets dst [rows, wo] = bias + the correlation of the plane
// src [h, w], read as if padded by padTop rows above and padLeft columns
// on the left with zeros, with the 3×3 kernel taps (columns dw apart, rows
// one apart, stride 1): output (r, x) reads rows r + ki − padTop, columns
// x + kj·dw − padLeft. Every output gets tapRows' sums in tapRows' order
// (the zeros included), without a padded copy; tapRowsImageGo without
// the AVX-512 loops or when the sizes do not fit them.
func tapRowsImage3x3[T Float](dst, src, taps []T, rows, wo, h, w, padTop, padLeft, dw int, bias T) {
	if !directAVX512 || len(taps) != 9 || rows < 1 || wo < 1 || h < 1 || w < 1 || rows*wo > len(dst) || h*w > len(src) {
		tapRowsImageGo(dst, src, taps, rows, wo, h, w, padTop, padLeft, dw, bias)
		return
	}
	lanes := 64 / int(unsafe.Sizeof(T(0)))
	cols := [3]int{-padLeft, dw - padLeft, 2*dw - padLeft}
	for x := 0; x < wo; x += 2 * lanes {
		var masks [8]int
		for kj, c := range cols {
			// Output column x + l reads column x + l + c: inside [0, w) and
			// an output column (< wo).
			masks[2*kj] = spanMask(x, lanes, max(-c, 0), min(w-c, wo))
			masks[2*kj+1] = spanMask(x+lanes, lanes, max(-c, 0), min(w-c, wo))
		}
		masks[6], masks[7] = laneMask(x, lanes, wo), laneMask(x+lanes, lanes, wo)
		tapRows3x3(dst[x:], &src[0], taps, &cols, &masks, rows, wo, w, padTop, padTop+h, x-padTop*w, bias)
	}
}

// tapDotsImage3x3 sets dots[ki·3 + kj] = Σ_r Σ_x gr[r·wo + x]·in(r + ki,
// x + kj·dw − padLeft) for the gradient gr [rows, wo], in reading the
// plane src [h, w] as if padded by padTop rows and padLeft columns with
// zeros (the weight gradient's taps of a 3×3 kernel at stride 1, without
// a padded copy): each lane sums its rows in order, column blocks of 32
// one after another. tapDotsImageGo without the AVX-512 loops or when
// the sizes do not fit them.
func tapDotsImage3x3[T Float](dots, gr, src []T, rows, wo, h, w, padTop, padLeft, dw int) {
	if !directAVX512 || len(dots) != 9 || rows < 1 || wo < 1 || h < 1 || w < 1 || rows*wo > len(gr) || h*w > len(src) {
		tapDotsImageGo(dots, gr, src, rows, wo, h, w, padTop, padLeft, dw)
		return
	}
	lanes := 64 / int(unsafe.Sizeof(T(0)))
	var part [9]T
	for x := 0; x < wo; x += 2 * lanes {
		var masks [8]int
		var offs [9]int
		for kj := range 3 {
			c := kj*dw - padLeft
			masks[2*kj] = spanMask(x, lanes, max(-c, 0), min(w-c, wo))
			masks[2*kj+1] = spanMask(x+lanes, lanes, max(-c, 0), min(w-c, wo))
			for ki := range 3 {
				offs[ki*3+kj] = (ki-padTop)*w + c + x
			}
		}
		masks[6], masks[7] = laneMask(x, lanes, wo), laneMask(x+lanes, lanes, wo)
		if lanes == 16 {
			tapDots3x3S((*float32)(unsafe.Pointer(&part[0])), (*float32)(unsafe.Pointer(&gr[x])), (*float32)(unsafe.Pointer(&src[0])),
				&offs[0], &masks[0], rows, wo, w, padTop, padTop+h)
		} else {
			tapDots3x3D((*float64)(unsafe.Pointer(&part[0])), (*float64)(unsafe.Pointer(&gr[x])), (*float64)(unsafe.Pointer(&src[0])),
				&offs[0], &masks[0], rows, wo, w, padTop, padTop+h)
		}
		for t, v := range part {
			if x == 0 {
				dots[t] = v
			} else {
				dots[t] += v
			}
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
