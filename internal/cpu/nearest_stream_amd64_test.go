//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestNearestStream: Interp's nearest with its ×2 rows written by
// non-temporal stores (nearestStreamBytes lowered to 0, so that every
// result streams) gives the general loop's bits, into a result against a
// guard page at its end or its start, and at every float offset 0..7
// from a 32-byte boundary with canaries either side (rows that start
// aligned stream, the others do not), over garbage, for every geometry
// of nearestGeoms, whose widths leave short tails and whose rows repeat
// by 1, 2 and 3.
func TestNearestStream(t *testing.T) {
	if !avgAVX2 {
		t.Skip("no AVX2")
	}
	defer func(b int) { nearestStreamBytes = b }(nearestStreamBytes)
	nearestStreamBytes = 0
	testNearestStream[float32](t)
	testNearestStream[float64](t)
}

func testNearestStream[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, g := range nearestGeoms() {
		ho, wo := len(g.Rows.I0), len(g.Cols.I0)
		n := g.Planes * ho * wo
		x := randData[T](r, g.Planes*g.H*g.W)
		want := make([]T, n)
		interpRef(&g, x, want)
		name := fmt.Sprintf("%T %dx%d->%dx%d", T(0), g.H, g.W, ho, wo)
		for _, tail := range []bool{true, false} {
			// against the guard page: at its end (tail) or its start
			buf, free := guarded[T](t, n, tail)
			copy(buf, randData[T](r, n))
			Interp(&g, x, buf)
			sameBits(t, fmt.Sprintf("%s guarded tail %v", name, tail), buf, want)
			free()
		}
		for off := 0; off < 8; off++ {
			// every offset from a 32-byte boundary, canaries either side
			const pad = 8
			buf := make([]T, n+off+2*pad+8)
			base := int((32 - uintptr(unsafe.Pointer(&buf[0]))%32) % 32 / unsafe.Sizeof(T(0)))
			got := buf[base+pad+off:][:n]
			for i := range buf {
				buf[i] = 42
			}
			Interp(&g, x, got)
			sameBits(t, fmt.Sprintf("%s offset %d", name, off), got, want)
			for i := range buf {
				if (i < base+pad+off || i >= base+pad+off+n) && buf[i] != 42 {
					t.Fatalf("%s offset %d: element %d outside the result written", name, off, i)
				}
			}
		}
	}
}
