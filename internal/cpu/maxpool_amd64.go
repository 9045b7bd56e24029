//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// maxPoolAVX2 picks the AVX2 loops of the float32 fast path (tests switch
// it off to cover the Go loops).
var maxPoolAVX2 = cpu.X86.HasAVX2

// prefetchLines asks for the cache lines of the n > 0 bytes from p
// (PREFETCHT0): a hint, no memory is read.
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)

//go:noescape
func maxPoolKeys1(phase *int32, row *float32, n int) uint32

//go:noescape
func maxPoolKeys2(phase *int32, row *float32, n, pl int) uint32

//go:noescape
func maxPoolRows8(key, pos, phase, taps *int32, k, n int, colBase *int32)

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
	colBase := l.colBase
	for i := range 8 {
		colBase[i] += base
	}
	maxPoolRows8(&key[0], &pos[0], &phase[0], &l.tapPairs[0], len(l.tapOff), len(key), &colBase[0])
	return true
}

// maxPoolPlaneGeom is maxPoolRowsPlane's geometry (the field offsets are
// in maxpool_amd64.s).
type maxPoolPlaneGeom struct {
	rows, w, blocks, s, pl, m, sentE, sentO, k, wop int
}

//go:noescape
func maxPoolRowsPlane(x *float32, phase, rowKey, rowPos, taps, colBase *int32, geom *maxPoolPlaneGeom) uint32

//go:noescape
func maxPoolColsPlane(dst *int, rowKey, rowPos, windows *int32, ho, wo, n, stride int)

// maxPoolPlaneAsm is the keys and the row pass of a whole plane (at x[at:],
// H rows of W) in one call, for column strides 1 and 2: false where it
// does not apply (no AVX2, another stride, or the last plane's last row
// would read past x: then each row is done on its own).
func maxPoolPlaneAsm(phase, rowKey, rowPos []int32, l *maxPoolLayout, x []float32, at, h, w int) (ok, nan bool) {
	st := l.taps.S
	if !maxPoolAVX2 || st > 2 || l.WOP == 0 || h == 0 {
		return false, false
	}
	blocks := (w + 8*st - 1) / (8 * st)
	if at+(h-1)*w+blocks*8*st > len(x) {
		return false, false
	}
	g := maxPoolPlaneGeom{rows: h, w: w, blocks: blocks, s: st, pl: l.PL, m: l.M,
		sentE: l.M + (w+st-1)/st, k: len(l.tapOff), wop: l.WOP}
	g.sentO = g.sentE // (unused for stride 1)
	if st == 2 {
		g.sentO = l.PL + l.M + w/2
	}
	// The sentinel stores and the conversion's last block stay in the
	// phase buffer, the row pass's reads too (the layout's sizes).
	_ = phase[g.sentO+7]
	_ = phase[g.sentE+7]
	_, _ = rowKey[h*l.WOP-1], rowPos[h*l.WOP-1]
	return true, maxPoolRowsPlane(&x[at], &phase[0], &rowKey[0], &rowPos[0], &l.tapPairs[0], &l.colBase[0], &g) != 0
}

// maxPoolColsAsm is the column pass of a whole plane's first n output
// columns of every output row, n = WO rounded down to 8 (those with a
// window of rows; windows holds (first row · WOP, rows) for each): how
// many columns it did.
func maxPoolColsAsm(dst []int, rowKey, rowPos []int32, windows []int32, wo, wop, step int) int {
	n := wo &^ 7
	if !maxPoolAVX2 || n == 0 || len(windows) == 0 {
		return 0
	}
	ho := len(windows) / 2
	_ = dst[(ho-1)*wo+n-1]
	for oh := 0; oh < ho; oh++ {
		if rows := int(windows[2*oh+1]); rows > 0 {
			last := int(windows[2*oh]) + (rows-1)*step*wop + n - 1
			_, _ = rowKey[last], rowPos[last]
		}
	}
	maxPoolColsPlane(&dst[0], &rowKey[0], &rowPos[0], &windows[0], ho, wo, n, step*wop)
	return n
}
