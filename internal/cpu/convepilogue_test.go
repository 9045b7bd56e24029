package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gops-dev/gops/internal/gemm"
)

// epilogueCases are geometries for ConvEpilogue: several blocks of output
// rows whose plane offsets are not multiples of the vector width (64
// channels at 30×30: 7 rows a block), pointwise, strided, grouped, the
// direct kernels' narrow groups, a 1×1 output (ChannelAffine's Inner = 1)
// and one sample, and two that run Winograd (its output transform's
// blocks).
var epilogueCases = []ConvGeom{
	{N: 2, C: 64, H: 30, W: 30, Cout: 8, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 1, C: 48, H: 37, W: 29, Cout: 5, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 2, C: 16, H: 9, W: 11, Cout: 12, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1},
	{N: 2, C: 12, H: 17, W: 13, Cout: 6, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
	{N: 2, C: 32, H: 10, W: 10, Cout: 32, Groups: 4, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 2, C: 6, H: 12, W: 15, Cout: 6, Groups: 6, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 2, C: 8, H: 3, W: 3, Cout: 4, Groups: 1, KH: 3, KW: 3, SH: 2, SW: 2, PH: 0, PW: 0, DH: 1, DW: 1},
	{N: 1, C: 8, H: 5, W: 5, Cout: 4, Groups: 1, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
	// Winograd's (winoWins): odd sizes, a 1-row block's plane offsets.
	{N: 2, C: 64, H: 33, W: 19, Cout: 72, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 1, C: 64, H: 40, W: 40, Cout: 64, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},
}

// TestConvEpilogueBitwise: ConvEpilogue with every combination of bias,
// scale and shift, residual and ReLU gives the bits of Conv (with the
// bias; im2col's then bitwise Conv without it and AddChannelBias), then
// ChannelAffine, the elementwise sum and ReLU as separate passes, on
// epilogueCases and random geometries, inputs holding NaN and ±Inf or
// not, float32 and float64, at GOMAXPROCS 1 and 2.
func TestConvEpilogueBitwise(t *testing.T) {
	cases := slices.Clone(epilogueCases)
	r := rand.New(rand.NewPCG(11, 12))
	for len(cases) < len(epilogueCases)+12 { // random geometries
		groups := 1 + r.IntN(2)
		k := 1 + 2*r.IntN(3)
		g := ConvGeom{N: 1 + r.IntN(2), C: groups * (1 + r.IntN(40)), H: 1 + r.IntN(40), W: 1 + r.IntN(40),
			Cout: groups * (1 + r.IntN(12)), Groups: groups, KH: k, KW: k, SH: 1 + r.IntN(2), SW: 1 + r.IntN(2),
			PH: r.IntN(k/2 + 1), PW: r.IntN(k/2 + 1), DH: 1, DW: 1}
		if _, err := OutSize(g.H, g.KH, g.SH, g.PH, g.DH); err != nil {
			continue
		}
		if _, err := OutSize(g.W, g.KW, g.SW, g.PW, g.DW); err != nil {
			continue
		}
		cases = append(cases, g)
	}
	for i, g := range cases {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		for _, special := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/special=%v", i, special), func(t *testing.T) {
				epilogueBitwise[float32](t, &g, special, uint64(i))
				epilogueBitwise[float64](t, &g, special, uint64(i))
			})
		}
	}
}

func epilogueBitwise[T gemm.Float](t *testing.T, g *ConvGeom, special bool, seed uint64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(seed, 7))
	nx, nw, ny := g.N*g.C*g.H*g.W, g.Cout*g.C/g.Groups*g.K(), g.N*g.Cout*g.L()
	x, w, res := randNormal[T](r, nx), randNormal[T](r, nw), randNormal[T](r, ny)
	bias, scale, shift := randNormal[T](r, g.Cout), randNormal[T](r, g.Cout), randNormal[T](r, g.Cout)
	if special {
		for _, s := range [][]T{x, res} {
			for k := 0; k < 4; k++ {
				s[r.IntN(len(s))] = T(math.NaN())
				s[r.IntN(len(s))] = T(math.Inf(1))
				s[r.IntN(len(s))] = T(math.Inf(-1))
			}
		}
		scale[0], shift[len(shift)-1] = T(math.Inf(1)), T(math.NaN())
	}
	for mask := 0; mask < 16; mask++ {
		var b []T
		ep := &Epilogue[T]{ReLU: mask&8 != 0}
		if mask&1 != 0 {
			b = bias
		}
		if mask&2 != 0 {
			ep.Scale, ep.Shift = scale, shift
		}
		if mask&4 != 0 {
			ep.Residual = res
		}
		// The unfused graph: Conv2d (with its bias: Conv), then the passes.
		want := make([]T, ny)
		must(t, Conv(g, ConvForward, gemmProduct[T], want, x, w, b))
		n, l := g.N, g.L()
		if b != nil && !directConv(g) {
			// im2col's bias, added per block, is AddChannelBias's.
			sep := make([]T, ny)
			must(t, Conv(g, ConvForward, gemmProduct[T], sep, x, w, nil))
			AddChannelBias(sep, b, sep, n, g.Cout, l)
			if !slices.Equal(bitsOf(sep), bitsOf(want)) {
				t.Fatalf("%T: Conv's bias differs from AddChannelBias's", sep[0])
			}
		}
		if ep.Scale != nil {
			ChannelAffine(ChanGeom{n, g.Cout, l}, want, want, scale, shift)
		}
		if ep.Residual != nil {
			for k := range want {
				want[k] += res[k]
			}
		}
		if ep.ReLU {
			LeakyReLU(0, want, want)
		}
		for _, p := range []int{1, 2} {
			runtime.GOMAXPROCS(p)
			got := make([]T, ny)
			for k := range got {
				got[k] = 42
			}
			must(t, ConvEpilogue(g, gemmProduct[T], got, x, w, b, ep))
			if !slices.Equal(bitsOf(got), bitsOf(want)) {
				for k := range got {
					if math.Float64bits(float64(got[k])) != math.Float64bits(float64(want[k])) {
						t.Fatalf("%T mask %04b GOMAXPROCS=%d: [%d] = %v, unfused %v", got[0], mask, p, k, got[k], want[k])
					}
				}
			}
		}
	}
}

// TestConvEpilogueErrors: scale without shift, slices of the wrong length.
func TestConvEpilogueErrors(t *testing.T) {
	g := epilogueCases[2]
	g.HO, g.WO = g.H, g.W
	x, w, out := make([]float32, g.N*g.C*g.H*g.W), make([]float32, g.Cout*g.C), make([]float32, g.N*g.Cout*g.L())
	for _, ep := range []*Epilogue[float32]{
		{Scale: make([]float32, g.Cout)},
		{Scale: make([]float32, g.Cout), Shift: make([]float32, g.Cout+1)},
		{Residual: make([]float32, 3)},
	} {
		if err := ConvEpilogue(&g, gemmProduct[float32], out, x, w, nil, ep); err == nil {
			t.Errorf("%+v: no error", ep)
		}
	}
}

// TestConvEpilogueCasesRunWinograd: the last two epilogueCases are in
// Winograd's rule, so TestConvEpilogueBitwise covers its epilogue.
func TestConvEpilogueCasesRunWinograd(t *testing.T) {
	for _, g := range epilogueCases[len(epilogueCases)-2:] {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		if !winoWins(&g, ConvForward) {
			t.Errorf("%+v: not in Winograd's rule", g)
		}
	}
}
