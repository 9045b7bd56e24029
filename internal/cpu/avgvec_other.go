//go:build !amd64 || purego

package cpu

// The AVX2 kernels of average pooling and bilinear interpolation on amd64
// (avgvec_amd64.go); here there are none: each does nothing and returns
// 0, and the Go loops compute everything.

func windowSums2[T Float](dst, src []T, k int) int                                  { return 0 }
func sumRows32[T Float](dst, src []T, n, stride int, div []T) int                   { return 0 }
func windowScatter2[T Float](row, acc []T, run scatterRun) int                      { return 0 }
func interp2x[T Float](h, row []T, w0a, w1a, w0b, w1b T) int                        { return 0 }
func lerpRows[T Float](d, t, u []T, a, b T) int                                     { return 0 }
func interpT2x[T Float](dx, v []T, n, stride int, wy []T, w1a, w1b, w0a, w0b T) int { return 0 }
func addVec[T Float](x, y []T) int                                                  { return 0 }

// avgAVX2 is false: no AVX2 kernels.
var avgAVX2 = false
