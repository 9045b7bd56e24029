//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// maxPoolAVX2 picks the AVX2 loops of the float32 fast path (tests switch
// it off to cover the Go loops).
var maxPoolAVX2 = cpu.X86.HasAVX2

//go:noescape
func maxPoolKeys1(phase *int32, row *float32, n int) uint32

//go:noescape
func maxPoolKeys2(phase *int32, row *float32, n, pl int) uint32

//go:noescape
func maxPoolRows8(key, pos, phase, taps *int32, k, n int, colBase *int32)

//go:noescape
func maxPoolCols8(dst *int, rowKey, rowPos *int32, n, rows, stride int)

// maxPoolPhasesAsm writes the keys of row's first columns into the phase
// buffer for column strides 1 and 2, eight or sixteen columns at a time:
// how many columns it did, and whether one of them is NaN.
func maxPoolPhasesAsm(phase []int32, row []float32, l *maxPoolLayout) (int, bool) {
	if !maxPoolAVX2 {
		return 0, false
	}
	switch l.taps.S {
	case 1:
		n := len(row) &^ 7
		if n == 0 {
			return 0, false
		}
		_ = phase[l.M+n-1]
		return n, maxPoolKeys1(&phase[l.M], &row[0], n) != 0
	case 2:
		n := len(row) &^ 15
		if n == 0 {
			return 0, false
		}
		_ = phase[l.PL+l.M+n/2-1]
		return n, maxPoolKeys2(&phase[l.M], &row[0], n, l.PL) != 0
	}
	return 0, false
}

// maxPoolRowPassAsm is maxPoolRowPass's loop, eight output columns at a
// time (len(key) = WOP, a multiple of 8; the layout keeps every tap's
// reads inside phase).
func maxPoolRowPassAsm(key, pos, phase []int32, l *maxPoolLayout, base int32) bool {
	if !maxPoolAVX2 || len(key) == 0 {
		return maxPoolAVX2
	}
	_ = pos[len(key)-1]
	var colBase [9]int32
	s := int32(l.taps.S)
	for i := range 8 {
		colBase[i] = base + s*int32(i)
	}
	colBase[8] = 8 * s
	maxPoolRows8(&key[0], &pos[0], &phase[0], &l.tapPairs[0], len(l.tapOff), len(key), &colBase[0])
	return true
}

// maxPoolColPassAsm is maxPoolColPass's loop for its first columns, eight
// at a time: how many it did.
func maxPoolColPassAsm(dst []int, rowKey, rowPos []int32, wop, r0, r1, step int) int {
	n := len(dst) &^ 7
	if !maxPoolAVX2 || n == 0 {
		return 0
	}
	rows := (r1 - r0 + step - 1) / step
	last := (r0+(rows-1)*step)*wop + n - 1
	_, _ = rowKey[last], rowPos[last]
	maxPoolCols8(&dst[0], &rowKey[r0*wop], &rowPos[r0*wop], n, rows, wop*step)
	return n
}
