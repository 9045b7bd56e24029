package gops_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The benchmarks' shared harness, and RoIPool and PSRoIAlign at the sizes of
// scripts/bench_torchvision.py:
// RoIPool on RoIAlign's [2, 256, 50, 68] feature map with 512 boxes (the
// data of roialign_bench_test.go); PSRoIAlign on [2, 490, 50, 68] (10
// output channels per 7x7 bin) with 256 boxes and 2x2 samples per bin. Both
// 7x7, spatial scale 1/16, float32.
const (
	benchPSC, benchPSK = 490, 256
)

var (
	benchPoolOpts = gops.RoIPoolOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16}
	benchPSOpts   = gops.PSRoIAlignOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16, SamplingRatio: 2}
)

// poolBenchGraph builds out = op(x, boxes) and, with backward, dx =
// ad.VJP(out, G, x), on a TapeMachine: the work of torchvision's forward plus
// out.backward(G). It returns the machine and where the result of the last
// node of interest (out or dx) is read to.
func poolBenchGraph[T cpu.Float](tb testing.TB, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), d roiAlignBenchData[T], c int, backward bool) (gorgonia.VM, *gorgonia.Value) {
	tb.Helper()
	dt := benchDtype[T]()
	g := gorgonia.NewGraph()
	xs := []int{benchN, c, benchH, benchW}
	x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(xs...), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(xs...), tensor.WithBacking(d.x))))
	k := len(d.boxes) / 5
	boxes := gorgonia.NewMatrix(g, dt, gorgonia.WithShape(k, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(d.boxes))))
	out, err := op(x, boxes)
	if err != nil {
		tb.Fatal(err)
	}
	result := out
	if backward {
		ys := out.Shape().Clone()
		gr := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(ys...), gorgonia.WithName("G"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(ys...), tensor.WithBacking(d.grad))))
		dx, err := ad.VJP(out, gr, x) // out.backward(G)
		if err != nil {
			tb.Fatal(err)
		}
		result = dx[0]
	}
	v := new(gorgonia.Value)
	gorgonia.Read(result, v)
	return gorgonia.NewTapeMachine(g), v
}

// benchPool times the graph after checking once, outside the timed loop,
// that it computes exactly what the kernels compute (want computes that).
// The reference is dropped before the timing, so that the peak RSS that
// scripts/bench.sh measures is the graph's, not the check's.
func benchPool[T cpu.Float](b *testing.B, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), d roiAlignBenchData[T], c int, backward bool, want func(b *testing.B) []T) {
	m, v := poolBenchGraph(b, op, d, c, backward)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		b.Fatal(err)
	}
	got, ok := (*v).Data().([]T)
	if !ok || !slices.Equal(got, want(b)) {
		b.Fatalf("graph result differs from the kernels' (backward=%t)", backward)
	}
	runtime.GC() // the reference is garbage now
	timeVM(b, m)
}

// benchPS times a position-sensitive op on the PSRoIAlign benchmark data
// (newPSRoIAlignBenchData) with geometry g:
//
//   - forward, forward+backward: the op on a TapeMachine (the comparison
//     with torchvision), checked once against the kernels' results;
//   - kernel/forward, kernel/transpose: the CPU kernels alone on
//     preallocated slices (transpose includes zeroing its destination).
func benchPS(b *testing.B, g *cpu.PoolGeom, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), fwd, adj func(*cpu.PoolGeom, []float32, []float32, []float32) error) {
	d := newPSRoIAlignBenchData[float32]()
	forward := func(b *testing.B) []float32 {
		y := make([]float32, len(d.grad))
		if err := fwd(g, d.x, d.boxes, y); err != nil {
			b.Fatal(err)
		}
		return y
	}
	transpose := func(b *testing.B) []float32 {
		dx := make([]float32, len(d.x))
		if err := adj(g, d.grad, d.boxes, dx); err != nil {
			b.Fatal(err)
		}
		return dx
	}
	b.Run("forward", func(b *testing.B) { benchPool(b, op, d, benchPSC, false, forward) })
	b.Run("forward+backward", func(b *testing.B) { benchPool(b, op, d, benchPSC, true, transpose) })
	b.Run("kernel/forward", func(b *testing.B) {
		out := make([]float32, len(d.grad))
		b.ReportAllocs()
		for b.Loop() {
			if err := fwd(g, d.x, d.boxes, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kernel/transpose", func(b *testing.B) {
		dst := make([]float32, len(d.x))
		b.ReportAllocs()
		for b.Loop() {
			clear(dst)
			if err := adj(g, d.grad, d.boxes, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
