package cpu

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkGridSampleKernel: the float32 bilinear kernels at issue 16's
// size, input [8, 64, 64, 64], grid [8, 64, 64, 2] uniform in
// [−1.1, 1.1], zeros padding: S (GridSample), T (its input gradient) and
// O (its grid gradient), results preallocated.
func BenchmarkGridSampleKernel(b *testing.B) {
	g := &GridSampleGeom{N: 8, C: 64, H: 64, W: 64, HO: 64, WO: 64}
	r := rand.New(rand.NewPCG(1, 2))
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
		grid[i] = float32(2.2*r.Float64() - 1.1)
	}
	out := make([]float32, len(gr))
	dx := make([]float32, len(x))
	dg := make([]float32, len(grid))
	b.Run("S", func(b *testing.B) {
		for b.Loop() {
			GridSampleS(g, 0, 0, x, grid, nil, out)
		}
	})
	b.Run("T", func(b *testing.B) {
		for b.Loop() {
			clear(dx)
			GridSampleT(g, 0, 0, gr, grid, nil, dx)
		}
	})
	b.Run("O", func(b *testing.B) {
		for b.Loop() {
			clear(dg)
			GridSampleO(g, 0, 0, x, grid, gr, nil, dg)
		}
	})
	b.Run("taps", func(b *testing.B) {
		for b.Loop() {
			tapKeep[float32](false).put(gridTaps(g, 0, 0, grid, nil))
		}
	})
}
