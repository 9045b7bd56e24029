//go:build !amd64 || purego

package cpu

// winoAVX512 is false: Winograd's transforms run the Go loops.
var winoAVX512 = false

// winoAVX2 is false: no AVX2 loops either.
var winoAVX2 = false

// winoOutAsm does no tile: no assembly here.
func winoOutAsm[T Float](ms *[16][]T, o, tw, stride int, top, bottom []T) int { return 0 }

// winoInAsm does no tile: no assembly here.
func winoInAsm[T Float](rows []T, width int, vs *[16][]T, o, tw int) int { return 0 }

// winoWtAsm does no kernel: no assembly here.
func winoWtAsm[T Float](p *winoPlan, w, u []T, su, o int) int { return 0 }
