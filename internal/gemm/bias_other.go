//go:build !amd64 || purego

package gemm

// biasAsm does nothing here: vmath.Axpb adds every row's bias.
func biasAsm[T Float](c []T, ldc int, bias []T, w int) bool { return false }
