//go:build !amd64 || purego

package cpu

// pairs2 and spread2 do nothing here (no AVX2 kernels): the Go loops do
// every element.

func pairs2[T Float](dst, a, b, div []T) int { return 0 }
func spread2[T Float](row, v []T) int        { return 0 }
