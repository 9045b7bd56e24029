//go:build cuda

package gops_test

import (
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/internal/cuda/cudatest"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GPU tests. Run only on a machine with an NVIDIA GPU (gorgonia.org/cu's
// init exits the process where there is none): scripts/cuda-check builds the
// binary and a bundle with run.sh.
//
// Each test builds a small graph, cost = Σ R ⊙ f(inputs), its gradient
// w.r.t. wrt (order 1) and the gradient of Σ R2 ⊙ that gradient (order 2),
// runs it on the GPU with Gorgonia's CUDA TapeMachine, and compares f, the
// first- and the second-order gradients with a CPU evaluation of the whole
// graph (each node's Do in topological order), float64 within 1e-10
// relative, float32 within 1e-4 relative. Where they differ, every node whose
// op is one of ours is compared with that op's CPU kernel on the node's input
// values after the run, and the differences are logged as hints only: the
// TapeMachine reuses memory and writes some ops' results in place, so a
// node's value after the run need not be the one it had (measured on the CPU
// TapeMachine: hundreds of such stale mismatches over the golden grid while
// every result agrees). gorgonia.TraceExec would keep copies, but it clones
// them into the device arena, which Gorgonia sizes from the graph.

// Gorgonia v0.9.18 ships no PTX for its own elementwise kernels: the bundle
// holds them, found through GOPS_GORGONIA_PTX (cudatest.RegisterGorgoniaPTX).
func init() {
	if err := cudatest.RegisterGorgoniaPTX(); err != nil {
		panic(err) // a test binary without its kernels cannot run
	}
}

func needGPU(t *testing.T) {
	t.Helper()
	if n, err := cu.NumDevices(); err != nil || n == 0 {
		t.Skip("no CUDA device")
	}
	if os.Getenv("GOPS_GORGONIA_PTX") == "" {
		t.Log("GOPS_GORGONIA_PTX not set: Gorgonia's elementwise ops may be missing on the GPU")
	}
}

// The tests' host copies, random inputs and input nodes (internal/cuda/cudatest).
var (
	hostCopy  = cudatest.HostCopy
	randValue = cudatest.Random
	input     = cudatest.Input
)

// gpu is the GPU check of a graph (cudatest.Checker).
var gpu = cudatest.Checker{Grad: ad.Grad, Floats: values}

// closeValues compares a GPU result with the CPU's within cudatest.Close's
// tolerance.
func closeValues(got, want gorgonia.Value, dt tensor.Dtype) error {
	return cudatest.Close(values(got), values(want), dt)
}

// gpuCheck builds f with build (which returns f and the inputs to
// differentiate w.r.t.), adds its gradients of order 1 and 2, runs the graph
// on the GPU and compares it with the CPU as described above.
func gpuCheck(t *testing.T, dt tensor.Dtype, build func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes)) {
	t.Helper()
	needGPU(t)
	rng := rand.New(rand.NewSource(7))
	g := gorgonia.NewGraph()
	f, wrt := build(g, rng)
	g1, g2 := gpu.Grads(t, g, rng, dt, f, wrt)
	gpuCompare(t, dt, g, f, wrt, g1, g2)
}

// gpuCompare runs g, which holds f and its gradients of order 1 (g1) and 2
// (g2), one per node of wrt, on the GPU and compares it with the CPU
// (gpu.Compare); on a difference it logs gpuNodeHints.
func gpuCompare(t *testing.T, dt tensor.Dtype, g *gorgonia.ExprGraph, f *gorgonia.Node, wrt, g1, g2 gorgonia.Nodes) {
	t.Helper()
	gpu.Compare(t, dt, g, f, wrt, g1, g2)
	if t.Failed() {
		gpuNodeHints(t, g, dt)
	}
}

// gpuNodeHints logs, for every node of ours, whether its value after the GPU
// run equals its CPU kernel applied to its inputs' values after the run
// (hints only: see the comment at the top of the file).
func gpuNodeHints(t *testing.T, g *gorgonia.ExprGraph, dt tensor.Dtype) {
	t.Helper()
	ours, differ := 0, 0
	for _, n := range g.AllNodes() {
		op := n.Op()
		if !isOurs(op) || n.Value() == nil {
			continue
		}
		ours++
		kids := children(g, n)
		in := make([]gorgonia.Value, len(kids))
		for i, k := range kids {
			in[i] = hostCopy(k.Value())
		}
		want, err := op.Do(in...)
		if err != nil {
			t.Logf("hint: %v on the CPU: %v", op, err)
			continue
		}
		if err := closeValues(hostCopy(n.Value()), want, dt); err != nil {
			t.Logf("hint (the value may be stale): %v: %v", op, err)
			differ++
		}
	}
	t.Logf("hints: %d of %d nodes of gops ops differ from their CPU kernels after the run", differ, ours)
}

// children returns n's arguments in order.
func children(g *gorgonia.ExprGraph, n *gorgonia.Node) gorgonia.Nodes {
	var kids gorgonia.Nodes
	for it := g.From(n.ID()); it.Next(); {
		kids = append(kids, it.Node().(*gorgonia.Node))
	}
	return kids
}

// isOurs reports whether op was made by ad.Apply (an op of gops).
func isOurs(op gorgonia.Op) bool {
	t := reflect.TypeOf(op)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == "github.com/gops-dev/gops/ad"
}

func boxesValue(dt tensor.Dtype) tensor.Tensor {
	b := []float64{0, 0.5, 1.2, 5.3, 4.9, 1, 2.1, 0.3, 6.2, 5.7, 0, -1.5, 2.2, 3.1, 7.8, 1, 1, 1, 2, 2}
	if dt == tensor.Float32 {
		f := make([]float32, len(b))
		for i, x := range b {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(4, 5), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(4, 5), tensor.WithBacking(b))
}

var gpuDtypes = []tensor.Dtype{tensor.Float64, tensor.Float32}

// roiGPUCheck is gpuCheck of op(x, boxes), x random of shape xs and the
// boxes boxesValue's, differentiated w.r.t. x and, where wrtBoxes, the
// boxes.
func roiGPUCheck(t *testing.T, dt tensor.Dtype, xs tensor.Shape, wrtBoxes bool, op func(x, b *gorgonia.Node) (*gorgonia.Node, error)) {
	t.Helper()
	gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
		x := input(g, "x", randValue(rng, dt, xs))
		b := input(g, "boxes", boxesValue(dt))
		y, err := op(x, b)
		if err != nil {
			t.Fatal(err)
		}
		if wrtBoxes {
			return y, gorgonia.Nodes{x, b}
		}
		return y, gorgonia.Nodes{x}
	})
}

// roiGPUDtypes runs roiGPUCheck in each of gpuDtypes, a subtest each.
func roiGPUDtypes(t *testing.T, xs tensor.Shape, wrtBoxes bool, op func(x, b *gorgonia.Node) (*gorgonia.Node, error)) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) { roiGPUCheck(t, dt, xs, wrtBoxes, op) })
	}
}

// roiAlignGPUOpts runs roiGPUCheck of RoIAlign on [2, 3, 6, 7] with each of
// opts in each of gpuDtypes, a subtest each.
func roiAlignGPUOpts(t *testing.T, wrtBoxes bool, opts ...gops.RoIAlignOpts) {
	for _, dt := range gpuDtypes {
		for _, o := range opts {
			t.Run(fmt.Sprintf("%v/%+v", dt, o), func(t *testing.T) {
				roiGPUCheck(t, dt, tensor.Shape{2, 3, 6, 7}, wrtBoxes, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
					return gops.RoIAlign(x, b, o)
				})
			})
		}
	}
}

// TestGPUMixedGraph: our ops between Gorgonia's elementwise ops, all on the
// GPU: gops.RoIAlign(tanh(x)·x + x) then squared.
func TestGPUMixedGraph(t *testing.T) {
	roiGPUDtypes(t, tensor.Shape{2, 3, 6, 7}, false, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
		h := gorgonia.Must(gorgonia.Add(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.Tanh(x)), x)), x))
		y, err := gops.RoIAlign(h, b, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
		if err != nil {
			return nil, err
		}
		return gorgonia.Square(y)
	})
}

// The pooled ops' twins (roialign_cuda.go, roipool_cuda.go, ...): the
// forward and the gradients of order 1 and 2 w.r.t. the input; the box
// members' twins (internal/cuda/kernels/gops/roialignbox.cu): gradients of
// order 1 and 2 w.r.t. the input and the boxes run F_10, F_01, F_11 and
// their transposes on the GPU.

func TestGPURoIAlign(t *testing.T) {
	roiAlignGPUOpts(t, false, gops.RoIAlignOpts{OutputSize: [2]int{2, 3}, SamplingRatio: 2}, gops.RoIAlignOpts{OutputSize: [2]int{3, 2}, SpatialScale: 0.5, Aligned: true})
}

func TestGPURoIAlignBoxes(t *testing.T) {
	roiAlignGPUOpts(t, true, gops.RoIAlignOpts{OutputSize: [2]int{2, 3}, SamplingRatio: 2}, gops.RoIAlignOpts{OutputSize: [2]int{3, 2}, SpatialScale: 0.5, Aligned: true},
		gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: 0.5})
}

func psRoIAlignGPU(x, b *gorgonia.Node) (*gorgonia.Node, error) {
	return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
}

func TestGPUPSRoIAlign(t *testing.T) {
	roiGPUDtypes(t, tensor.Shape{2, 8, 6, 7}, false, psRoIAlignGPU)
}

func TestGPUPSRoIAlignBoxes(t *testing.T) {
	roiGPUDtypes(t, tensor.Shape{2, 8, 6, 7}, true, psRoIAlignGPU)
}

func TestGPURoIPool(t *testing.T) {
	roiGPUDtypes(t, tensor.Shape{2, 3, 6, 7}, false, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: [2]int{2, 2}})
	})
}

func TestGPUPSRoIPool(t *testing.T) {
	roiGPUDtypes(t, tensor.Shape{2, 8, 6, 7}, false, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}})
	})
}

// GPU against CPU on the golden grid (issue 7): for every case of the
// testdata/*_golden.json.gz files, the op's forward, its first-order
// gradient ad.Grad(Σ y ⊙ grad_output) w.r.t. the differentiable inputs, and the
// second-order gradient ad.Grad(Σ_i Σ g1_i²) w.r.t. the same inputs, run on
// Gorgonia's CUDA TapeMachine and compared by gpuCompare with the CPU kernels
// node by node and with a CPU evaluation of the whole graph: float64 within
// 1e-10 relative, float32 within 1e-4 relative.
//
// The cases' inputs are the golden file's; agreement of the CPU results with
// torchvision's numbers is the CPU golden tests' business (roialign_golden_test.go,
// TestRoIPoolGolden, ..., deformconv_golden_test.go).
//
// Cases with K = 0 boxes are skipped: their output is empty, and Gorgonia's
// elementwise ops (the HadamardProd of the cost) panic on empty tensors, on
// the CPU as on the GPU. The conformance table covers K = 0 on the CPU. The deformable grid has no empty case.

// gpuGoldenCompare adds to g1 = ad.Grad(Σ y ⊙ gy, wrt...) the gradient of
// Σ_i Σ g1_i² w.r.t. wrt, and runs gpuCompare.
func gpuGoldenCompare(t *testing.T, dt tensor.Dtype, g *gorgonia.ExprGraph, y, gy *gorgonia.Node, wrt gorgonia.Nodes) {
	t.Helper()
	must := cudatest.Must(t)
	cost := must(gorgonia.Sum(must(gorgonia.HadamardProd(y, gy))))
	g1, err := ad.Grad(cost, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	terms := make(gorgonia.Nodes, len(g1))
	for i, d := range g1 {
		terms[i] = must(gorgonia.Sum(must(gorgonia.Square(d))))
	}
	g2, err := ad.Grad(must(gorgonia.ReduceAdd(terms)), wrt...)
	if err != nil {
		t.Fatal(err)
	}
	gpuCompare(t, dt, g, y, wrt, g1, g2)
}

// gpuPoolGolden runs the GPU comparison for every non-empty case of file
// (RoIAlign, RoIPool, PSRoIAlign, PSRoIPool: differentiable in x only; the
// boxes have no gradient).
func gpuPoolGolden(t *testing.T, file string, op goldenPoolOp) {
	needGPU(t)
	ran := 0
	for _, c := range loadGoldenFile[poolGoldenCase](t, file) {
		if c.BoxesShape[0] == 0 {
			continue // K = 0: see the file comment
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := goldenNode(g, c.Dtype, "x", c.InputShape, c.Input)
			b := goldenNode(g, c.Dtype, "boxes", c.BoxesShape, c.Boxes)
			gy := goldenNode(g, c.Dtype, "grad_output", c.OutputShape, c.GradOutput)
			y, err := op(&c.goldenCase, x, b)
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
				t.Fatalf("output shape %v, want %v", y.Shape(), c.OutputShape)
			}
			gpuGoldenCompare(t, goldenDtype(c.Dtype), g, y, gy, gorgonia.Nodes{x})
		})
	}
	if ran == 0 {
		t.Fatalf("%s: no non-empty case", file)
	}
}

func TestGPUGoldenRoIAlign(t *testing.T) {
	gpuPoolGolden(t, "roialign_golden.json.gz", goldenRoIAlign)
}

func TestGPUGoldenRoIPool(t *testing.T) {
	gpuPoolGolden(t, "roipool_golden.json.gz", goldenRoIPool)
}

func TestGPUGoldenPSRoIAlign(t *testing.T) {
	gpuPoolGolden(t, "psroialign_golden.json.gz", goldenPSRoIAlign)
}

func TestGPUGoldenPSRoIPool(t *testing.T) {
	gpuPoolGolden(t, "psroipool_golden.json.gz", goldenPSRoIPool)
}
