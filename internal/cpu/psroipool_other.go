//go:build !amd64 || purego

package cpu

// PSRoIPool's AVX2 bin loops on amd64 (psroipool_amd64.go); here there
// are none and the Go loops run.

// psAVX2 is false: no AVX2 loops.
var psAVX2 = false

func binFits[T Float](x []T, w, rows, cols int) bool        { return false }
func binSumFit[T Float](x []T, w, rows, cols int) T         { return 0 }
func binAddAsm[T Float](x []T, w, rows, cols int, d T) bool { return false }
