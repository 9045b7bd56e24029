//go:build linux

package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestSpreadRow: Gemm with m past one row block (mcRows), so that
// B is packed (packBPanels; m ≤ mc reads B in place and packs nothing,
// which is why TestPackBPanelsGuarded, at m = 50, never reaches
// spreadRow), gives the same bits with spreadRow (gatherAVX2 on) as with
// CopyPanelRow (off), B against a guard page at its end or its start,
// with NaN, −0 and Inf in B, widths that end in a partial panel, K past
// one block, GOMAXPROCS 1 to 3 (byColumns and the panels split over
// workers, a range [lo, full) starting past panel 0).
func TestSpreadRow(t *testing.T) {
	if !gatherAVX2 {
		t.Skip("no AVX2")
	}
	testReviewSpreadRow[float32](t)
	testReviewSpreadRow[float64](t)
}

func testReviewSpreadRow[T Float](t *testing.T) {
	old := gatherAVX2
	defer func() { gatherAVX2 = old }()
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{16, 31, 64, 100, 257} {
		for _, k := range []int{1, 7, 300} {
			for _, procs := range []int{1, 2, 3} {
				for _, tail := range []bool{true, false} {
					m, ldb := 203, n+5
					a, bsrc := randSlice[T](r, m*k), randSlice[T](r, (k-1)*ldb+n)
					bsrc[r.IntN(len(bsrc))] = T(math.NaN())
					bsrc[r.IntN(len(bsrc))] = T(math.Copysign(0, -1))
					bsrc[r.IntN(len(bsrc))] = T(math.Inf(1))
					b, free := guardedSlice[T](t, len(bsrc), tail)
					copy(b, bsrc)
					var c [2][]T
					prev := runtime.GOMAXPROCS(procs)
					for i, on := range []bool{false, true} {
						gatherAVX2 = on
						c[i] = make([]T, m*n)
						if err := Gemm(false, false, m, n, k, 1, a, k, b, ldb, 0, c[i], n); err != nil {
							t.Fatal(err)
						}
					}
					runtime.GOMAXPROCS(prev)
					free()
					if i := bitsEq(c[0], c[1]); i >= 0 {
						t.Fatal(fmt.Sprintf("%T n %d k %d procs %d: C[%d] = %v with spreadRow, %v without", T(0), n, k, procs, i, c[1][i], c[0][i]))
					}
				}
			}
		}
	}
}
