package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// convBenchShapes are the dense Conv2d shapes of issue 26 (per sample):
// ResNet's 3×3 64 → 64 at 56×56, 3×3 256 → 256 at 14×14 (and at 64×64,
// a detector head's tower on P3 of a 512×512 image), the 1×1
// 256 → 1024 at 14×14 and the 7×7 stride-2 stem 3 → 64 at 224×224.
var convBenchShapes = []struct {
	name string
	g    ConvGeom
}{
	{"3x3-64-56", ConvGeom{C: 64, H: 56, W: 56, Cout: 64, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 56, WO: 56}},
	{"3x3-256-14", ConvGeom{C: 256, H: 14, W: 14, Cout: 256, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 14, WO: 14}},
	{"3x3-256-64", ConvGeom{C: 256, H: 64, W: 64, Cout: 256, Groups: 1, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, HO: 64, WO: 64}},
	{"1x1-256-1024-14", ConvGeom{C: 256, H: 14, W: 14, Cout: 1024, Groups: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, HO: 14, WO: 14}},
	{"stem-7x7s2", ConvGeom{C: 3, H: 224, W: 224, Cout: 64, Groups: 1, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3, DH: 1, DW: 1, HO: 112, WO: 112}},
}

// BenchmarkConv reports GFLOP/s of each member of Conv (forward, input
// gradient, weight gradient) at convBenchShapes, batch 1 and 8, float32
// and float64: 2·N·Cout·C/Groups·K·L flops per member, per second of
// wall time and of CPU time (GFLOP/cpu-s).
func BenchmarkConv(b *testing.B) {
	for _, s := range convBenchShapes {
		for _, n := range []int{1, 8} {
			for _, mode := range []struct {
				name string
				m    ConvMode
			}{{"forward", ConvForward}, {"input", ConvInput}, {"weight", ConvWeight}} {
				g := s.g
				g.N = n
				b.Run(fmt.Sprintf("%s/n%d/%s/float32", s.name, n, mode.name), func(b *testing.B) { benchConv[float32](b, &g, mode.m) })
				b.Run(fmt.Sprintf("%s/n%d/%s/float64", s.name, n, mode.name), func(b *testing.B) { benchConv[float64](b, &g, mode.m) })
			}
		}
	}
}

func benchConv[T float32 | float64](b *testing.B, g *ConvGeom, mode ConvMode) {
	r := rand.New(rand.NewPCG(1, 1))
	rnd := func(n int) []T { return normals[T](r, n) }
	x, w, y := g.N*g.C*g.H*g.W, g.Cout*g.Rows(), g.N*g.Cout*g.L()
	var out, a, wt []T
	switch mode {
	case ConvForward:
		out, a, wt = make([]T, y), rnd(x), rnd(w)
	case ConvInput:
		out, a, wt = make([]T, x), rnd(y), rnd(w)
	case ConvWeight:
		out, a, wt = make([]T, w), rnd(x), rnd(y)
	}
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if err := Conv(g, mode, nil, out, a, wt, nil); err != nil { // gops' own product, as nn's
			b.Fatal(err)
		}
	}
	flops := 2 * float64(g.N) * float64(g.Cout) * float64(g.Rows()) * float64(g.L())
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	// On a shared machine: flops per second of this process's CPU time,
	// a fraction of one core's peak.
	if cpu1, ok := processCPU(); ok && cpuOK && cpu1 > cpu0 {
		b.ReportMetric(flops*float64(b.N)/float64(cpu1-cpu0), "GFLOP/cpu-s")
	}
}
