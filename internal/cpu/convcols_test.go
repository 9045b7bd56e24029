package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// Conv's input gradient, which computes the columns of a few channels at
// a time and adds them back (inputChunk), is bitwise the whole columns'
// product followed by Col2im, over geometries with one chunk, several,
// a last partial chunk, groups, strides, dilation and padding, for
// GOMAXPROCS 1, 2 and 4.
func TestConvInputChunksMatchWholeColumns(t *testing.T) {
	geoms := []ConvGeom{
		{N: 2, C: 16, H: 56, W: 56, Cout: 8, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 24, H: 40, W: 41, Cout: 10, Groups: 2, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 1, DH: 2, DW: 1},
		{N: 3, C: 3, H: 64, W: 63, Cout: 8, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 1, C: 2, H: 120, W: 120, Cout: 3, Groups: 1, KH: 7, KW: 7, SH: 1, SW: 1, PH: 3, PW: 3, DH: 1, DW: 1}, // a channel over the slab
		{N: 2, C: 5, H: 9, W: 7, Cout: 4, Groups: 1, KH: 2, KW: 3, SH: 2, SW: 1, PH: 4, PW: 3, DH: 1, DW: 2},
		{N: 2, C: 8, H: 6, W: 7, Cout: 5, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1}, // pointwise
		{N: 0, C: 3, H: 5, W: 5, Cout: 4, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	}
	for _, g := range geoms {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		t.Run(fmt.Sprintf("%+v/chunk=%d", g, inputChunk(&g)), func(t *testing.T) {
			checkConvInput[float32](t, &g)
			checkConvInput[float64](t, &g)
		})
	}
}

func checkConvInput[T float32 | float64](t *testing.T, g *ConvGeom) {
	r := rand.New(rand.NewPCG(9, uint64(g.C*g.H*g.W)))
	rnd := func(n int) []T {
		s := make([]T, n)
		for i := range s {
			s[i] = T(r.NormFloat64())
		}
		return s
	}
	chw, l, rows, cog := g.C*g.H*g.W, g.L(), g.Rows(), g.Cout/g.Groups
	gr, w := rnd(g.N*g.Cout*l), rnd(g.Cout*rows)
	// The whole columns of each sample, then Col2im.
	want := make([]T, g.N*chw)
	cols := make([]T, g.C*g.K()*l)
	for n := 0; n < g.N; n++ {
		for gi := 0; gi < g.Groups; gi++ {
			gn := gr[(n*g.Cout+gi*cog)*l:]
			if err := gemmProduct(true, false, rows, l, cog, w[gi*cog*rows:], rows, gn, l, 0, cols[gi*rows*l:], l); err != nil {
				t.Fatal(err)
			}
		}
		if g.Pointwise() {
			copy(want[n*chw:], cols)
			continue
		}
		Col2im(g, cols, want[n*chw:(n+1)*chw])
	}
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		got := make([]T, len(want))
		if err := Conv(g, ConvInput, gemmProduct[T], got, gr, w, nil); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
				t.Fatalf("GOMAXPROCS %d: dx[%d] = %v, whole columns %v", procs, i, got[i], want[i])
			}
		}
	}
}

// Conv's forward member, which builds the columns of a few output rows
// at a time (forwardRows), is bitwise the whole columns' products, bias
// or not, over one block, several, a last partial block, groups, strides,
// dilation and padding, for GOMAXPROCS 1, 2 and 4.
func TestConvForwardRowBlocksMatchWholeColumns(t *testing.T) {
	geoms := []ConvGeom{
		{N: 2, C: 16, H: 120, W: 120, Cout: 8, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 24, H: 100, W: 101, Cout: 10, Groups: 2, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 1, DH: 2, DW: 1},
		{N: 3, C: 3, H: 230, W: 229, Cout: 8, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 5, H: 9, W: 7, Cout: 4, Groups: 1, KH: 2, KW: 3, SH: 2, SW: 1, PH: 4, PW: 3, DH: 1, DW: 2},
		{N: 2, C: 5, H: 11, W: 1, Cout: 3, Groups: 1, KH: 3, KW: 1, SH: 1, SW: 1, PH: 1, PW: 0, DH: 1, DW: 1},
		{N: 2, C: 8, H: 6, W: 7, Cout: 5, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1}, // pointwise
		{N: 0, C: 3, H: 5, W: 5, Cout: 4, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	}
	for _, g := range geoms {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		t.Run(fmt.Sprintf("%+v/rows=%d", g, forwardRows(&g)), func(t *testing.T) {
			checkConvForward[float32](t, &g)
			checkConvForward[float64](t, &g)
		})
	}
}

func checkConvForward[T float32 | float64](t *testing.T, g *ConvGeom) {
	r := rand.New(rand.NewPCG(13, uint64(g.C*g.H*g.W)))
	rnd := func(n int) []T {
		s := make([]T, n)
		for i := range s {
			s[i] = T(r.NormFloat64())
		}
		return s
	}
	chw, l, rows, cog := g.C*g.H*g.W, g.L(), g.Rows(), g.Cout/g.Groups
	x, w, bias := rnd(g.N*chw), rnd(g.Cout*rows), rnd(g.Cout)
	want := make([]T, g.N*g.Cout*l)
	cols := make([]T, g.C*g.K()*l)
	for n := 0; n < g.N; n++ {
		src := x[n*chw : (n+1)*chw]
		if !g.Pointwise() {
			Im2col(g, src, cols)
			src = cols
		}
		dst := want[n*g.Cout*l : (n+1)*g.Cout*l]
		for gi := 0; gi < g.Groups; gi++ {
			if err := gemmProduct(false, false, cog, l, rows, w[gi*cog*rows:], rows, src[gi*rows*l:], l, 0, dst[gi*cog*l:], l); err != nil {
				t.Fatal(err)
			}
		}
	}
	withBias := append([]T(nil), want...)
	AddChannelBias(withBias, bias, withBias, g.N, g.Cout, l)
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, b := range [][]T{nil, bias} {
			got, ref := rnd(len(want)), want // got: garbage the products overwrite
			if b != nil {
				ref = withBias
			}
			if err := Conv(g, ConvForward, gemmProduct[T], got, x, w, b); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float64bits(float64(got[i])) != math.Float64bits(float64(ref[i])) {
					t.Fatalf("GOMAXPROCS %d, bias %v: out[%d] = %v, whole columns %v", procs, b != nil, i, got[i], ref[i])
				}
			}
		}
	}
}

// im2colSpan writes Im2col's columns [l0, l1), for spans that start and
// end inside output rows, cover one, several or all rows, or are empty.
func TestIm2colSpan(t *testing.T) {
	for _, g := range []ConvGeom{
		{C: 3, H: 7, W: 9, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{C: 2, H: 9, W: 8, KH: 3, KW: 2, SH: 2, SW: 3, PH: 0, PW: 1, DH: 2, DW: 1},
		{C: 2, H: 5, W: 5, KH: 2, KW: 3, SH: 1, SW: 2, PH: 4, PW: 5, DH: 1, DW: 2},
		{C: 2, H: 11, W: 1, KH: 3, KW: 1, SH: 1, SW: 1, PH: 1, PW: 0, DH: 1, DW: 1},
	} {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		r := rand.New(rand.NewPCG(5, 6))
		x := make([]float64, g.C*g.H*g.W)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		ck, l := g.C*g.K(), g.L()
		cols := make([]float64, ck*l)
		Im2col(&g, x, cols)
		for _, s := range [][2]int{{0, l}, {0, 1}, {1, l}, {l - 1, l}, {l / 3, 2 * l / 3}, {g.WO - 1, g.WO + 1}, {2, 2}} {
			l0, l1 := s[0], s[1]
			span := make([]float64, ck*(l1-l0))
			for i := range span {
				span[i] = math.NaN() // every element must be written
			}
			im2colSpan(&g, x, span, l0, l1)
			for row := 0; row < ck; row++ {
				for j := l0; j < l1; j++ {
					if got, want := span[row*(l1-l0)+j-l0], cols[row*l+j]; math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("%+v [%d, %d): cols[%d, %d] = %v, Im2col %v", g, l0, l1, row, j, got, want)
					}
				}
			}
		}
	}
}

// Conv's weight gradient, which builds the columns of a few output
// positions at a time (weightSpan) and splits the product along k at
// multiples of its K block, is bitwise the products on the whole
// columns, samples summed in order, over one span, several, a partial
// last one, groups, strides, padding, the pointwise case and empty, for
// GOMAXPROCS 1, 2 and 4.
func TestConvWeightSpansMatchWholeColumns(t *testing.T) {
	geoms := []ConvGeom{
		{N: 2, C: 64, H: 20, W: 20, Cout: 8, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, C: 24, H: 30, W: 31, Cout: 10, Groups: 2, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 1, DH: 2, DW: 1},
		{N: 3, C: 3, H: 100, W: 99, Cout: 8, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 5, H: 9, W: 7, Cout: 4, Groups: 1, KH: 2, KW: 3, SH: 2, SW: 1, PH: 4, PW: 3, DH: 1, DW: 2},
		{N: 2, C: 8, H: 6, W: 7, Cout: 5, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1}, // pointwise
		{N: 0, C: 3, H: 5, W: 5, Cout: 4, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	}
	for _, g := range geoms {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		t.Run(fmt.Sprintf("%+v/span=%d,%d", g, weightSpan(&g, blockK[float32]()), weightSpan(&g, blockK[float64]())), func(t *testing.T) {
			checkConvWeight[float32](t, &g)
			checkConvWeight[float64](t, &g)
		})
	}
}

func checkConvWeight[T float32 | float64](t *testing.T, g *ConvGeom) {
	r := rand.New(rand.NewPCG(11, uint64(g.C*g.H*g.W)))
	rnd := func(n int) []T {
		s := make([]T, n)
		for i := range s {
			s[i] = T(r.NormFloat64())
		}
		return s
	}
	chw, l, rows, cog := g.C*g.H*g.W, g.L(), g.Rows(), g.Cout/g.Groups
	x, gr := rnd(g.N*chw), rnd(g.N*g.Cout*l)
	want := rnd(g.Cout * rows) // kept as is when there is no sample
	cols := make([]T, g.C*g.K()*l)
	for n := 0; n < g.N; n++ {
		src := x[n*chw : (n+1)*chw]
		if !g.Pointwise() {
			Im2col(g, src, cols)
			src = cols
		}
		for gi := 0; gi < g.Groups; gi++ {
			gn := gr[(n*g.Cout+gi*cog)*l:]
			if err := gemmProduct(false, true, cog, rows, l, gn, l, src[gi*rows*l:], l, T(min(n, 1)), want[gi*cog*rows:], rows); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		got := append([]T(nil), want...)
		if g.N > 0 {
			got = rnd(len(want)) // garbage the first sample overwrites
		}
		if err := Conv(g, ConvWeight, gemmProduct[T], got, x, gr, nil); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
				t.Fatalf("GOMAXPROCS %d: dw[%d] = %v, whole columns %v", procs, i, got[i], want[i])
			}
		}
	}
}
