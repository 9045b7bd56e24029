//go:build linux && amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestGridChannelsLastGuarded: GridSample's channels-last kernels (S, S2,
// T, T2, O; C a multiple of 8) equal the Go loops bitwise over random
// sizes (empty ones too), paddings, masks and members, for GOMAXPROCS 1,
// 2, 3 and 8, with every input and output against a guard page and the
// S and T outputs filled with garbage first (they must write every element).
func TestGridChannelsLastGuarded(t *testing.T) {
	if !gridAVX2 {
		t.Skip("no AVX2")
	}
	defer func(p int) { runtime.GOMAXPROCS(p); gridAVX2 = true }(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(21, 22))
	for iter := 0; iter < 400; iter++ {
		g := &GridSampleGeom{N: r.IntN(4), C: 8 * r.IntN(4), H: r.IntN(13), W: r.IntN(22), HO: r.IntN(11), WO: r.IntN(14),
			Padding: GridPadding(r.IntN(3)), AlignCorners: r.IntN(2) == 0}
		if iter%10 == 0 {
			// Pixel ranges (gridCLParts): few units, many pixels.
			g.N, g.C, g.HO, g.WO = 1+r.IntN(2), 8, 20+r.IntN(30), 25+r.IntN(30)
		}
		tail := iter%2 == 0
		nx, np, npix := g.N*g.C*g.H*g.W, g.N*g.C*g.HO*g.WO, g.N*g.HO*g.WO
		x, f1 := guarded[float32](t, nx, tail)
		gr, f2 := guarded[float32](t, np, tail)
		grid, f3 := guarded[float32](t, 2*npix, tail)
		m1, f4 := guarded[float32](t, npix, tail)
		m2, f5 := guarded[float32](t, npix, tail)
		copy(x, randNormal[float32](r, nx))
		copy(gr, randNormal[float32](r, np))
		copy(grid, gridTestPoints(r, g))
		for i := range m1 {
			m1[i], m2[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		a, b := r.IntN(2), r.IntN(2)
		var mask []float32
		if r.IntN(2) == 0 {
			mask = m1
		}
		ops := map[string]func(out []float32){
			"S":  func(out []float32) { GridSampleS(g, a, b, x, grid, mask, out) },
			"S2": func(out []float32) { GridSampleS2(g, 0, 0, x, grid, m1, m2, out) },
			"T":  func(out []float32) { GridSampleT(g, a, b, gr, grid, mask, out) },
			"T2": func(out []float32) { GridSampleT2(g, 0, 0, gr, grid, m1, m2, out) },
			"O":  func(out []float32) { GridSampleO(g, a, 0, x, grid, gr, mask, out) },
		}
		sizes := map[string]int{"S": np, "S2": np, "T": nx, "T2": nx, "O": 2 * npix}
		for name, op := range ops {
			var ref []float32
			for _, avx := range []bool{false, true} {
				for _, procs := range []int{1, 2, 3, 8} {
					if !avx && procs != 1 {
						continue
					}
					gridAVX2 = avx
					runtime.GOMAXPROCS(procs)
					out, free := guarded[float32](t, sizes[name], tail)
					if name != "O" {
						for i := range out {
							out[i] = float32(math.NaN())
						}
					}
					op(out)
					got := append([]float32(nil), out...)
					free()
					if ref == nil {
						ref = got
						continue
					}
					if i, ok := gridSameBits(got, ref); !ok {
						t.Fatalf("%s %+v member %d,%d mask %v avx %v procs %d: element %d: %v, want %v", name, *g, a, b, mask != nil, avx, procs, i, got[i], ref[i])
					}
				}
			}
		}
		gridAVX2 = true
		f1()
		f2()
		f3()
		f4()
		f5()
	}
	_ = fmt.Sprint
}
