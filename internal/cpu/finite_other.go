//go:build !amd64 || purego

package cpu

// finiteAsm checks no element: no assembly here.
func finiteAsm[T Float](s []T) (int, bool) { return 0, true }
