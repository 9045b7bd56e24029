//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestNearestStream: Interp's nearest with its ×2 rows written by
// non-temporal stores (nearestStreamBytes lowered to 0, so that every
// result streams) gives the general loop's bits, into a result against a
// guard page at its end or its start and at every float offset from a
// 32-byte boundary (rows that start aligned stream, the others do not),
// over garbage, for every geometry of nearestGeoms, whose widths leave
// short tails and whose rows repeat by 1, 2 and 3.
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
		for _, tail := range []bool{true, false} {
			for off := 0; off < 8; off++ {
				buf, free := guarded[T](t, n+off, tail)
				got := buf[off:]
				if !tail {
					got = buf[:n]
				}
				copy(buf, randData[T](r, len(buf)))
				Interp(&g, x, got)
				sameBits(t, fmt.Sprintf("%T %dx%d->%dx%d offset %d tail %v", T(0), g.H, g.W, ho, wo, off, tail), got, want)
				free()
				if !tail {
					break
				}
			}
		}
	}
}
