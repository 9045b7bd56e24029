//go:build !amd64 || purego

package optim

// sgdMomVec updates nothing here: sgdUpdate's Go loop does it all.
func sgdMomVec[T float](ps, gs, bs []T, wd, mom, damp1, negLR T, decay, first bool) int {
	return 0
}

// sgdAVX2 is false: no vector kernel.
const sgdAVX2 = false
