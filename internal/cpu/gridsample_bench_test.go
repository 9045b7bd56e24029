package cpu

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkGridSampleKernel: the float32 bilinear kernels at issue 16's
// size, input [8, 64, 64, 64], grid [8, 64, 64, 2] uniform in
// [−1.1, 1.1], zeros padding: S (GridSample), T (its input gradient) and
// O (its grid gradient), results preallocated, and the taps alone; with
// the process's CPU time per call (cpu-ns/op, where measured): on a
// shared machine the wall time varies with the load, the CPU time less.
func BenchmarkGridSampleKernel(b *testing.B) {
	g := &GridSampleGeom{N: 8, C: 64, H: 64, W: 64, HO: 64, WO: 64}
	r := rand.New(rand.NewPCG(1, 2))
	x := randNormal[float32](r, g.N*g.C*g.H*g.W)
	gr := randNormal[float32](r, g.N*g.C*g.HO*g.WO)
	grid := make([]float32, g.N*g.HO*g.WO*2)
	for i := range grid {
		grid[i] = float32(2.2*r.Float64() - 1.1)
	}
	out := make([]float32, len(gr))
	dx := make([]float32, len(x))
	dg := make([]float32, len(grid))
	kernels := []benchKernel{
		{"S", func() { GridSampleS(g, 0, 0, x, grid, nil, out) }},
		{"T", func() { clear(dx); GridSampleT(g, 0, 0, gr, grid, nil, dx) }},
		{"O", func() { clear(dg); GridSampleO(g, 0, 0, x, grid, gr, nil, dg) }},
		{"taps", func() { tapScratch[float32]().Put(gridTaps(g, 0, 0, grid, nil)) }},
	}
	benchKernels(b, kernels)
}
