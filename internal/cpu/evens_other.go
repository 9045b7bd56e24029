//go:build !amd64 || purego

package cpu

// evens does nothing here (no AVX2 kernel): the Go loop does every element.
func evens[T Float](dst, src []T) int { return 0 }

// addEvens does nothing here (no AVX2 kernel): the Go loop does every
// element.
func addEvens[T Float](dst, src []T) int { return 0 }
