//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
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
			x := make([]float32, g.N*g.C*g.H*g.W)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			grid := make([]float32, g.N*g.HO*g.WO*2)
			for i := range grid {
				grid[i] = float32(2.4*r.Float64() - 1.2)
			}
			grid[3] = float32(math.NaN())
			mask := make([]float32, g.N*g.HO*g.WO)
			for i := range mask {
				mask[i] = float32(r.NormFloat64())
			}
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
			x := make([]float32, g.N*g.C*g.H*g.W)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			gr := make([]float32, g.N*g.C*g.HO*g.WO)
			for i := range gr {
				gr[i] = float32(r.NormFloat64())
			}
			grid := make([]float32, g.N*g.HO*g.WO*2)
			for i := range grid {
				grid[i] = float32(2.4*r.Float64() - 1.2)
			}
			grid[1] = float32(math.NaN())
			mask := make([]float32, g.N*g.HO*g.WO)
			for i := range mask {
				mask[i] = float32(r.NormFloat64())
			}
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
