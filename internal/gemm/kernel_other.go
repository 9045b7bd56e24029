//go:build !(amd64 || arm64) || purego

package gemm

func kernels32() []impl[float32] { return []impl[float32]{goImpl[float32]()} }
func kernels64() []impl[float64] { return []impl[float64]{goImpl[float64]()} }

func interleaveRows[T Float]() int                                           { return 0 }
func interleaveBlock[T Float](dst []T, st int, src []T, ld, kb int, alpha T) {}
func interleavePtrsBlock[T Float](dst []T, st int, rows [][]T, kb int)       {}
func interleave6[T Float](dst []T, src []T, ld, kb int, alpha T) int         { return 0 }
