//go:build cuda

package gops

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// holds them (compiled by gops/kernels/gen -gorgonia), found through
// GOPS_GORGONIA_PTX.
func init() {
	dir := os.Getenv("GOPS_GORGONIA_PTX")
	if dir == "" {
		return
	}
	ptxs, _ := filepath.Glob(filepath.Join(dir, "*.ptx"))
	for _, p := range ptxs {
		ptx, err := os.ReadFile(p)
		if err != nil {
			panic(err)
		}
		funcs, err := os.ReadFile(strings.TrimSuffix(p, ".ptx") + ".funcs")
		if err != nil {
			panic(err)
		}
		gorgonia.AddToStdLib(strings.TrimSuffix(filepath.Base(p), ".ptx"), string(ptx), strings.Fields(string(funcs)))
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

// hostCopy copies a (device) tensor's elements into a host tensor.
func hostCopy(v gorgonia.Value) gorgonia.Value {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return v
	}
	var back any
	switch d := t.Data().(type) {
	case []float32:
		back = append([]float32(nil), d...)
	case []float64:
		back = append([]float64(nil), d...)
	case []int:
		back = append([]int(nil), d...)
	default:
		return v
	}
	return tensor.New(tensor.WithShape(t.Shape().Clone()...), tensor.WithBacking(back))
}

func floats(v gorgonia.Value) []float64 {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return []float64{scalarOf(v)}
	}
	switch d := t.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return d
	case []int:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	}
	return nil
}

func closeValues(got, want gorgonia.Value, dt tensor.Dtype) error {
	a, b := floats(got), floats(want)
	if len(a) != len(b) {
		return fmt.Errorf("%d elements, want %d", len(a), len(b))
	}
	tol := 1e-10
	if dt == tensor.Float32 {
		tol = 1e-4
	}
	scale := 0.0
	for _, x := range b {
		scale = max(scale, math.Abs(x))
	}
	for i := range a {
		if math.IsNaN(a[i]) && math.IsNaN(b[i]) {
			continue
		}
		if d := math.Abs(a[i] - b[i]); d > tol*max(math.Abs(b[i]), scale, 1e-30) {
			return fmt.Errorf("element %d: GPU %v, CPU %v", i, a[i], b[i])
		}
	}
	return nil
}

func randValue(rng *rand.Rand, dt tensor.Dtype, shape tensor.Shape) tensor.Tensor {
	n := shape.TotalSize()
	if dt == tensor.Float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(rng.NormFloat64())
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

func input(g *gorgonia.ExprGraph, name string, v tensor.Tensor) *gorgonia.Node {
	return gorgonia.NewTensor(g, v.Dtype(), v.Shape().Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(name))
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
	must := func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	weighted := func(n *gorgonia.Node, name string) *gorgonia.Node {
		r := input(g, name, randValue(rng, dt, n.Shape()))
		return must(gorgonia.Sum(must(gorgonia.HadamardProd(n, r))))
	}
	cost := weighted(f, "R")
	g1, err := Grad(cost, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	var cost2 *gorgonia.Node
	for i, d := range g1 {
		term := weighted(d, fmt.Sprintf("R2_%d", i))
		if cost2 == nil {
			cost2 = term
		} else {
			cost2 = must(gorgonia.Add(cost2, term))
		}
	}
	g2, err := Grad(cost2, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	gpuCompare(t, dt, g, f, wrt, g1, g2)
}

// gpuCompare runs g, which holds f and its gradients of order 1 (g1) and 2
// (g2), one per node of wrt, on the GPU with Gorgonia's CUDA TapeMachine,
// and compares f, g1 and g2 with a CPU evaluation of the whole graph (each
// node's Do in topological order, from the inputs' values), within
// closeValues' tolerance; on a difference it logs gpuNodeHints.
func gpuCompare(t *testing.T, dt tensor.Dtype, g *gorgonia.ExprGraph, f *gorgonia.Node, wrt, g1, g2 gorgonia.Nodes) {
	t.Helper()
	if len(g1) != len(wrt) || len(g2) != len(wrt) {
		t.Fatalf("%d and %d gradients for %d inputs", len(g1), len(g2), len(wrt))
	}
	results := append(gorgonia.Nodes{f}, append(append(gorgonia.Nodes(nil), g1...), g2...)...)
	gotVals := make([]gorgonia.Value, len(results))
	for i, n := range results {
		gorgonia.Read(n, &gotVals[i])
	}
	// The inputs' host values, taken before the VM moves anything.
	leaves := map[*gorgonia.Node]gorgonia.Value{}
	for _, n := range g.AllNodes() {
		if n.Op() == nil {
			leaves[n] = hostCopy(n.Value())
		}
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("GPU run: %v", err)
	}
	for i, v := range gotVals {
		if v == nil {
			t.Fatalf("result %d (%v) was not read", i, results[i])
		}
		gotVals[i] = hostCopy(v)
	}

	// The whole graph on the CPU: every node that one of the results
	// depends on (the order-2 gradients are not below the order-2 cost, and
	// a zero gradient is a constant below nothing).
	host := map[*gorgonia.Node]gorgonia.Value{}
	for _, r := range results {
		for _, n := range topoOrder(g, r) {
			if _, done := host[n]; done {
				continue
			}
			if n.Op() == nil {
				host[n] = leaves[n]
				continue
			}
			kids := children(g, n)
			in := make([]gorgonia.Value, len(kids))
			for i, k := range kids {
				in[i] = host[k]
			}
			v, err := n.Op().Do(in...)
			if err != nil {
				t.Fatalf("%v on the CPU: %v", n.Op(), err)
			}
			host[n] = v
		}
	}
	for i, n := range results {
		what := "f"
		if i > 0 {
			what = fmt.Sprintf("order-%d gradient w.r.t. %s", 1+(i-1)/len(wrt), wrt[(i-1)%len(wrt)].Name())
		}
		if err := closeValues(gotVals[i], host[n], dt); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
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
		op, ok := n.Op().(*Op)
		if !ok || n.Value() == nil {
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

func TestGPURoIAlign(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, o := range []RoIAlignOpts{{OutputSize: [2]int{2, 3}, SamplingRatio: 2}, {OutputSize: [2]int{3, 2}, SpatialScale: 0.5, Aligned: true}} {
			t.Run(fmt.Sprintf("%v/%+v", dt, o), func(t *testing.T) {
				gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
					x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 3, 6, 7}))
					b := input(g, "boxes", boxesValue(dt))
					y, err := RoIAlign(x, b, o)
					if err != nil {
						t.Fatal(err)
					}
					return y, gorgonia.Nodes{x}
				})
			})
		}
	}
}

func TestGPURoIPool(t *testing.T) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
				x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 3, 6, 7}))
				b := input(g, "boxes", boxesValue(dt))
				y, err := RoIPool(x, b, RoIPoolOpts{OutputSize: [2]int{2, 2}})
				if err != nil {
					t.Fatal(err)
				}
				return y, gorgonia.Nodes{x}
			})
		})
	}
}

func TestGPUPSRoI(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, align := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/align=%t", dt, align), func(t *testing.T) {
				gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
					x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 8, 6, 7}))
					b := input(g, "boxes", boxesValue(dt))
					var y *gorgonia.Node
					var err error
					if align {
						y, err = PSRoIAlign(x, b, PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
					} else {
						y, err = PSRoIPool(x, b, PSRoIPoolOpts{OutputSize: [2]int{2, 2}})
					}
					if err != nil {
						t.Fatal(err)
					}
					return y, gorgonia.Nodes{x}
				})
			})
		}
	}
}

func TestGPUDeformConv2d(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/masked=%t", dt, masked), func(t *testing.T) {
				gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
					x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 4, 5, 5}))
					w := input(g, "w", randValue(rng, dt, tensor.Shape{6, 2, 3, 3}))
					off := input(g, "off", randValue(rng, dt, tensor.Shape{2, 36, 5, 5}))
					bias := input(g, "bias", randValue(rng, dt, tensor.Shape{6}))
					wrt := gorgonia.Nodes{x, off, w}
					var mask *gorgonia.Node
					if masked {
						mask = input(g, "mask", randValue(rng, dt, tensor.Shape{2, 18, 5, 5}))
						wrt = append(wrt, mask)
					}
					y, err := DeformConv2d(x, off, w, bias, mask, DeformConv2dOpts{Padding: [2]int{1, 1}})
					if err != nil {
						t.Fatal(err)
					}
					return y, wrt
				})
			})
		}
	}
}

// TestGPUMixedGraph: our ops between Gorgonia's elementwise ops, all on the
// GPU: RoIAlign(tanh(x)·x + x) then squared.
func TestGPUMixedGraph(t *testing.T) {
	for _, dt := range gpuDtypes {
		t.Run(dt.String(), func(t *testing.T) {
			gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
				x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 3, 6, 7}))
				b := input(g, "boxes", boxesValue(dt))
				h := gorgonia.Must(gorgonia.Add(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.Tanh(x)), x)), x))
				y, err := RoIAlign(h, b, RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2})
				if err != nil {
					t.Fatal(err)
				}
				return gorgonia.Must(gorgonia.Square(y)), gorgonia.Nodes{x}
			})
		})
	}
}
