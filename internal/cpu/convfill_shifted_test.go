package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/internal/gemm"
)

// exactBits is x's bits in its own width (no float32→float64 conversion,
// which would quiet a signalling NaN).
func exactBits[T gemm.Float](x T) uint64 {
	switch v := any(x).(type) {
	case float32:
		return uint64(math.Float32bits(v))
	case float64:
		return math.Float64bits(v)
	}
	return 0
}

// randSameGeom is a random stride-1 geometry with WO = W (PW fixed by KW
// and DW), padding, dilation and kernels up to 7 on both axes, groups,
// batch 1–3; ok is false when it has no output or is pointwise.
func randSameGeom(r *rand.Rand) (ConvGeom, bool) {
	g := ConvGeom{N: 1 + r.IntN(3), SH: 1, SW: 1}
	g.Groups = 1 + r.IntN(3)
	g.C = g.Groups * (1 + r.IntN(4))
	g.Cout = g.Groups * (1 + r.IntN(3))
	g.H, g.W = 1+r.IntN(12), 1+r.IntN(12)
	if r.IntN(4) == 0 {
		g.W = 1 + r.IntN(3) // W = 1, 2, 3
	}
	g.KH, g.DH, g.PH = 1+r.IntN(7), 1+r.IntN(3), r.IntN(4)
	for {
		g.KW, g.DW = 1+r.IntN(7), 1+r.IntN(3)
		if (g.KW-1)*g.DW%2 == 0 {
			break
		}
	}
	g.PW = (g.KW - 1) * g.DW / 2
	var err error
	if g.HO, err = OutSize(g.H, g.KH, 1, g.PH, g.DH); err != nil {
		return g, false
	}
	if g.WO, err = OutSize(g.W, g.KW, 1, g.PW, g.DW); err != nil || g.WO != g.W {
		return g, false
	}
	return g, !g.Pointwise()
}

func sprinkleSpecials[T gemm.Float](r *rand.Rand, s []T, snan T) {
	specials := []T{T(math.NaN()), snan, T(math.Inf(1)), T(math.Inf(-1)), T(math.Copysign(0, -1))}
	for i := range s {
		if r.IntN(8) == 0 {
			s[i] = specials[r.IntN(len(specials))]
		} else {
			s[i] = T(r.NormFloat64())
		}
	}
}

// TestShiftedPanelRandom compares shiftedPanel, with and without the
// padded copy, bit for bit with the old path (im2colRows into scratch,
// then gemm.Interleave) on random spans of random rows of random
// geometries.
func TestShiftedPanelRandom(t *testing.T) {
	testShiftedPanelRandom[float32](t, math.Float32frombits(0x7f800001))
	testShiftedPanelRandom[float64](t, math.Float64frombits(0x7ff0000000000001))
}

func testShiftedPanelRandom[T gemm.Float](t *testing.T, snan T) {
	r := rand.New(rand.NewPCG(1, 2))
	nr := panelWidth[T]()
	geoms, cases := 0, 0
	for geoms < 3000 {
		g, ok := randSameGeom(r)
		if !ok || g.L() <= gatherMax {
			continue
		}
		geoms++
		x := make([]T, g.N*g.C*g.H*g.W)
		sprinkleSpecials(r, x, snan)
		pad := padInput(&g, x)
		cpg, hw, rows, l := g.C/g.Groups, g.H*g.W, g.Rows(), g.L()
		pr := newPanelRows[T](nr)
		for range 8 {
			n, gi := r.IntN(g.N), r.IntN(g.Groups)
			xg := x[(n*g.C+gi*cpg)*hw : (n*g.C+(gi+1)*cpg)*hw]
			r0 := r.IntN(rows)
			r1 := min(rows, r0+1+r.IntN(nr))
			w := gatherMax + 1 + r.IntN(l-gatherMax)
			l0 := r.IntN(l - w + 1)
			want := make([]T, w*nr)
			got := make([]T, w*nr)
			for i := range want {
				want[i], got[i] = 12345, 12345
			}
			scr := make([]T, (r1-r0)*w)
			im2colRows(&g, xg, scr, w, r0, r1, l0, l0+w)
			gemm.Interleave(want, nr, scr, w, r1-r0, w)
			for _, usePad := range []bool{false, true} {
				at := paddedAt[T]{}
				if usePad {
					at = pad.at(&g, n, gi*cpg)
				}
				for i := range got {
					got[i] = 12345
				}
				scratch := make([]T, (r1-r0)*w)
				shiftedPanel(&g, xg, at, got, nr, scratch, pr, r0, r1, l0, w)
				cases++
				for i := range got {
					if exactBits(got[i]) != exactBits(want[i]) {
						t.Fatalf("%T %+v n %d g %d rows [%d,%d) span [%d,+%d) pad %v: element %d (pos %d row %d) = %v (%#x), want %v (%#x)",
							got[i], g, n, gi, r0, r1, l0, w, usePad, i, i/nr, i%nr, got[i], exactBits(got[i]), want[i], exactBits(want[i]))
					}
				}
			}
		}
		colsScratch[T]().Put(pad.buf)
	}
	t.Logf("%T: %d geometries, %d panels", T(0), geoms, cases)
}

// TestWeightFilledRandom compares convWeightFilled with gemm.Gemm on the
// Im2col columns (TestConvWeightFilled's reference, which it matches
// bitwise) on random same-width geometries, NaN/Inf/−0/sNaN inputs, at
// GOMAXPROCS 1, 2, 3; and the results' bits (NaN payloads included)
// across GOMAXPROCS.
func TestWeightFilledRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	done := 0
	for done < 120 {
		g, ok := randSameGeom(r)
		if !ok || g.L() <= gatherMax {
			continue
		}
		if done%4 == 0 { // some planes above padPlaneMax·kc: the in-place path alone
			g.H, g.W = 40+r.IntN(30), 20+r.IntN(20)
			g.HO, _ = OutSize(g.H, g.KH, 1, g.PH, g.DH)
			g.WO, _ = OutSize(g.W, g.KW, 1, g.PW, g.DW)
			if g.WO != g.W || g.HO <= 0 {
				continue
			}
		}
		done++
		name := fmt.Sprintf("%+v", g)
		t.Run(name+"/f32", func(t *testing.T) { weightFilledVsGemm[float32](t, r, g, math.Float32frombits(0x7f800001)) })
		t.Run(name+"/f64", func(t *testing.T) { weightFilledVsGemm[float64](t, r, g, math.Float64frombits(0x7ff0000000000001)) })
	}
}

func weightFilledVsGemm[T float32 | float64](t *testing.T, r *rand.Rand, g ConvGeom, snan T) {
	x, gr := make([]T, g.N*g.C*g.H*g.W), normals[T](r, g.N*g.Cout*g.L())
	// Few specials: most gradient elements stay finite, so that
	// the comparison means something.
	for i := range x {
		x[i] = T(r.NormFloat64())
	}
	specials := []T{T(math.NaN()), snan, T(math.Inf(1)), T(math.Inf(-1)), T(math.Copysign(0, -1))}
	for range 2 {
		x[r.IntN(len(x))] = specials[r.IntN(len(specials))]
	}
	l, rows, cog, nl := g.L(), g.Rows(), g.Cout/g.Groups, g.N*g.L()
	want := make([]T, g.Cout*rows)
	cols := make([]T, g.C*g.K()*l)
	for gi := 0; gi < g.Groups; gi++ {
		ga, ca := make([]T, cog*nl), make([]T, rows*nl)
		for n := 0; n < g.N; n++ {
			Im2col(&g, x[n*g.C*g.H*g.W:(n+1)*g.C*g.H*g.W], cols)
			for i := 0; i < cog; i++ {
				copy(ga[i*nl+n*l:][:l], gr[(n*g.Cout+gi*cog+i)*l:][:l])
			}
			for rr := 0; rr < rows; rr++ {
				copy(ca[rr*nl+n*l:][:l], cols[(gi*rows+rr)*l:][:l])
			}
		}
		must(t, gemm.Gemm(false, true, cog, rows, nl, 1, ga, nl, ca, nl, 0, want[gi*cog*rows:], rows))
	}
	var first []T
	for _, procs := range []int{1, 2, 3} {
		got := make([]T, len(want))
		for i := range got {
			got[i] = T(math.Inf(1))
		}
		old := runtime.GOMAXPROCS(procs)
		err := convWeightFilled(&g, got, x, gr)
		runtime.GOMAXPROCS(old)
		must(t, err)
		for i := range got {
			if !(got[i] == want[i] || got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("GOMAXPROCS %d: element %d = %v, want %v", procs, i, got[i], want[i])
			}
		}
		if first == nil {
			first = got
			continue
		}
		for i := range got {
			if exactBits(got[i]) != exactBits(first[i]) {
				t.Fatalf("GOMAXPROCS %d: element %d bits %#x, GOMAXPROCS 1's %#x", procs, i, exactBits(got[i]), exactBits(first[i]))
			}
		}
	}
}

func gemmInterleave[T gemm.Float](dst []T, st int, src []T, ld, rows, kb int) {
	gemm.Interleave(dst, st, src, ld, rows, kb)
}
