//go:build !amd64 || purego

package cpu

// The direct convolution kernels' loops have no assembly here: the Go
// loops compute everything.

// directAVX512 is false: no AVX-512 loops.
var directAVX512 = false

func tapRows[T Float](dst, src, taps []T, offs []int, rows, wo, dstStride, srcStep int, bias T) {
	tapRowsGo(dst, src, taps, offs, rows, wo, dstStride, srcStep, bias)
}

func tapDots[T Float](dots, gr, src []T, offs []int, rows, wo, grStride, srcStep int) {
	tapDotsGo(dots, gr, src, offs, rows, wo, grStride, srcStep)
}

func copyRows[T Float](dst, src []T, rows, w, dstStride, srcStride int) {
	copyRowsGo(dst, src, rows, w, dstStride, srcStride)
}

func tapRowsImage3x3[T Float](dst, src, taps []T, rows, wo, h, w, padTop, padLeft, dw int, bias T) {
	tapRowsImageGo(dst, src, taps, rows, wo, h, w, padTop, padLeft, dw, bias)
}

func tapDotsImage3x3[T Float](dots, gr, src []T, rows, wo, h, w, padTop, padLeft, dw int) {
	tapDotsImageGo(dots, gr, src, rows, wo, h, w, padTop, padLeft, dw)
}
