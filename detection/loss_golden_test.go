package detection

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// lossGolden is a case of testdata/detection/losses_golden.json.gz
// (scripts/gen_detection_losses.py): a batch of two formula images with
// their ground truth, torchvision's loss dict on the tiny model, and a
// summary of the total loss's gradient w.r.t. every trainable parameter.
type lossGolden struct {
	Model  string             `json:"model"`
	Case   string             `json:"case"`
	Gmax   int                `json:"gmax"`
	Seed   float64            `json:"seed"`
	Height int                `json:"height"`
	Width  int                `json:"width"`
	Boxes  [][][4]float64     `json:"boxes"`
	Labels [][]int            `json:"labels"`
	Losses map[string]float64 `json:"losses"`
	Grads  map[string]gradSum `json:"grads"`
}

// gradSum is a gradient's summary: Σ g, Σ |g|, Σ g_i·sin(0.61·i + 0.3),
// Σ g² and the first four elements.
type gradSum struct {
	Shape []int     `json:"shape"`
	Sum   float64   `json:"sum"`
	Abs   float64   `json:"abs"`
	WSum  float64   `json:"wsum"`
	SumSq float64   `json:"sumsq"`
	Head  []float64 `json:"head"`
}

// summarise is g's gradSum.
func summarise(g []float64) gradSum {
	s := gradSum{Head: g[:min(4, len(g))]}
	for i, v := range g {
		s.Sum += v
		s.Abs += math.Abs(v)
		s.WSum += v * math.Sin(0.61*float64(i)+0.3)
		s.SumSq += v * v
	}
	return s
}

// lossImages are the case's images: element i of image b is 0.5 +
// 0.5·sin(0.37·i + 1.3·b + seed).
func (c lossGolden) lossImages(dt tensor.Dtype) []*tensor.Dense {
	out := make([]*tensor.Dense, len(c.Boxes))
	for b := range out {
		v := make([]float64, 3*c.Height*c.Width)
		for i := range v {
			v[i] = 0.5 + 0.5*math.Sin(0.37*float64(i)+1.3*float64(b)+c.Seed)
		}
		out[b] = golden.Tensor(dt.String(), []int{3, c.Height, c.Width}, v)
	}
	return out
}

// targets is the case's ground truth, padded to Gmax.
func (c lossGolden) targets(t *testing.T) TargetBatch {
	t.Helper()
	ts := make([]Targets, len(c.Boxes))
	for b, boxes := range c.Boxes {
		var flat []float64
		for _, x := range boxes {
			flat = append(flat, x[:]...)
		}
		ts[b] = Targets{Boxes: newValue(flat, len(boxes), 4), Labels: c.Labels[b]}
	}
	tb, err := PadTargets(ts, c.Gmax)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// trainer is what the loss tests use of FCOS and RetinaNet.
type trainer interface {
	detector
	Loss(*gorgonia.Node) (*LossInputs, *Losses, error)
}

// lossGraph is a model's loss graph on a batch of images, with the
// gradient of the total w.r.t. every trainable weight.
type lossGraph struct {
	g      *gorgonia.ExprGraph
	x      *gorgonia.Node
	in     *LossInputs
	losses *Losses
	names  []string
	grads  gorgonia.Nodes
}

// newLossGraph builds m's losses on the transformed images and their
// gradients (none when grads is false).
func newLossGraph(t *testing.T, m detector, batch *tensor.Dense, grads bool) *lossGraph {
	t.Helper()
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, batch.Dtype(), 4, gorgonia.WithShape(batch.Shape()...), gorgonia.WithValue(batch), gorgonia.WithName("x"))
	in, losses, err := m.(trainer).Loss(x)
	if err != nil {
		t.Fatal(err)
	}
	lg := &lossGraph{g: g, x: x, in: in, losses: losses}
	if grads {
		ws, err := m.Weights().Params.Nodes(g)
		if err != nil {
			t.Fatal(err)
		}
		if lg.grads, err = ad.Grad(losses.Total, ws...); err != nil {
			t.Fatal(err)
		}
		lg.names = m.Weights().Params.Names()
	}
	return lg
}

// lossNames are torchvision's loss dict keys of Losses' fields.
var lossNames = []string{"classification", "bbox_regression", "bbox_ctrness"}

// run sets the targets, runs the machine and returns the losses by
// torchvision's names and the gradients.
func (lg *lossGraph) run(t *testing.T, vm gorgonia.VM, tb TargetBatch) (map[string]float64, [][]float64) {
	t.Helper()
	if err := lg.in.Set(tb); err != nil {
		t.Fatal(err)
	}
	if err := ad.RunAll(vm); err != nil {
		t.Fatal(err)
	}
	defer vm.Reset()
	losses := map[string]float64{}
	for i, n := range []*gorgonia.Node{lg.losses.Classification, lg.losses.BboxRegression, lg.losses.BboxCtrness} {
		if n != nil {
			losses[lossNames[i]] = graphtest.Floats(n.Value())[0]
		}
	}
	grads := make([][]float64, len(lg.grads))
	for i, n := range lg.grads {
		grads[i] = graphtest.Floats(n.Value())
	}
	return losses, grads
}

// TestLossGolden compares the losses and the total's gradient w.r.t.
// every trainable weight with torchvision's, float64 to 1e-10 and float32
// to 1e-4 (relative to each value, or to Σ |g| for the gradient's sums),
// every case of a model on one graph.
func TestLossGolden(t *testing.T) {
	cases := golden.Load[lossGolden](t, filepath.Join("..", "testdata", "detection", "losses_golden.json.gz"))
	byModel := map[string][]lossGolden{}
	var order []string
	for _, c := range cases {
		if byModel[c.Model] == nil {
			order = append(order, c.Model)
		}
		byModel[c.Model] = append(byModel[c.Model], c)
	}
	for _, name := range order {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", name, dt), func(t *testing.T) {
				cs := byModel[name]
				_, m := tinyModel(t, name, dt)
				defer m.Close()
				il, err := NewGeneralizedRCNNTransform(float64(cs[0].Height), float64(cs[0].Width)).Transform(cs[0].lossImages(dt))
				if err != nil {
					t.Fatal(err)
				}
				lg := newLossGraph(t, m, il.Tensors, true)
				vm, err := ad.NewTapeMachine(lg.g)
				if err != nil {
					t.Fatal(err)
				}
				defer vm.Close()
				rtol := 1e-10
				if dt == tensor.Float32 {
					rtol = 1e-4
				}
				for _, c := range cs {
					il, err := NewGeneralizedRCNNTransform(float64(c.Height), float64(c.Width)).Transform(c.lossImages(dt))
					if err != nil {
						t.Fatal(err)
					}
					if err := gorgonia.Let(lg.x, il.Tensors); err != nil {
						t.Fatal(err)
					}
					losses, grads := lg.run(t, vm, c.targets(t))
					for k, want := range c.Losses {
						if got, ok := losses[k]; !ok || !(math.Abs(got-want) <= rtol*math.Abs(want)) {
							t.Errorf("%s: loss %s = %.17g, torchvision %.17g", c.Case, k, got, want)
						}
					}
					if len(losses) != len(c.Losses) {
						t.Errorf("%s: losses %v, torchvision %v", c.Case, losses, c.Losses)
					}
					checkGrads(t, c, lg.names, grads, rtol)
				}
			})
		}
	}
}

// checkGrads compares the gradients of the named weights with the case's
// summaries: Σ g, Σ |g|, Σ g_i·w_i, ‖g‖ and the first elements, to rtol
// of the larger of Σ |g| and the largest ‖g‖ of the model (weights whose
// gradient is 0 but for rounding, such as a convolution's bias before a
// GroupNorm of one channel per group, agree only to that).
func checkGrads(t *testing.T, c lossGolden, names []string, grads [][]float64, rtol float64) {
	t.Helper()
	if len(names) != len(c.Grads) {
		t.Errorf("%s: %d trainable weights, torchvision %d", c.Case, len(names), len(c.Grads))
	}
	norm := 0.0
	for _, want := range c.Grads {
		norm = math.Max(norm, math.Sqrt(want.SumSq))
	}
	bad := 0
	for i, key := range names {
		want, ok := c.Grads[key]
		if !ok {
			t.Errorf("%s: weight %s is not trainable in torchvision", c.Case, key)
			continue
		}
		got := summarise(grads[i])
		tol := rtol * math.Max(want.Abs, norm)
		close := func(a, b float64) bool { return math.Abs(a-b) <= tol }
		ok = close(got.Sum, want.Sum) && close(got.WSum, want.WSum) && close(got.Abs, want.Abs) &&
			close(math.Sqrt(got.SumSq), math.Sqrt(want.SumSq)) && len(got.Head) == len(want.Head)
		for j := range want.Head {
			ok = ok && close(got.Head[j], want.Head[j])
		}
		if !ok && bad < 5 {
			t.Errorf("%s: grad %s: got %+v\ntorchvision %+v", c.Case, key, got, want)
		}
		if !ok {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d gradients differ", c.Case, bad, len(names))
	}
}
