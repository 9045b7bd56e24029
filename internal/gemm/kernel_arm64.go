//go:build arm64 && !purego

package gemm

//go:generate go run ./asmgen

//go:noescape
func kernS128(kc int, a, b, c *float32, ldb, ldc int, overwrite bool)

//go:noescape
func kernD128(kc int, a, b, c *float64, ldb, ldc int, overwrite bool)

// kernels lists the micro-kernels this CPU can run, best first: NEON
// (Advanced SIMD, with fused multiply-add, is part of every arm64 CPU),
// then the portable one.
func kernels32() []impl[float32] {
	return []impl[float32]{{name: "neon", mr: 8, nr: 12, kern: kernS128}, goImpl[float32]()}
}

func kernels64() []impl[float64] {
	return []impl[float64]{{name: "neon", mr: 8, nr: 6, kern: kernD128}, goImpl[float64]()}
}

// interleaveRows is 0: the portable loops pack (see interleave).
func interleaveRows[T Float]() int                                           { return 0 }
func interleaveBlock[T Float](dst []T, st int, src []T, ld, kb int, alpha T) {}
func interleavePtrsBlock[T Float](dst []T, st int, rows [][]T, kb int)       {}
func interleave6[T Float](dst []T, src []T, ld, kb int, alpha T) int         { return 0 }
