package detection

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/dense"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomDense is a float64 tensor of normal(0, std) draws.
func randomDense(rng *rand.Rand, std float64, shape ...int) *tensor.Dense {
	d := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = std * rng.NormFloat64()
	}
	return dense.Of(tensor.Float64, shape, d)
}

// randomHead is h's weights (float64, under "head") with every tensor
// redrawn normal(0, 0.3), so that the towers are far from linear.
func randomHead(t *testing.T, h head, rng *rand.Rand) *Weights {
	t.Helper()
	w, err := NewWeights(tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Init(w, "head", rng); err != nil {
		t.Fatal(err)
	}
	for _, v := range w.Params.Values() {
		d := v.Data().([]float64)
		for i := range d {
			d[i] = 0.3 * rng.NormFloat64()
		}
	}
	return w
}

// catOutputs is the head's outputs concatenated over the levels and then
// along the last axis: [N, Σ H·W·A, K + 4 (+ 1)].
func catOutputs(out *HeadOutputs) (*gorgonia.Node, error) {
	cls, reg, ctr, err := out.Cat()
	if err != nil {
		return nil, err
	}
	parts := []*gorgonia.Node{cls, reg}
	if ctr != nil {
		parts = append(parts, ctr)
	}
	return nn.Concat(2, parts...)
}

// TestHeadsOrders: RetinaNetHead's derivatives of orders 1–3 w.r.t. two
// feature levels and a tower weight against finite differences, element
// by element, on a 2-channel head.
func TestHeadsOrders(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := RetinaNetHead{InChannels: 2, NumAnchors: 2, NumClasses: 2, NumConvs: 1}
	const wkey = "head.classification_head.conv.0.0.weight"
	w := randomHead(t, h, rng)
	wv, err := w.Value(wkey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.spec("test", "head")
	if err != nil {
		t.Fatal(err)
	}
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		g := in[0].Graph()
		node := func(key string) (*gorgonia.Node, error) {
			if key == wkey {
				return in[2], nil
			}
			return w.Node(g, key)
		}
		out, err := s.build(node, in[:2])
		if err != nil {
			return nil, err
		}
		return catOutputs(out)
	}
	in := []*tensor.Dense{randomDense(rng, 1, 1, 2, 3, 2), randomDense(rng, 1, 1, 2, 2, 1), wv.Clone().(*tensor.Dense)}
	if err := graphtest.Check(f, in, graphtest.Options{Order: 3, Seed: 5, RTol: 1e-4, ATol: 1e-6}); err != nil {
		t.Fatal(err)
	}
}

// TestHeadsDirectional: the GroupNorm heads (RetinaNet v2, FCOS; 32
// channels) have the right derivatives of orders 1–3 along a random
// direction over both feature levels and every weight.
func TestHeadsDirectional(t *testing.T) {
	for _, c := range []struct {
		name string
		h    head
	}{
		{"retinanet_v2", RetinaNetHead{InChannels: 32, NumAnchors: 2, NumClasses: 2, NumConvs: 1, Norm: HeadNormGroupNorm}},
		{"fcos", FCOSHead{InChannels: 32, NumClasses: 2, NumConvs: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			w := randomHead(t, c.h, rng)
			g := gorgonia.NewGraph()
			var wrt gorgonia.Nodes
			for l, s := range [][]int{{1, 32, 3, 2}, {1, 32, 2, 2}} {
				wrt = append(wrt, gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(s...), gorgonia.WithName(fmt.Sprint("p", l)),
					gorgonia.WithValue(randomDense(rng, 1, s...))))
			}
			out, err := c.h.Forward(w, "head", wrt[:2], true)
			if err != nil {
				t.Fatal(err)
			}
			y, err := catOutputs(out)
			if err != nil {
				t.Fatal(err)
			}
			r := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(y.Shape()...), gorgonia.WithName("R"),
				gorgonia.WithValue(randomDense(rng, 1, y.Shape()...)))
			cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, r))))
			ws, err := w.Params.Nodes(g)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := graphtest.Directional(cost, append(wrt, ws...), graphtest.DirectionalOpts{Order: 3, Seed: 9, RTol: 1e-5})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep)
		})
	}
}

// TestHeadsBadInput: every bad configuration and argument of Init,
// Forward and Cat is an error naming it.
func TestHeadsBadInput(t *testing.T) {
	good := RetinaNetHead{InChannels: 32, NumAnchors: 2, NumClasses: 3, NumConvs: 1}
	fcos := FCOSHead{InChannels: 32, NumClasses: 3, NumConvs: 1}
	w := randomHead(t, good, rand.New(rand.NewPCG(1, 1)))
	wf := randomHead(t, fcos, rand.New(rand.NewPCG(1, 1)))
	w32, err := NewWeights(tensor.Float32)
	if err != nil {
		t.Fatal(err)
	}
	if err := good.Init(w32, "head", rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	empty, err := NewWeights(tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	g, g2 := gorgonia.NewGraph(), gorgonia.NewGraph()
	x := func(g *gorgonia.ExprGraph, dt tensor.Dtype, shape ...int) *gorgonia.Node {
		return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...))
	}
	p3 := x(g, tensor.Float64, 2, 32, 3, 3)
	fwd := func(h head, w *Weights, feats ...*gorgonia.Node) func() error {
		return func() error {
			_, err := h.Forward(w, "head", feats, false)
			return err
		}
	}
	initErr := func(h head, w *Weights, rng *rand.Rand) func() error {
		return func() error { return h.Init(w, "head", rng) }
	}
	fresh := func() *Weights {
		w, err := NewWeights(tensor.Float64)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for _, c := range []struct {
		name string
		f    func() error
		want string
	}{
		{"no levels", fwd(good, w), "RetinaNetHead.Forward: no feature levels"},
		{"fcos no levels", fwd(fcos, wf), "FCOSHead.Forward: no feature levels"},
		{"nil level", fwd(good, w, p3, nil), "feature level 1 is nil"},
		{"rank 3", fwd(good, w, x(g, tensor.Float64, 32, 3, 3)), "feature level 0 has shape (32, 3, 3), want [N, 32, H, W]"},
		{"rank 5", fwd(fcos, wf, p3, x(g, tensor.Float64, 2, 32, 1, 3, 3)), "feature level 1 has shape (2, 32, 1, 3, 3)"},
		{"channels", fwd(good, w, p3, x(g, tensor.Float64, 2, 16, 2, 2)), "feature level 1 has 16 channels (shape (2, 16, 2, 2)), the head's InChannels is 32"},
		{"batch", fwd(fcos, wf, p3, x(g, tensor.Float64, 1, 32, 2, 2)), "feature level 1 has batch 1, level 0 2"},
		{"graphs", fwd(good, w, p3, x(g2, tensor.Float64, 2, 32, 2, 2)), "feature level 1 is in another graph"},
		{"dtype", fwd(good, w32, p3), "feature level 0 is float64, the weights float32"},
		{"nil weights", fwd(good, nil, p3), "RetinaNetHead.Forward: the weights are nil"},
		{"missing tensor", fwd(good, empty, p3), `no tensor "head.classification_head.conv.0.0.weight"`},
		{"wrong head's weights", fwd(RetinaNetHead{InChannels: 32, NumAnchors: 2, NumClasses: 3, NumConvs: 1, Norm: HeadNormGroupNorm}, w, p3),
			`no tensor "head.classification_head.conv.0.1.weight"`},
		{"wrong class count", fwd(RetinaNetHead{InChannels: 32, NumAnchors: 2, NumClasses: 4, NumConvs: 1}, w, p3), "head.classification_head.cls_logits.weight has shape (6, 32, 3, 3), want (8, 32, 3, 3)"},
		{"in channels 0", fwd(RetinaNetHead{NumAnchors: 1, NumClasses: 1}, w, p3), "InChannels 0, want at least 1"},
		{"anchors 0", fwd(RetinaNetHead{InChannels: 32, NumClasses: 1}, w, p3), "NumAnchors 0, want at least 1"},
		{"fcos anchors", initErr(FCOSHead{InChannels: 32, NumAnchors: -1, NumClasses: 1}, fresh(), rng), "NumAnchors -1"},
		{"classes 0", initErr(FCOSHead{InChannels: 32}, fresh(), rng), "NumClasses 0, want at least 1"},
		{"convs", initErr(RetinaNetHead{InChannels: 32, NumAnchors: 1, NumClasses: 1, NumConvs: -2}, fresh(), rng), "NumConvs -2 is negative"},
		{"prior", initErr(RetinaNetHead{InChannels: 32, NumAnchors: 1, NumClasses: 1, PriorProbability: 1}, fresh(), rng), "PriorProbability 1, want it in (0, 1)"},
		{"prior NaN", initErr(FCOSHead{InChannels: 32, NumClasses: 1, PriorProbability: -0.5}, fresh(), rng), "PriorProbability -0.5"},
		{"groupnorm channels", initErr(RetinaNetHead{InChannels: 48, NumAnchors: 1, NumClasses: 1, Norm: HeadNormGroupNorm}, fresh(), rng),
			"InChannels 48 not divisible into GroupNorm's 32 groups"},
		{"fcos channels", initErr(FCOSHead{InChannels: 16, NumClasses: 1}, fresh(), rng), "InChannels 16 not divisible"},
		{"norm", initErr(RetinaNetHead{InChannels: 32, NumAnchors: 1, NumClasses: 1, Norm: 7}, fresh(), rng), "Norm 7 is neither"},
		{"nil rng", initErr(good, fresh(), nil), "RetinaNetHead.Init: rng is nil"},
		{"twice", initErr(good, w, rng), `RetinaNetHead.Init: detection: Weights.Add: "head.classification_head.conv.0.0.weight" is already in the weights`},
		{"cat nil", func() error { _, _, _, err := (*HeadOutputs)(nil).Cat(); return err }, "HeadOutputs.Cat: no levels"},
		{"cat lengths", func() error {
			_, _, _, err := (&HeadOutputs{ClsLogits: []*gorgonia.Node{p3}}).Cat()
			return err
		}, "1 cls_logits levels, 0 bbox_regression"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.f()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}
