//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
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
