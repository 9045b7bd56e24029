package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// convBlockGeoms cover the corners of the columns' layout (strides,
// dilation, padding larger than the kernel, groups, odd sizes, width 1,
// a pointwise kernel, an empty batch) and sizes where Conv's members
// work on several blocks of columns, the last one partial: forwardRows,
// weightSpan and inputChunk are named in each subtest.
var convBlockGeoms = []ConvGeom{
	{N: 2, C: 16, H: 120, W: 120, Cout: 8, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 2, C: 64, H: 20, W: 20, Cout: 8, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
	{N: 1, C: 24, H: 100, W: 101, Cout: 10, Groups: 2, KH: 3, KW: 3, SH: 1, SW: 1, PH: 2, PW: 1, DH: 2, DW: 1},
	{N: 2, C: 32, H: 41, W: 39, Cout: 6, Groups: 2, KH: 3, KW: 3, SH: 2, SW: 1, PH: 1, PW: 2, DH: 1, DW: 2},
	{N: 2, C: 3, H: 230, W: 229, Cout: 8, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
	{N: 1, C: 2, H: 120, W: 120, Cout: 3, Groups: 1, KH: 7, KW: 7, SH: 1, SW: 1, PH: 3, PW: 3, DH: 1, DW: 1}, // a channel's columns over the slab
	{N: 2, C: 5, H: 9, W: 7, Cout: 4, Groups: 1, KH: 2, KW: 3, SH: 2, SW: 1, PH: 4, PW: 3, DH: 1, DW: 2},
	{N: 2, C: 6, H: 5, W: 5, Cout: 9, Groups: 3, KH: 2, KW: 3, SH: 1, SW: 2, PH: 4, PW: 5, DH: 1, DW: 2},
	{N: 2, C: 5, H: 11, W: 1, Cout: 3, Groups: 1, KH: 3, KW: 1, SH: 1, SW: 1, PH: 1, PW: 0, DH: 1, DW: 1},
	{N: 2, C: 8, H: 6, W: 7, Cout: 5, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 0, PW: 0, DH: 1, DW: 1},
	{N: 0, C: 3, H: 5, W: 5, Cout: 4, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
}

// Each member of Conv's product path (convGEMM: narrow groups, which Conv
// hands to the direct kernels, are among these geometries), which builds
// or adds back its columns a block at a time, is bitwise the products on
// a sample's whole columns (Im2col, Col2im), bias or not, for GOMAXPROCS
// 1, 2 and 4.
func TestConvBlocksMatchWholeColumns(t *testing.T) {
	for _, g := range convBlockGeoms {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		name := fmt.Sprintf("%+v/rows=%d,span=%d,%d,chunk=%d,inrows=%d", g, forwardRows(&g),
			weightSpan(&g, blockK[float32]()), weightSpan(&g, blockK[float64]()), inputChunk(&g), inputRows(&g))
		t.Run(name, func(t *testing.T) {
			withAVX2(t, &avgAVX2, func(t *testing.T) { // Col2im's sums
				checkConvBlocks[float32](t, &g)
				checkConvBlocks[float64](t, &g)
			})
		})
	}
}

func checkConvBlocks[T float32 | float64](t *testing.T, g *ConvGeom) {
	r := rand.New(rand.NewPCG(9, uint64(g.C*g.H*g.W)))
	rnd := func(n int) []T { return normals[T](r, n) }
	chw, l, rows, cog := g.C*g.H*g.W, g.L(), g.Rows(), g.Cout/g.Groups
	x, w, gr, bias := rnd(g.N*chw), rnd(g.Cout*rows), rnd(g.N*g.Cout*l), rnd(g.Cout)
	// The old way: per sample the whole columns, one product per group.
	fwd, dw, dx := make([]T, g.N*g.Cout*l), rnd(len(w)), make([]T, g.N*chw)
	cols := make([]T, g.C*g.K()*l)
	for n := 0; n < g.N; n++ {
		src := x[n*chw : (n+1)*chw]
		if !g.Pointwise() {
			Im2col(g, src, cols)
			src = cols
		}
		for gi := 0; gi < g.Groups; gi++ {
			wg, gn, sg := w[gi*cog*rows:], gr[(n*g.Cout+gi*cog)*l:], src[gi*rows*l:]
			must(t, gemmProduct(false, false, cog, l, rows, wg, rows, sg, l, 0, fwd[(n*g.Cout+gi*cog)*l:], l))
			must(t, gemmProduct(false, true, cog, rows, l, gn, l, sg, l, T(min(n, 1)), dw[gi*cog*rows:], rows))
			must(t, gemmProduct(true, false, rows, l, cog, wg, rows, gn, l, 0, cols[gi*rows*l:], l))
		}
		if g.Pointwise() {
			copy(dx[n*chw:], cols[:chw])
			continue
		}
		Col2im(g, cols, dx[n*chw:(n+1)*chw])
	}
	fwdBias := append([]T(nil), fwd...)
	AddChannelBias(fwdBias, bias, fwdBias, g.N, g.Cout, l)
	for _, c := range []struct {
		name       string
		mode       ConvMode
		a, w, bias []T
		want       []T
		garbage    bool // whether out's old values must not matter
	}{
		{"forward", ConvForward, x, w, nil, fwd, true},
		{"forward+bias", ConvForward, x, w, bias, fwdBias, true},
		{"weight", ConvWeight, x, gr, nil, dw, g.N > 0},
		{"input", ConvInput, gr, w, nil, dx, false}, // adds into a cleared out
	} {
		old := runtime.GOMAXPROCS(1)
		for _, procs := range []int{1, 2, 4} {
			runtime.GOMAXPROCS(procs)
			got := make([]T, len(c.want))
			switch {
			case c.garbage:
				got = rnd(len(c.want))
			case c.mode == ConvWeight: // no sample: out is left as it is
				copy(got, c.want)
			}
			must(t, convGEMM(g, c.mode, gemmProduct[T], got, c.a, c.w, c.bias))
			for i := range got {
				if math.Float64bits(float64(got[i])) != math.Float64bits(float64(c.want[i])) {
					t.Fatalf("%s, GOMAXPROCS %d: out[%d] = %v, whole columns %v", c.name, procs, i, got[i], c.want[i])
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// normals is n standard normal values.
func normals[T float32 | float64](r *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(r.NormFloat64())
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// im2colSpan writes Im2col's columns [l0, l1), for spans that start and
// end inside output rows, cover one, several or all rows, or are empty.
func TestIm2colSpan(t *testing.T) {
	for _, g := range convBlockGeoms[5:9] {
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		x := normals[float64](rand.New(rand.NewPCG(5, 6)), g.C*g.H*g.W)
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

// sameWidthGeoms are stride-1 geometries of c channels whose output width
// is the input's (shiftedRow's): kernels, paddings and dilations that
// keep the width, some of them shortening the height, width 1, height 1.
func sameWidthGeoms(t *testing.T, c int) []ConvGeom {
	var gs []ConvGeom
	for _, s := range [][5]int{{14, 14, 3, 1, 1}, {7, 9, 5, 2, 1}, {6, 11, 3, 2, 2}, {5, 1, 3, 1, 1}, {1, 6, 3, 1, 1}, {9, 4, 1, 0, 1}, {8, 5, 7, 3, 1}} {
		g := ConvGeom{N: 1, C: c, H: s[0], W: s[1], Cout: 1, Groups: 1, KH: s[2], KW: s[2], SH: 1, SW: 1, PH: s[3], PW: s[3], DH: s[4], DW: s[4]}
		g.HO, _ = OutSize(g.H, g.KH, g.SH, g.PH, g.DH)
		g.WO, _ = OutSize(g.W, g.KW, g.SW, g.PW, g.DW)
		if g.WO != g.W {
			t.Fatalf("%+v: WO %d != W", g, g.WO)
		}
		gs = append(gs, g)
	}
	return gs
}

// TestShiftedRow: stride-1 "same"-width column rows written as one
// shifted copy (shiftedRow) equal im2colRow's row by row copies, bitwise,
// for kernels, paddings and dilations that leave the width (and some
// that do not shorten the height alike), over spans that cut rows.
func TestShiftedRow(t *testing.T) {
	for _, g := range sameWidthGeoms(t, 2) {
		c := g
		x := normals[float32](rand.New(rand.NewPCG(7, 8)), g.C*g.H*g.W)
		l := g.L()
		for _, s := range [][2]int{{0, l}, {0, 1}, {1, l}, {l - 1, l}, {l / 3, 2 * l / 3}, {g.WO - 1, g.WO + 1}} {
			l0, l1 := s[0], min(s[1], l)
			colRows(&g, x, func(plane []float32, r, y0, x0, wlo, whi int) {
				got, want := make([]float32, l1-l0), make([]float32, l1-l0)
				for i := range got {
					got[i], want[i] = float32(math.NaN()), float32(math.NaN())
				}
				shiftedRow(got, plane, &g, l0, y0, x0, wlo, whi)
				im2colRow(want, plane, &g, l0, y0, x0, wlo, whi)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						// Errorf, not Fatalf: colRows may call this on a worker goroutine.
						t.Errorf("%+v [%d, %d) row %d: position %d = %v, want %v", c, l0, l1, r, l0+i, got[i], want[i])
						return
					}
				}
			})
			if t.Failed() {
				return
			}
		}
	}
}

// TestCol2imShifted: the one-run Col2im of stride-1 same-width
// geometries equals col2imOf bitwise into a cleared dx, with ±0, NaN and
// infinities among the columns.
func TestCol2imShifted(t *testing.T) {
	for _, g := range sameWidthGeoms(t, 3) {
		c := g
		cols := normals[float32](rand.New(rand.NewPCG(3, 4)), g.C*g.K()*g.L())
		for i := 0; i < len(cols); i += 13 {
			cols[i] = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN())}[i%4]
		}
		for _, ch := range [][2]int{{0, 3}, {1, 2}} {
			want, got := make([]float32, g.C*g.H*g.W), make([]float32, g.C*g.H*g.W)
			col2imOf(&g, cols[ch[0]*g.K()*g.L():], want, ch[0], ch[1])
			col2imShiftedOf(&g, slices.Clone(cols[ch[0]*g.K()*g.L():]), got, ch[0], ch[1])
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%+v channels %v: dx[%d] = %v, col2imOf %v", c, ch, i, got[i], want[i])
				}
			}
		}
	}
}

// addTo is axpy with alpha 1, bitwise, at every length around the AVX2
// blocks (4 and 1 registers, the Go tail), NaN, infinities and signed
// zeros included, with the AVX2 kernel and without.
func TestAddTo(t *testing.T) {
	withAVX2(t, &avgAVX2, func(t *testing.T) {
		testAddTo[float32](t)
		testAddTo[float64](t)
	})
}

func testAddTo[T float32 | float64](t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	special := []T{T(math.NaN()), T(math.Inf(1)), T(math.Inf(-1)), T(math.Copysign(0, -1)), 0}
	for n := 0; n <= 70; n++ {
		x, y := normals[T](r, n+3), normals[T](r, n+3)
		for i := 0; i < n; i += 7 {
			x[i], y[(i+3)%(n+3)] = special[i%len(special)], special[(i/7)%len(special)]
		}
		want := append([]T(nil), y...)
		axpy(1, x[:n], want)
		got := append([]T(nil), y...)
		addTo(x[:n], got)
		for i := range got {
			if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
				t.Fatalf("n=%d: y[%d] = %v, axpy %v", n, i, got[i], want[i])
			}
		}
	}
}
