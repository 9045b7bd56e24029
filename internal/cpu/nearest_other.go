//go:build !amd64 || purego

package cpu

// dup2 does nothing here (no AVX2 kernel): the Go loop repeats every
// value.
func dup2[T Float](d0, d1, row []T) int { return 0 }

// blocks2 does nothing here (no AVX2 kernel): the Go loop sums every
// block.
func blocks2[T Float](d, a, b []T) int { return 0 }
