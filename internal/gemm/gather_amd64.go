//go:build amd64 && !purego

package gemm

import "unsafe"

//go:noescape
func gatherRows(dst, src unsafe.Pointer, offs *int, n, ld, size, bytes int)

// gatherAVX2 is whether gatherAsm copies with gatherRows (the CPU has
// AVX2; tests switch it off).
var gatherAVX2 = hasAVX2

// gatherAsm does GatherPanelRows' copies by gatherRows when the rows are
// 64 or 128 bytes and gatherAVX2 is on, and reports whether it did. The
// caller has checked the bounds.
func gatherAsm[T Float](dst []T, ld int, src []T, offs []int, w int) bool {
	size := int(unsafe.Sizeof(src[0]))
	if bytes := w * size; gatherAVX2 && (bytes == 64 || bytes == 128) {
		gatherRows(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src)), unsafe.SliceData(offs), len(offs), ld*size, size, bytes)
		return true
	}
	return false
}

//go:noescape
func spreadRow(dst, src unsafe.Pointer, n, stride, bytes int)

// spreadAsm copies n runs of bytes (64 or 128) bytes, run q from
// src + q·bytes to dst + q·stride bytes, by spreadRow when gatherAVX2 is
// on, and reports whether it did. The caller has checked the bounds.
func spreadAsm(dst, src unsafe.Pointer, n, stride, bytes int) bool {
	if !gatherAVX2 || n < 1 {
		return false
	}
	spreadRow(dst, src, n, stride, bytes)
	return true
}
