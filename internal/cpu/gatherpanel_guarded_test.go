//go:build linux

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGatherPanel: gatherPanel writes panel[p·nr + j] = src[taps[p] +
// pos[j]] for every row and position and nothing else of the panel, with
// src and the panel against a guard page (the last element read and the
// last written at the page's edge, then the first), for 1 to 33 positions
// (gatherRows' steps of four, its tail, and more than gatherMaxCols, which
// the Go loop takes), 1 to 5 rows, panel widths from cols to cols + 3;
// float32 and float64, the assembly on and off, NaN payloads copied bit
// for bit.
func TestGatherPanel(t *testing.T) {
	old := gatherAsm
	defer func() { gatherAsm = old }()
	for _, on := range []bool{false, old} {
		gatherAsm = on
		t.Run(fmt.Sprintf("asm=%v", on), func(t *testing.T) {
			testGatherPanel[float32](t)
			testGatherPanel[float64](t)
		})
	}
}

func testGatherPanel[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for cols := 1; cols <= gatherMaxCols+1; cols++ {
		for rows := 1; rows <= 5; rows++ {
			for extra := 0; extra <= 3; extra += 3 {
				for _, tail := range []bool{true, false} {
					nr := cols + extra
					const n = 200
					src, freeS := guarded[T](t, n, tail)
					for i := range src {
						src[i] = T(i) + 0.25
					}
					src[5] = T(math.Float64frombits(0x7ff8000000000123)) // a NaN with a payload
					pos := make([]int, cols)
					for j := range pos {
						pos[j] = r.IntN(60)
					}
					pos[r.IntN(cols)] = 59 // the largest position, at the end of src with the largest tap
					taps := make([]int, rows)
					for p := range taps {
						taps[p] = r.IntN(n - 59)
					}
					taps[r.IntN(rows)] = n - 60
					if !tail { // the first element of src read
						taps[r.IntN(rows)], pos[r.IntN(cols)] = 0, 0
					}
					size := (rows-1)*nr + cols
					panel, freeP := guarded[T](t, size, tail)
					for i := range panel {
						panel[i] = -1
					}
					if gatherAsm && cols <= gatherMaxCols {
						// The assembly takes every valid call it is given.
						if !gatherRows(panel, nr, src, taps, pos) {
							t.Fatalf("%T cols %d rows %d nr %d: gatherRows refused a valid call", src[0], cols, rows, nr)
						}
					} else {
						gatherPanel(panel, nr, src, taps, pos)
					}
					for p := 0; p < rows; p++ {
						for j := 0; j < nr && p*nr+j < size; j++ {
							got, want := panel[p*nr+j], T(-1)
							if j < cols {
								want = src[taps[p]+pos[j]]
							}
							if bitsOf([]T{got})[0] != bitsOf([]T{want})[0] {
								t.Fatalf("%T cols %d rows %d nr %d tail %v: panel[%d, %d] = %v, want %v", got, cols, rows, nr, tail, p, j, got, want)
							}
						}
					}
					freeP()
					freeS()
				}
			}
		}
	}
}

// TestGatherRowsRefuses: gatherRows leaves the panel alone and reports
// false when a read would fall outside src, a position or tap is negative
// or a position does not fit an int32 index, the rows overrun the panel,
// or there are more positions than gatherMaxCols.
func TestGatherRowsRefuses(t *testing.T) {
	pastInt32 := int64(math.MaxInt32) + 1
	if !gatherAsm {
		t.Skip("no assembly on this build")
	}
	src := make([]float32, 50)
	panel := make([]float32, 32)
	for _, c := range []struct {
		name      string
		nr        int
		taps, pos []int
	}{
		{"past src", 16, []int{10, 30}, []int{0, 20}},
		{"negative position", 16, []int{10}, []int{-1, 2}},
		{"negative tap", 16, []int{-1}, []int{1, 2}},
		{"past the panel", 16, []int{0, 1, 2}, []int{1, 2}},
		{"narrow panel", 1, []int{0, 1}, []int{1, 2}},
		{"too many positions", 64, []int{0}, make([]int, gatherMaxCols+1)},
		{"position past int32", 16, []int{0}, []int{1, int(pastInt32)}}, // negative where int is 32 bits
	} {
		for i := range panel {
			panel[i] = -1
		}
		if gatherRows(panel, c.nr, src, c.taps, c.pos) {
			t.Errorf("%s: gatherRows = true", c.name)
		}
		for i, v := range panel {
			if v != -1 {
				t.Fatalf("%s: panel[%d] = %v, written", c.name, i, v)
			}
		}
	}
}
