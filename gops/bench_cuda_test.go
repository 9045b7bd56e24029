//go:build cuda

package gops_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cuda/cudatest"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// BenchmarkGPU times the RoI and deformable ops on Gorgonia's CUDA
// TapeMachine (build tag cuda) at the sizes of the CPU benchmarks and of
// scripts/bench_cuda_torch.py, float32: forward, and forward+backward (the
// op and ad.VJP's input gradient, torchvision's out.backward(G)). Each
// graph's inputs are host values that the machine copies to the device on
// every run, as a user's Let'd inputs are. The pooling graphs' results are
// checked once against the CPU kernels first: the benchmark logs how many
// elements are bitwise equal and fails beyond 1e-5 relative to the
// result's largest magnitude.
func BenchmarkGPU(b *testing.B) {
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		b.Skip("no CUDA device")
	}
	roiAlign := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIAlign(x, bx, benchOpts) }
	roiPool := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIPool(x, bx, benchPoolOpts) }
	psAlign := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIAlign(x, bx, benchPSOpts) }
	psPool := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.PSRoIPool(x, bx, gops.PSRoIPoolOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16})
	}
	ops := []struct {
		name string
		op   func(x, bx *gorgonia.Node) (*gorgonia.Node, error)
		d    roiAlignBenchData[float32]
		c    int
	}{
		{"RoIAlign", roiAlign, newRoIAlignBenchData[float32](), benchC},
		{"RoIPool", roiPool, newRoIAlignBenchData[float32](), benchC},
		{"PSRoIAlign", psAlign, newPSRoIAlignBenchData[float32](), benchPSC},
		{"PSRoIPool", psPool, newPSRoIAlignBenchData[float32](), benchPSC},
	}
	for _, o := range ops {
		for _, backward := range []bool{false, true} {
			name := o.name + "/forward"
			if backward {
				name += "+backward"
			}
			b.Run(name, func(b *testing.B) { gpuBenchPool(b, o.op, o.d, o.c, backward) })
		}
	}
	b.Run("MultiScaleRoIAlign/forward", func(b *testing.B) { benchMultiScale(b, false) })
	b.Run("MultiScaleRoIAlign/forward+backward", func(b *testing.B) { benchMultiScale(b, true) })
	b.Run("DeformConv2d", func(b *testing.B) { benchDeform(b, deformBenchSizes) })
}

// gpuBenchPool is benchPool on the GPU: the graph's result is compared
// once with the same graph's on the CPU (each node's Do, cudatest's
// Checker), then the machine is timed.
func gpuBenchPool(b *testing.B, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), d roiAlignBenchData[float32], c int, backward bool) {
	m, v := poolBenchGraph(b, op, d, c, backward, false)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		b.Fatal(err)
	}
	got := values(hostCopy(*v))
	// The CPU's result: the same graph, each node's Do.
	cg, cn := poolBenchNodes(b, op, d, c, backward)
	wv, err := cudatest.EvalCPU(cg, nil, map[*gorgonia.Node]gorgonia.Value{}, cn)
	if err != nil {
		b.Fatal(err)
	}
	want := values(wv)
	if len(got) != len(want) {
		b.Fatalf("GPU result has %d elements, the CPU's %d", len(got), len(want))
	}
	same, scale, worst := 0, 0.0, 0.0
	for i, w := range want {
		if got[i] == w && math.Signbit(got[i]) == math.Signbit(w) {
			same++
		}
		scale = math.Max(scale, math.Abs(w))
		worst = math.Max(worst, math.Abs(got[i]-w))
	}
	b.Logf("GPU vs CPU: %d of %d elements bitwise equal, max |diff| %.3g (max |CPU| %.3g)", same, len(want), worst, scale)
	if worst > 1e-5*scale {
		b.Fatalf("GPU result differs from the CPU's by %.3g (scale %.3g)", worst, scale)
	}
	timeVM(b, m)
}
