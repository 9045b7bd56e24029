//go:build amd64 && !purego

package cpu

import (
	"math"
	"unsafe"
)

//go:noescape
func gatherRowsS(dst *float32, ld int, src *float32, taps *int, rows int, idx *int32, cols int)

//go:noescape
func gatherRowsD(dst *float64, ld int, src *float64, taps *int, rows int, idx *int32, cols int)

// gatherAsm enables gatherRowsS and gatherRowsD (tests switch it off).
var gatherAsm = true

// gatherRows does gatherPanel in assembly (gatherAsm) and reports whether
// it did: at most gatherMaxCols positions, every element read inside src
// and written inside panel (checked here once for all the rows).
func gatherRows[T Float](panel []T, nr int, src []T, taps, pos []int) bool {
	if !gatherAsm || len(taps) == 0 || len(pos) == 0 || len(pos) > gatherMaxCols || nr < len(pos) ||
		(len(taps)-1)*nr+len(pos) > len(panel) {
		return false
	}
	var idx [gatherMaxCols]int32
	last := 0
	for j, o := range pos {
		if o < 0 || o > math.MaxInt32 {
			return false
		}
		idx[j], last = int32(o), max(last, o)
	}
	for _, t := range taps {
		if t < 0 || t >= len(src)-last {
			return false
		}
	}
	pd, ps := unsafe.Pointer(&panel[0]), unsafe.Pointer(&src[0])
	if unsafe.Sizeof(T(0)) == 4 {
		gatherRowsS((*float32)(pd), nr, (*float32)(ps), &taps[0], len(taps), &idx[0], len(pos))
	} else {
		gatherRowsD((*float64)(pd), nr, (*float64)(ps), &taps[0], len(taps), &idx[0], len(pos))
	}
	return true
}
