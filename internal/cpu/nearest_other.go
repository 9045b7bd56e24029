//go:build !amd64 || purego

package cpu

// dup2 does nothing here (no AVX2 kernel): the Go loop repeats every
// value.
func dup2[T Float](d0, d1, row []T) int { return 0 }

// blocks2 does nothing here (no AVX2 kernel): the Go loop sums every
// block.
func blocks2[T Float](d, a, b []T) int { return 0 }

// nearestStreams is false here: no non-temporal stores.
func nearestStreams[T Float](n int) bool { return false }

// repeat2NT does nothing here (nearestStreams is false).
func repeat2NT[T Float](d0, d1, row []T) bool { return false }

// nearestFence does nothing here.
func nearestFence() {}
