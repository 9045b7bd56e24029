//go:build !amd64 || purego

package cpu

// maxPoolPhasesAsm is the AVX2 key conversion of maxPoolPhases on amd64;
// here there is none: no column done.
func maxPoolPhasesAsm(phase []int32, row []float32, l *maxPoolLayout) (int, bool) { return 0, false }

// maxPoolRowPassAsm is the AVX2 row pass on amd64; here there is none
// (false: use the Go loop).
func maxPoolRowPassAsm(key, pos, phase []int32, l *maxPoolLayout, base int32) bool { return false }

// maxPoolColPassAsm is the AVX2 column pass on amd64; here there is none:
// no output column done.
func maxPoolColPassAsm(dst []int, rowKey, rowPos []int32, wop, r0, r1, step int) int { return 0 }

// maxPoolAVX2 is false: no AVX2 loops.
var maxPoolAVX2 = false
