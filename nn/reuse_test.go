package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// reuseNet is a small network through the memory-bound ops (Conv2d,
// GroupNorm, ReLU, MaxPool2d, AvgPool2d, Tanh, Interpolate, GridSample,
// Softmax, CrossEntropy) with its loss, the loss's gradient w.r.t. x and
// the weights, and the gradient of the penalty Σ‖∇ₓL‖² w.r.t. the
// weights: the values that TestReuseResults compares, read with
// gorgonia.Read.
type reuseNet struct {
	g    *gorgonia.ExprGraph
	x    *gorgonia.Node
	vals []*gorgonia.Value
}

func newReuseNet(t *testing.T, dt tensor.Dtype) *reuseNet {
	t.Helper()
	g := gorgonia.NewGraph()
	node := randNodes(g, dt, rand.New(rand.NewPCG(3, 4)))
	must := mustNode(t)
	x := node("x", 1, 2, 3, 12, 12)
	w, b := node("w", 0.3, 8, 3, 3, 3), node("b", 0.1, 8)
	gw, gb := node("gw", 0.5, 8), node("gb", 0.1, 8)
	grid := node("grid", 0.6, 2, 5, 7, 2)
	fc := node("fc", 0.2, 8*5*7, 4)
	h := must(nn.Conv2d(x, w, b, nn.Conv2dOpts{Padding: [2]int{1, 1}}))
	h = must(nn.ReLU(must(nn.GroupNorm(h, 4, gw, gb, 0))))
	h = must(nn.MaxPool2d(h, nn.MaxPool2dOpts{KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}))
	h = must(nn.Tanh(must(nn.AvgPool2d(h, nn.AvgPool2dOpts{KernelSize: [2]int{2, 2}, Stride: [2]int{1, 1}}))))
	h = must(nn.Interpolate(h, nn.InterpolateOpts{ScaleFactor: [2]float64{2, 2}, Mode: "bilinear"}))
	h = must(nn.GridSample(h, grid, nn.GridSampleOpts{}))
	logits := must(nn.MatMul(must(nn.Flatten(h, 1)), fc, false, false))
	target := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(2), gorgonia.WithName("target"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 3}))))
	loss := must(nn.CrossEntropy(logits, target, nn.CrossEntropyOpts{}))
	probs := must(nn.Softmax(logits, 1))
	weights := gorgonia.Nodes{w, b, gw, gb, fc, grid}
	return &reuseNet{g: g, x: x, vals: readWithPenalty(t, loss, x, weights, h, probs, loss)}
}

// randNodes returns a maker of input nodes of g of dtype dt with values
// scale·N(0, 1) drawn from r.
func randNodes(g *gorgonia.ExprGraph, dt tensor.Dtype, r *rand.Rand) func(name string, scale float64, shape ...int) *gorgonia.Node {
	return func(name string, scale float64, shape ...int) *gorgonia.Node {
		v := tensor.New(tensor.WithShape(shape...), tensor.Of(dt))
		switch d := v.Data().(type) {
		case []float32:
			for i := range d {
				d[i] = float32(scale * r.NormFloat64())
			}
		case []float64:
			for i := range d {
				d[i] = scale * r.NormFloat64()
			}
		}
		return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name), gorgonia.WithValue(v))
	}
}

// mustNode returns a helper that fails t on an error and returns the node.
func mustNode(t *testing.T) func(*gorgonia.Node, error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// readWithPenalty reads (gorgonia.Read) the nodes outs, then the
// gradient of loss w.r.t. weights and x, then the gradient w.r.t.
// weights of the penalty Σ‖∇ₓloss‖².
func readWithPenalty(t *testing.T, loss, x *gorgonia.Node, weights gorgonia.Nodes, outs ...*gorgonia.Node) []*gorgonia.Value {
	t.Helper()
	g1, err := ad.Grad(loss, append(weights, x)...)
	if err != nil {
		t.Fatal(err)
	}
	must := mustNode(t)
	penalty := must(gorgonia.Sum(must(gorgonia.Square(g1[len(weights)]))))
	g2, err := ad.Grad(penalty, weights...)
	if err != nil {
		t.Fatal(err)
	}
	var vals []*gorgonia.Value
	for _, out := range append(append(append(gorgonia.Nodes(nil), outs...), g1...), g2...) {
		v := new(gorgonia.Value)
		gorgonia.Read(out, v)
		vals = append(vals, v)
	}
	return vals
}

// TestReuseResults: the network of reuseNet, its gradient and the
// gradient of a gradient penalty give bitwise the same values with
// ad.ReuseResults on as with it off, over runs on new inputs, float32 and
// float64; and the values of each run differ from the previous run's (the
// comparison is not between stale copies).
func TestReuseResults(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		plain, reused := newReuseNet(t, dt), newReuseNet(t, dt)
		ad.ReuseResults(reused.g, true)
		mp, mr := gorgonia.NewTapeMachine(plain.g), gorgonia.NewTapeMachine(reused.g)
		var prev [][]float64
		for run := range 4 {
			r := rand.New(rand.NewPCG(uint64(run), 9))
			xv := tensor.New(tensor.WithShape(2, 3, 12, 12), tensor.Of(dt))
			switch d := xv.Data().(type) {
			case []float32:
				for i := range d {
					d[i] = float32(r.NormFloat64())
				}
			case []float64:
				for i := range d {
					d[i] = r.NormFloat64()
				}
			}
			for _, n := range []*reuseNet{plain, reused} {
				if err := gorgonia.Let(n.x, xv.Clone().(*tensor.Dense)); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range []gorgonia.VM{mp, mr} {
				m.Reset()
				if err := m.RunAll(); err != nil {
					t.Fatal(err)
				}
			}
			var now [][]float64
			for i := range plain.vals {
				a, b := valueFloats(*plain.vals[i]), valueFloats(*reused.vals[i])
				if len(a) != len(b) {
					t.Fatalf("%v run %d value %d: %d vs %d elements", dt, run, i, len(a), len(b))
				}
				for j := range a {
					if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
						t.Fatalf("%v run %d value %d [%d]: %v without ReuseResults, %v with", dt, run, i, j, a[j], b[j])
					}
				}
				now = append(now, append([]float64(nil), b...))
			}
			if prev != nil {
				for i := range now {
					same := true
					for j := range now[i] {
						same = same && now[i][j] == prev[i][j]
					}
					if same && i < 3+7 { // the forward values and the first-order gradients move with x
						t.Errorf("%v run %d value %d: the same as the previous run's", dt, run, i)
					}
				}
			}
			prev = now
		}
		mp.Close()
		mr.Close()
	}
}
