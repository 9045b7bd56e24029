package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzConvForwardPaths: on fuzzed geometries, the phased forward (where
// phasedForwards picks it) and the pointwise forward on gops' own product
// (weights packed once, the bias added inside the product, a batch above
// the workers one product over its samples: pointwiseBatch) are bitwise
// convGEMMWith's forward on gemm.Gemm a sample at a time, with a bias
// holding NaN payloads and an input holding a NaN.
func FuzzConvForwardPaths(f *testing.F) {
	// The stem's shape, small (phased: 7×7 stride 2, 1 → 16 channels); a
	// pointwise batch of 3 in 2 groups; a 5×5 stride 2, 2 → 18 channels.
	f.Add(uint8(1), uint8(0), uint8(20), uint8(17), uint8(15), uint8(6), uint8(1), uint8(3), uint8(0), uint64(1))
	f.Add(uint8(2), uint8(7), uint8(5), uint8(6), uint8(9), uint8(0), uint8(0), uint8(0), uint8(1), uint64(2))
	f.Add(uint8(0), uint8(1), uint8(19), uint8(23), uint8(17), uint8(4), uint8(1), uint8(2), uint8(0), uint64(3))
	f.Fuzz(func(t *testing.T, n, c, h, w, cout, k, s, p, groups uint8, seed uint64) {
		g := ConvGeom{N: int(n%4) + 1, C: int(c%12) + 1, H: int(h%24) + 1, W: int(w%24) + 1, Cout: int(cout%20) + 1,
			Groups: int(groups%3) + 1, KH: int(k%7) + 1, SH: int(s%3) + 1, PH: int(p % 4), DH: 1, DW: 1}
		g.KW, g.SW, g.PW = g.KH, g.SH, g.PH
		if g.C%g.Groups != 0 || g.Cout%g.Groups != 0 {
			return
		}
		var err error
		if g.HO, err = OutSize(g.H, g.KH, g.SH, g.PH, g.DH); err != nil {
			return
		}
		if g.WO, err = OutSize(g.W, g.KW, g.SW, g.PW, g.DW); err != nil {
			return
		}
		testFuzzPaths[float32](t, g, seed)
		testFuzzPaths[float64](t, g, seed)
	})
}

func testFuzzPaths[T float32 | float64](t *testing.T, g ConvGeom, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	x, w, bias := normals[T](r, g.N*g.C*g.H*g.W), normals[T](r, g.Cout*g.Rows()), nanBias[T](r, g.Cout)
	x[r.IntN(len(x))] = T(math.NaN())
	want := make([]T, g.N*g.Cout*g.L())
	must(t, convGEMMWith(&g, ConvForward, gemmProduct[T], want, x, w, bias, nil))
	got := make([]T, len(want))
	switch {
	case phasedForwards[T](&g):
		must(t, convForwardPhased(&g, got, x, w, bias, nil))
	case g.Pointwise():
		must(t, convGEMMWith(&g, ConvForward, nil, got, x, w, bias, nil))
	default:
		return
	}
	if !slices.Equal(bitsOf(got), bitsOf(want)) {
		t.Fatalf("%T %+v: the path differs from convGEMMWith on Gemm", T(0), g)
	}
}
