//go:build linux

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestWeightFilledGuarded runs convWeightFilled on random same-width
// geometries (small planes: the padded copy; large: in-place rows) with
// x, the gradient and the output against a guard page at their end and
// then at their start; and shiftedPanel alone with each sample's group
// planes guarded (the in-place rows' plane edges, the first and last
// plane), both bitwise against the old path.
func TestWeightFilledGuarded(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	done := 0
	for done < 60 {
		g, ok := randSameGeom(r)
		if !ok || g.L() <= gatherMax {
			continue
		}
		if done%3 == 0 {
			g.H, g.W = 35+r.IntN(20), 30+r.IntN(10)
			g.HO, _ = OutSize(g.H, g.KH, 1, g.PH, g.DH)
			g.WO, _ = OutSize(g.W, g.KW, 1, g.PW, g.DW)
			if g.WO != g.W || g.HO <= 0 {
				continue
			}
		}
		done++
		for _, tail := range []bool{true, false} {
			t.Run(fmt.Sprintf("%+v/tail%v", g, tail), func(t *testing.T) {
				guardedWeightFilled[float32](t, r, g, tail)
				guardedWeightFilled[float64](t, r, g, tail)
			})
		}
	}
}

func guardedWeightFilled[T float32 | float64](t *testing.T, r *rand.Rand, g ConvGeom, tail bool) {
	guard, free := guardedCopies[T](t, tail)
	defer free()
	x := make([]T, g.N*g.C*g.H*g.W)
	sprinkleSpecials(r, x, T(math.Inf(1)))
	xs := guard(x)
	gr := guard(normals[T](r, g.N*g.Cout*g.L()))
	want := make([]T, g.Cout*g.Rows())
	must(t, convWeightFilled(&g, want, x, gr)) // x unguarded
	out := guard(make([]T, len(want)))
	must(t, convWeightFilled(&g, out, xs, gr))
	for i := range out {
		if exactBits(out[i]) != exactBits(want[i]) {
			t.Fatalf("element %d differs", i)
		}
	}
	// shiftedPanel on one sample's group planes, guarded alone.
	nr, cpg, hw := panelWidth[T](), g.C/g.Groups, g.H*g.W
	pr := newPanelRows[T](nr)
	for n := 0; n < g.N; n++ {
		for gi := 0; gi < g.Groups; gi++ {
			xg := guard(x[(n*g.C+gi*cpg)*hw : (n*g.C+(gi+1)*cpg)*hw])
			for r0 := 0; r0 < g.Rows(); r0 += nr {
				r1 := min(g.Rows(), r0+nr)
				for _, span := range [][2]int{{0, g.L()}, {0, gatherMax + 1}, {g.L() - gatherMax - 1, gatherMax + 1}} {
					l0, w := span[0], span[1]
					ref, scr := make([]T, w*nr), make([]T, (r1-r0)*w)
					im2colRows(&g, xg, scr, w, r0, r1, l0, l0+w)
					gemmInterleave(ref, nr, scr, w, r1-r0, w)
					got := guard(make([]T, w*nr))
					shiftedPanel(&g, xg, paddedAt[T]{}, got, nr, guard(make([]T, (r1-r0)*w)), pr, r0, r1, l0, w)
					for i := range got {
						if exactBits(got[i]) != exactBits(ref[i]) {
							t.Fatalf("shiftedPanel n %d g %d rows %d span %v: element %d differs", n, gi, r0, span, i)
						}
					}
				}
			}
		}
	}
}
