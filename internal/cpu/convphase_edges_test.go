package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// edgeGeom fills in g's output sizes (OutSize) or fails.
func edgeGeom(t *testing.T, g ConvGeom) ConvGeom {
	t.Helper()
	var err error
	if g.HO, err = OutSize(g.H, g.KH, g.SH, g.PH, g.DH); err != nil {
		t.Fatal(err)
	}
	if g.WO, err = OutSize(g.W, g.KW, g.SW, g.PW, g.DW); err != nil {
		t.Fatal(err)
	}
	return g
}

// edgePhasedGeoms are edge geometries for the phased paths: asymmetric
// strides, stride 3, dilation, padding wider than the kernel and than the
// image, W = 1, 1×1 images, output rows narrower than a panel (a panel
// crosses many of them), groups, column rows past one K block, positions
// past one weight span.
func edgePhasedGeoms(t *testing.T) []ConvGeom {
	gs := []ConvGeom{
		{N: 2, C: 3, H: 33, W: 35, Cout: 16, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, C: 3, H: 35, W: 33, Cout: 16, Groups: 1, KH: 3, KW: 3, SH: 2, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 2, C: 2, H: 40, W: 41, Cout: 32, Groups: 1, KH: 7, KW: 7, SH: 3, SW: 3, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 1, C: 3, H: 50, W: 47, Cout: 40, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 6, PW: 5, DH: 2, DW: 2},
		{N: 2, C: 2, H: 9, W: 7, Cout: 16, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 5, PW: 6, DH: 1, DW: 1},
		{N: 3, C: 3, H: 40, W: 1, Cout: 40, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 3, C: 3, H: 1, W: 40, Cout: 40, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 40, C: 1, H: 1, W: 1, Cout: 13, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 9, C: 1, H: 2, W: 3, Cout: 13, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 4, PW: 5, DH: 1, DW: 1},
		{N: 2, C: 3, H: 30, W: 7, Cout: 40, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 4, H: 30, W: 29, Cout: 64, Groups: 2, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 6, H: 21, W: 23, Cout: 99, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 3, H: 23, W: 21, Cout: 64, Groups: 1, KH: 7, KW: 5, SH: 2, SW: 2, PH: 2, PW: 4, DH: 1, DW: 2},
		{N: 2, C: 3, H: 240, W: 230, Cout: 64, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 2, C: 2, H: 31, W: 45, Cout: 24, Groups: 1, KH: 5, KW: 7, SH: 3, SW: 2, PH: 2, PW: 4, DH: 2, DW: 3},
		{N: 2, C: 2, H: 44, W: 43, Cout: 26, Groups: 2, KH: 7, KW: 7, SH: 2, SW: 3, PH: 1, PW: 8, DH: 1, DW: 2},
		{N: 1, C: 3, H: 17, W: 16, Cout: 1, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
	}
	for i := range gs {
		gs[i] = edgeGeom(t, gs[i])
	}
	return gs
}

func phasedName(g ConvGeom) string {
	return fmt.Sprintf("%dx%dx%dx%d-%d-k%dx%d-s%dx%d-p%dx%d-d%dx%d-g%d", g.N, g.C, g.H, g.W, g.Cout, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.Groups)
}

// TestPhasedEdges: convForwardPhased and convWeightPhased bitwise
// against convGEMMWith on edgePhasedGeoms (and Conv itself, through its
// dispatch, against convGEMMWith), float32 and float64, GOMAXPROCS 1-3.
func TestPhasedEdges(t *testing.T) {
	for _, g := range edgePhasedGeoms(t) {
		t.Run(phasedName(g), func(t *testing.T) {
			t.Logf("gates: forward float32 %v float64 %v, weight float32 %v float64 %v",
				phasedForwards[float32](&g), phasedForwards[float64](&g), phasedWeights[float32](&g), phasedWeights[float64](&g))
			testConvForwardWith[float32](t, g, convForwardPhased[float32])
			testConvForwardWith[float64](t, g, convForwardPhased[float64])
			testConvWeightPhased[float32](t, g)
			testConvWeightPhased[float64](t, g)
			phasedDispatch[float32](t, g)
			phasedDispatch[float64](t, g)
		})
	}
}

// phasedDispatch: Conv's ConvForward and ConvWeight (nil product,
// whatever path the gates pick) bitwise convGEMMWith's, with -0, NaN and
// ±Inf in the input.
func phasedDispatch[T float32 | float64](t *testing.T, g ConvGeom) {
	r := rand.New(rand.NewPCG(7, uint64(g.W)))
	x, w, gr := normals[T](r, g.N*g.C*g.H*g.W), normals[T](r, g.Cout*g.Rows()), normals[T](r, g.N*g.Cout*g.L())
	for i := 0; i < len(x); i += 7 {
		x[i] = T(math.Copysign(0, -1))
	}
	x[r.IntN(len(x))] = T(math.NaN())
	x[r.IntN(len(x))] = T(math.Inf(-1))
	same := func(a, b T) bool {
		return a == b && math.Signbit(float64(a)) == math.Signbit(float64(b)) || a != a && b != b
	}
	for _, mode := range []ConvMode{ConvForward, ConvWeight} {
		if directConv(&g) || mode == ConvForward && !phasedForwards[T](&g) || mode == ConvWeight && !phasedWeights[T](&g) {
			continue // another path, not bitwise convGEMMWith's
		}
		a, b, n := x, w, g.N*g.Cout*g.L()
		if mode == ConvWeight {
			a, b, n = x, gr, g.Cout*g.Rows()
		}
		want := make([]T, n)
		if err := convGEMMWith(&g, mode, nil, want, a, b, nil, nil); err != nil {
			t.Fatal(err)
		}
		for _, procs := range []int{1, 2, 3} {
			got := make([]T, n)
			for i := range got {
				got[i] = T(math.NaN())
			}
			old := runtime.GOMAXPROCS(procs)
			err := Conv(&g, mode, nil, got, a, b, nil)
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, same) {
				i := 0
				for i = range got {
					if !same(got[i], want[i]) {
						break
					}
				}
				t.Fatalf("mode %v GOMAXPROCS %d: Conv differs from convGEMMWith at %d: %v, want %v", mode, procs, i, got[i], want[i])
			}
		}
	}
}

// TestPhasedEmptyBatch: an empty batch (N = 0) of a geometry whose
// weight gradient the phased gate takes: Conv must not panic, and must
// give what convGEMMWith gives.
func TestPhasedEmptyBatch(t *testing.T) {
	g := edgeGeom(t, ConvGeom{N: 0, C: 3, H: 32, W: 32, Cout: 64, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1})
	for _, mode := range []ConvMode{ConvForward, ConvWeight} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			n := 0
			if mode == ConvWeight {
				n = g.Cout * g.Rows()
			}
			want, got := make([]T32, n), make([]T32, n)
			if err := convGEMMWith(&g, mode, nil, want, nil, make([]T32, g.Cout*g.Rows()*b2i(mode == ConvForward)), nil, nil); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if e := recover(); e != nil {
						t.Fatalf("gates forward %v weight %v: Conv panicked: %v", phasedForwards[T32](&g), phasedWeights[T32](&g), e)
					}
				}()
				if err := Conv(&g, mode, nil, got, nil, make([]T32, g.Cout*g.Rows()*b2i(mode == ConvForward)), nil); err != nil {
					t.Fatal(err)
				}
			}()
			if !slices.Equal(got, want) {
				t.Fatalf("Conv %v, convGEMMWith %v", got[:4], want[:4])
			}
		})
	}
}

type T32 = float32

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPadPlanesPhased: padBorders and padPlanes (phaseRow, evens) on
// planes full of NaN against a plain per-element reference for strides 1
// to 4, paddings 0 to 9 (rows 0 to 2) and widths 1 to 40: every element of
// the layout, the padding's +0 included (padBorders clears every element
// padPlanes does not write).
func TestPadPlanesPhased(t *testing.T) {
	testReviewPadPlanes[float32](t)
	testReviewPadPlanes[float64](t)
}

func testReviewPadPlanes[T Float](t *testing.T) {
	for sw := 1; sw <= 4; sw++ {
		for pw := 0; pw <= 9; pw++ {
			for w := 1; w <= 40; w++ {
				g := ConvGeom{N: 1, C: 2, H: 2, W: w, Cout: 1, Groups: 1, KH: 1, KW: 1, SH: 1, SW: sw, PH: pw % 3, PW: pw, DH: 1, DW: 1}
				p := inputLayout(&g)
				src := make([]T, g.C*g.H*g.W)
				for i := range src {
					src[i] = T(i + 1)
				}
				src[0] = T(math.Copysign(0, -1))
				dst := make([]T, g.C*p.plane())
				for i := range dst {
					dst[i] = T(math.NaN())
				}
				padBorders(&g, p, dst)
				padPlanes(&g, p, src, dst)
				for c := 0; c < g.C; c++ {
					for y := 0; y < p.rows; y++ {
						for ph := 0; ph < p.stride; ph++ {
							for i := 0; i < p.width; i++ {
								col, yy := i*p.stride+ph-pw, y-g.PH
								want := T(0)
								if yy >= 0 && yy < g.H && col >= 0 && col < g.W {
									want = src[c*g.H*g.W+yy*g.W+col]
								}
								got := dst[c*p.plane()+y*p.row()+ph*p.width+i]
								if got != want || math.Signbit(float64(got)) != math.Signbit(float64(want)) {
									t.Fatalf("sw %d ph %d pw %d w %d: plane %d row %d phase %d [%d] = %v, want %v", sw, g.PH, pw, w, c, y, ph, i, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestCol2imAddEvens: Col2im at stride 2 with addEvens (AVX2) gives
// the Go loop's bits (avgAVX2 off), with NaNs of distinct payloads in both
// the columns and dx (the sum's NaN is the one Go's += keeps), −0 in both,
// and odd widths, padding and dilation, so that rows end mid-block.
func TestCol2imAddEvens(t *testing.T) {
	if !avgAVX2 {
		t.Skip("no AVX2")
	}
	testReviewCol2imAddEvens[float32](t)
	testReviewCol2imAddEvens[float64](t)
}

func testReviewCol2imAddEvens[T Float](t *testing.T) {
	old := avgAVX2
	defer func() { avgAVX2 = old }()
	bits := func(v T) uint64 {
		if f, ok := any(v).(float32); ok {
			return uint64(math.Float32bits(f))
		}
		return math.Float64bits(float64(v))
	}
	nan := func(payload uint64, neg bool) T {
		var z T
		if _, ok := any(z).(float32); ok {
			b := uint32(0x7fc00000) | uint32(payload&0x3fffff)
			if neg {
				b |= 1 << 31
			}
			return T(math.Float32frombits(b))
		}
		b := uint64(0x7ff8000000000000) | payload&0x7ffffffffffff
		if neg {
			b |= 1 << 63
		}
		return T(math.Float64frombits(b))
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, base := range []ConvGeom{
		{N: 1, C: 3, H: 9, W: 37, Cout: 1, Groups: 1, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1},
		{N: 1, C: 2, H: 11, W: 64, Cout: 1, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1},
		{N: 1, C: 2, H: 8, W: 50, Cout: 1, Groups: 1, KH: 3, KW: 5, SH: 1, SW: 2, PH: 4, PW: 7, DH: 2, DW: 3},
		{N: 1, C: 1, H: 5, W: 2, Cout: 1, Groups: 1, KH: 1, KW: 1, SH: 2, SW: 2, PH: 0, PW: 0, DH: 1, DW: 1},
		{N: 1, C: 1, H: 3, W: 33, Cout: 1, Groups: 1, KH: 1, KW: 2, SH: 2, SW: 2, PH: 0, PW: 0, DH: 1, DW: 1},
	} {
		g := edgeGeom(t, base)
		cols := make([]T, g.C*g.K()*g.L())
		dx0 := make([]T, g.C*g.H*g.W)
		fill := func(s []T) {
			for i := range s {
				switch r.IntN(8) {
				case 0:
					s[i] = nan(r.Uint64(), r.IntN(2) == 0)
				case 1:
					s[i] = T(math.Copysign(0, -1))
				case 2:
					s[i] = T(math.Inf(2*r.IntN(2) - 1))
				default:
					s[i] = T(r.NormFloat64())
				}
			}
		}
		fill(cols)
		fill(dx0)
		var got [2][]T
		for i, on := range []bool{false, true} {
			avgAVX2 = on
			got[i] = slices.Clone(dx0)
			Col2im(&g, cols, got[i])
		}
		for i := range got[0] {
			if bits(got[0][i]) != bits(got[1][i]) {
				t.Fatalf("%s: dx[%d] = %v (%#x) with AVX2, %v (%#x) without", phasedName(g), i, got[1][i], bits(got[1][i]), got[0][i], bits(got[0][i]))
			}
		}
	}
}
