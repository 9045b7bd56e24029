package detection

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/meta"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// mamlGolden is a case of testdata/detection/maml_golden.json.gz
// (scripts/gen_detection_maml.py): one inner SGD step of step size Alpha
// on the support batch's total loss, the query batch's total loss at the
// adapted parameters, and the summaries of its meta-gradients w.r.t.
// every trainable parameter, second order (torch's double backward) and
// first order.
type mamlGolden struct {
	Model           string             `json:"model"`
	Alpha           float64            `json:"alpha"`
	Support         lossGolden         `json:"support"`
	Query           lossGolden         `json:"query"`
	SupportLoss     float64            `json:"support_loss"`
	QueryLoss       float64            `json:"query_loss"`
	MetaGrads       map[string]gradSum `json:"meta_grads"`
	FirstOrderGrads map[string]gradSum `json:"first_order_grads"`
}

// batchNode is an input node of g holding the case's transformed images.
func (c lossGolden) batchNode(t *testing.T, g *gorgonia.ExprGraph, name string, dt tensor.Dtype) *gorgonia.Node {
	t.Helper()
	il, err := NewGeneralizedRCNNTransform(float64(c.Height), float64(c.Width)).Transform(c.lossImages(dt))
	if err != nil {
		t.Fatal(err)
	}
	x := il.Tensors
	return gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x), gorgonia.WithName(name))
}

// TestMAMLGolden compares a MAML step on the tiny models (float64) with
// torch's: the support and query losses and the meta-gradient w.r.t.
// every trainable parameter, second order (through the inner gradient)
// and first order, to 1e-9 relative (checkGrads' scale).
func TestMAMLGolden(t *testing.T) {
	cases := golden.Load[mamlGolden](t, filepath.Join("..", "testdata", "detection", "maml_golden.json.gz"))
	for _, c := range cases {
		for _, first := range []bool{false, true} {
			name := c.Model + "/second_order"
			want := c.MetaGrads
			if first {
				name, want = c.Model+"/first_order", c.FirstOrderGrads
			}
			t.Run(name, func(t *testing.T) {
				_, m := tinyModel(t, c.Model, tensor.Float64)
				defer m.Close()
				g := gorgonia.NewGraph()
				xs := c.Support.batchNode(t, g, "support", tensor.Float64)
				xq := c.Query.batchNode(t, g, "query", tensor.Float64)
				task, err := NewMAMLTask(m.(Trainable), xs, xq, meta.MAMLOpts{InnerLR: c.Alpha, FirstOrder: first})
				if err != nil {
					t.Fatal(err)
				}
				if err := task.SetTargets(c.Support.targets(t), c.Query.targets(t)); err != nil {
					t.Fatal(err)
				}
				vals, err := graphtest.Eval(g, append(gorgonia.Nodes{task.Step.SupportLosses[0], task.Step.QueryLoss}, task.Step.MetaGrads...)...)
				if err != nil {
					t.Fatal(err)
				}
				const rtol = 1e-9
				for i, l := range []struct {
					what      string
					got, want float64
				}{{"support loss", vals[0][0], c.SupportLoss}, {"query loss", vals[1][0], c.QueryLoss}} {
					if !(math.Abs(l.got-l.want) <= rtol*math.Abs(l.want)) {
						t.Errorf("%d: %s %.17g, torch %.17g", i, l.what, l.got, l.want)
					}
				}
				checkGrads(t, lossGolden{Case: name, Grads: want}, task.Names, vals[2:], rtol)
			})
		}
	}
}

// TestMAMLDirectional checks the MAML meta-loss L_q(θ − α∇L_s(θ)) of the
// tiny FCOS and RetinaNet v2 on small random batches along a random
// direction over every trainable weight against central differences:
// order 1 is the second-order meta-gradient, order 2 its derivative
// (third derivatives of the detector's loss).
func TestMAMLDirectional(t *testing.T) {
	support := []Targets{
		{Boxes: newValue([]float64{2, 3, 20, 25, 10, 4, 40, 30}, 2, 4), Labels: []int{1, 2}},
		{Boxes: newValue([]float64{0, 0, 56, 40}, 1, 4), Labels: []int{0}},
	}
	query := []Targets{
		{Boxes: newValue([]float64{30, 10, 50, 36}, 1, 4), Labels: []int{2}},
		{Boxes: newValue([]float64{4, 4, 28, 20, 12, 20, 52, 38}, 2, 4), Labels: []int{1, 0}},
	}
	ts, tq := padded(t, 2, support), padded(t, 2, query)
	for _, name := range []string{"fcos", "retinanet_v2"} {
		t.Run(name, func(t *testing.T) {
			_, m := tinyModel(t, name, tensor.Float64)
			defer m.Close()
			g := gorgonia.NewGraph()
			input := func(name string, seed uint64) *gorgonia.Node {
				x := randomBatch(seed, 2, 40, 56)
				return gorgonia.NewTensor(g, x.Dtype(), 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x), gorgonia.WithName(name))
			}
			task, err := NewMAMLTask(m.(Trainable), input("support", 5), input("query", 6), meta.MAMLOpts{InnerLR: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			if err := task.SetTargets(ts, tq); err != nil {
				t.Fatal(err)
			}
			rep, err := graphtest.Directional(task.Step.QueryLoss, task.Theta,
				graphtest.DirectionalOpts{Order: 2, Seed: 13, RTol: 1e-6, ATol: 1e-9})
			if err != nil {
				t.Fatalf("%v\n%v", err, rep)
			}
			t.Logf("%v", rep)
		})
	}
}

// TestLossAtErrors checks LossAt's and the MAML task's errors on bad
// parameter nodes and arguments.
func TestLossAtErrors(t *testing.T) {
	_, m := tinyModel(t, "fcos", tensor.Float64)
	defer m.Close()
	tr := m.(Trainable)
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 3, 32, 32), gorgonia.WithName("x"))
	key := "head.classification_head.cls_logits.bias"
	w, err := tr.Weights().Params.Value(key)
	if err != nil {
		t.Fatal(err)
	}
	shape := w.Shape()
	node := func(g *gorgonia.ExprGraph, dt tensor.Dtype, s ...int) *gorgonia.Node {
		return gorgonia.NewTensor(g, dt, len(s), gorgonia.WithShape(s...))
	}
	for _, c := range []struct {
		name string
		at   map[string]*gorgonia.Node
		want string
	}{
		{"unknown key", map[string]*gorgonia.Node{"head.nothing": node(g, tensor.Float64, shape...)}, "not a trainable parameter"},
		{"frozen key", map[string]*gorgonia.Node{"backbone.body.conv1.weight": node(g, tensor.Float64, 8, 3, 7, 7)}, "not a trainable parameter"},
		{"nil node", map[string]*gorgonia.Node{key: nil}, "is nil"},
		{"shape", map[string]*gorgonia.Node{key: node(g, tensor.Float64, shape[0]+1)}, "the parameter"},
		{"dtype", map[string]*gorgonia.Node{key: node(g, tensor.Float32, shape...)}, "the parameter"},
		{"graph", map[string]*gorgonia.Node{key: node(gorgonia.NewGraph(), tensor.Float64, shape...)}, "another graph"},
	} {
		if _, _, err := tr.LossAt(x, c.at); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := NewMAMLTask(nil, x, x, meta.MAMLOpts{InnerLR: 1}); err == nil {
		t.Error("NewMAMLTask(nil model): no error")
	}
	if _, err := NewMAMLTask(tr, x, gorgonia.NewTensor(gorgonia.NewGraph(), tensor.Float64, 4, gorgonia.WithShape(1, 3, 32, 32)), meta.MAMLOpts{InnerLR: 1}); err == nil {
		t.Error("NewMAMLTask(batches of two graphs): no error")
	}
	if _, err := NewMAMLTask(tr, x, x, meta.MAMLOpts{}); err == nil || !strings.Contains(err.Error(), "InnerLR") {
		t.Errorf("NewMAMLTask(InnerLR 0): error %v", err)
	}
	if err := (*MAMLTask)(nil).SetTargets(TargetBatch{}, TargetBatch{}); err == nil {
		t.Error("a nil task's SetTargets: no error")
	}
}

// padded is PadTargets(ts, gmax), failing t on an error.
func padded(t *testing.T, gmax int, ts []Targets) TargetBatch {
	t.Helper()
	tb, err := PadTargets(ts, gmax)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}
