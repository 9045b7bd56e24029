//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"
)

// TestGridGatherS: the AVX2 gather path of GridSampleS equals the Go loop
// bitwise (float32, every padding, sizes with a tail of fewer than 8
// pixels), when the CPU has AVX2.
func TestGridGatherS(t *testing.T) {
	if !gridAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(8, 9))
	for _, pad := range []GridPadding{GridZeros, GridBorder, GridReflection} {
		for _, ac := range []bool{false, true} {
			g := &GridSampleGeom{N: 2, C: 3, H: 6, W: 9, HO: 5, WO: 7, Padding: pad, AlignCorners: ac}
			x := randNormal[float32](r, g.N*g.C*g.H*g.W)
			grid := randGrid[float32](r, g.N*g.HO*g.WO*2, 1.2)
			grid[3] = float32(math.NaN())
			mask := randNormal[float32](r, g.N*g.HO*g.WO)
			for _, m := range [][]float32{nil, mask} {
				for a := 0; a < 2; a++ {
					fast, slow := make([]float32, g.N*g.C*g.HO*g.WO), make([]float32, g.N*g.C*g.HO*g.WO)
					GridSampleS(g, a, 1-a, x, grid, m, fast)
					gridAVX2 = false
					GridSampleS(g, a, 1-a, x, grid, m, slow)
					gridAVX2 = true
					for i := range fast {
						if math.Float32bits(fast[i]) != math.Float32bits(slow[i]) {
							t.Fatalf("pad %d align %t: element %d: %v (AVX2), %v (Go)", pad, ac, i, fast[i], slow[i])
						}
					}
				}
			}
		}
	}
}

// TestGridGatherO: the AVX2 path of GridSampleO equals the Go loop
// bitwise (float32; pixel counts with and without a tail of fewer than 8,
// channel counts across gridChunk, masks, every member with a grid
// gradient), for GOMAXPROCS 1 and 3.
func TestGridGatherO(t *testing.T) {
	if !gridAVX2 {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(10, 11))
	for _, sz := range [][3]int{{2, 11, 7}, {3, 19, 8}, {1, 4, 2}} {
		for _, pad := range []GridPadding{GridZeros, GridReflection} {
			g := &GridSampleGeom{N: sz[0], C: sz[1], H: 6, W: 9, HO: 5, WO: sz[2], Padding: pad}
			x := randNormal[float32](r, g.N*g.C*g.H*g.W)
			gr := randNormal[float32](r, g.N*g.C*g.HO*g.WO)
			grid := randGrid[float32](r, g.N*g.HO*g.WO*2, 1.2)
			grid[1] = float32(math.NaN())
			mask := randNormal[float32](r, g.N*g.HO*g.WO)
			for _, m := range [][]float32{nil, mask} {
				for _, ab := range [][2]int{{0, 0}, {1, 0}, {0, 1}} {
					var ref []float32
					for _, procs := range []int{1, 3} {
						for _, avx := range []bool{true, false} {
							o := make([]float32, len(grid))
							func() {
								defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
								gridAVX2 = avx
								defer func() { gridAVX2 = true }()
								GridSampleO(g, ab[0], ab[1], x, grid, gr, m, o)
							}()
							if ref == nil {
								ref = o
								continue
							}
							for i := range o {
								if math.Float32bits(o[i]) != math.Float32bits(ref[i]) {
									t.Fatalf("size %v pad %d member %v procs %d avx %t: element %d: %v, want %v", sz, pad, ab, procs, avx, i, o[i], ref[i])
								}
							}
						}
					}
				}
			}
		}
	}
}

// gridTestPoints is a float32 grid of n points: uniform in [−1.2, 1.2]²,
// with some on the borders and corners of both align_corners conventions,
// exactly on cell edges, NaN and infinite.
func gridTestPoints(r *rand.Rand, g *GridSampleGeom) []float32 {
	grid := make([]float32, g.N*g.HO*g.WO*2)
	special := []float32{-1, 1, 0, -1 - 1/float32(g.W), 1 + 1/float32(g.W), 2 / float32(g.W), float32(math.NaN()),
		float32(math.Inf(1)), float32(math.Inf(-1)), 1e30, -3}
	for i := range grid {
		grid[i] = float32(2.4*r.Float64() - 1.2)
		if r.IntN(6) == 0 {
			grid[i] = special[r.IntN(len(special))]
		}
	}
	return grid
}

// gridSameBits reports the first element where got and want differ bitwise
// (two NaNs are the same: their payloads are the hardware's choice).
func gridSameBits(got, want []float32) (int, bool) {
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			return i, false
		}
	}
	return 0, true
}

// TestGridSampleChannelsLast: the channels-last AVX2 kernels of S, S2, T,
// T2 and O (gridChannelsLast: C a multiple of 8) equal the Go loops bitwise,
// over odd sizes (rows and pixel counts with and without tails of fewer
// than 8), channel counts of 1 to 8 units, batches, points outside,
// on borders, NaN and infinite, masks, every padding and align_corners,
// every bilinear member, GOMAXPROCS 1 and 3; and C not a multiple of 8
// takes the other paths with the same results.
func TestGridSampleChannelsLast(t *testing.T) {
	if !gridAVX2 {
		t.Skip("no AVX2")
	}
	defer func() { gridAVX2 = true }()
	r := rand.New(rand.NewPCG(12, 13))
	type size struct{ n, c, h, w, ho, wo int }
	sizes := []size{{1, 8, 5, 7, 3, 5}, {2, 16, 9, 16, 8, 8}, {3, 24, 8, 13, 7, 9}, {1, 40, 17, 9, 4, 6},
		{2, 64, 11, 24, 9, 11}, {1, 32, 1, 1, 2, 4}, {2, 12, 6, 10, 5, 7}, {1, 3, 4, 9, 8, 8},
		{1, 16, 20, 20, 40, 41}, {1, 8, 3, 4, 0, 5}, {0, 8, 3, 4, 2, 5}, {1, 0, 3, 4, 2, 5}}
	for _, sz := range sizes {
		for _, pad := range []GridPadding{GridZeros, GridBorder, GridReflection} {
			for _, ac := range []bool{false, true} {
				g := &GridSampleGeom{N: sz.n, C: sz.c, H: sz.h, W: sz.w, HO: sz.ho, WO: sz.wo, Padding: pad, AlignCorners: ac}
				x := randNormal[float32](r, g.N*g.C*g.H*g.W)
				gr := randNormal[float32](r, g.N*g.C*g.HO*g.WO)
				grid := gridTestPoints(r, g)
				m1, m2 := make([]float32, g.N*g.HO*g.WO), make([]float32, g.N*g.HO*g.WO)
				for i := range m1 {
					m1[i], m2[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				}
				type kernel struct {
					name string
					n    int
					run  func(a, b int, out []float32)
				}
				kernels := []kernel{
					{"S", len(gr), func(a, b int, out []float32) { GridSampleS(g, a, b, x, grid, nil, out) }},
					{"S masked", len(gr), func(a, b int, out []float32) { GridSampleS(g, a, b, x, grid, m1, out) }},
					{"S2", len(gr), func(a, b int, out []float32) { GridSampleS2(g, a, b, x, grid, m1, m2, out) }},
					{"T", len(x), func(a, b int, out []float32) { GridSampleT(g, a, b, gr, grid, nil, out) }},
					{"T masked", len(x), func(a, b int, out []float32) { GridSampleT(g, a, b, gr, grid, m1, out) }},
					{"T2", len(x), func(a, b int, out []float32) { GridSampleT2(g, a, b, gr, grid, m1, m2, out) }},
					{"O", len(grid), func(a, b int, out []float32) { GridSampleO(g, a, b, x, grid, gr, nil, out) }},
					{"O masked", len(grid), func(a, b int, out []float32) { GridSampleO(g, a, b, x, grid, gr, m1, out) }},
				}
				for _, k := range kernels {
					for _, ab := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {1, 1}} {
						if k.name == "S2" || k.name == "T2" {
							if ab[0]+ab[1] > 0 {
								continue
							}
						}
						gridAVX2 = false
						ref := make([]float32, k.n)
						k.run(ab[0], ab[1], ref)
						gridAVX2 = true
						for _, procs := range []int{1, 3, 8} {
							got := make([]float32, k.n)
							func() {
								defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
								k.run(ab[0], ab[1], got)
							}()
							if i, ok := gridSameBits(got, ref); !ok {
								t.Fatalf("%s %v size %+v pad %d align %t procs %d: element %d: %v, want %v (Go loop)",
									k.name, ab, sz, pad, ac, procs, i, got[i], ref[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestGridTransposeBlocks: gridTranspose8's blocks against index
// arithmetic.
func TestGridTransposeBlocks(t *testing.T) {
	if !gridAVX2 {
		t.Skip("no AVX2")
	}
	src := make([]float32, 3*2*100)
	for i := range src {
		src[i] = float32(i)
	}
	nb, nk, sr, sb, sk, dr, db, dk := 3, 2, 11, 9, 300, 20, 170, 513
	dst := make([]float32, (nk-1)*dk+(nb-1)*db+7*dr+8)
	gridTransposeBlocks(dst, src, nb, nk, sr, sb, sk, dr, db, dk)
	for k := 0; k < nk; k++ {
		for b := 0; b < nb; b++ {
			for r := 0; r < 8; r++ {
				for q := 0; q < 8; q++ {
					if got, want := dst[k*dk+b*db+q*dr+r], src[k*sk+b*sb+r*sr+q]; got != want {
						t.Fatalf("block (%d, %d) [%d, %d] = %v, want %v", k, b, r, q, got, want)
					}
				}
			}
		}
	}
}

// TestGridTapLayout: the channels-last assembly reads gridTap[float32] at
// fixed offsets (i at 0, w at 8…20, 24 bytes a tap).
func TestGridTapLayout(t *testing.T) {
	var tp gridTap[float32]
	if unsafe.Offsetof(tp.i) != 0 || unsafe.Offsetof(tp.w) != 8 || unsafe.Sizeof(tp) != 24 {
		t.Fatalf("gridTap[float32]: i at %d, w at %d, size %d; the assembly expects 0, 8, 24",
			unsafe.Offsetof(tp.i), unsafe.Offsetof(tp.w), unsafe.Sizeof(tp))
	}
}
