package gemm

import "unsafe"

// unsafeSlice is the n elements from p: the kernels' pointer arguments back
// as a slice, for the portable kernel.
func unsafeSlice[T Float](p *T, n int) []T { return unsafe.Slice(p, n) }
