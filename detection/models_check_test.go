package detection

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tinyModel returns the golden model called name (gen_detection_models.py's
// tiny FCOS, RetinaNet v1 or v2) in dt, loaded from its checkpoint.
func tinyModel(t *testing.T, name string, dt tensor.Dtype) (modelGolden, detector) {
	t.Helper()
	for _, g := range loadModelGoldens(t) {
		if g.Model == name {
			return g, g.load(t, dt)
		}
	}
	t.Fatalf("no golden model %q", name)
	return modelGolden{}, nil
}

// randomBatch is a [n, 3, h, w] batch of uniform values in [-1, 1).
func randomBatch(seed uint64, n, h, w int) *tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, 7))
	data := make([]float64, n*3*h*w)
	for i := range data {
		data[i] = 2*rng.Float64() - 1
	}
	return tensor.New(tensor.WithShape(n, 3, h, w), tensor.WithBacking(data))
}

// headCost builds Σ over the head outputs of their squares' mean, a smooth
// scalar of every weight and of x.
func headCost(m detector, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	_, heads, err := m.Build(x, train)
	if err != nil {
		return nil, err
	}
	var cost *gorgonia.Node
	for _, level := range [][]*gorgonia.Node{heads.ClsLogits, heads.BboxRegression, heads.BboxCtrness} {
		for _, y := range level {
			sq, err := gorgonia.Square(y)
			if err != nil {
				return nil, err
			}
			s, err := gorgonia.Mean(sq)
			if err != nil {
				return nil, err
			}
			if cost == nil {
				cost = s
			} else if cost, err = gorgonia.Add(cost, s); err != nil {
				return nil, err
			}
		}
	}
	return cost, nil
}

// TestModelsDirectional checks the whole detector's derivatives of orders
// 1 to 3, along a random direction over every trainable weight and the
// image at once, against central differences: FCOS in eval (frozen batch
// norm), RetinaNet v2 in training mode (batch statistics).
func TestModelsDirectional(t *testing.T) {
	if testing.Short() {
		t.Skip("three orders through two whole detectors")
	}
	for _, c := range []struct {
		name  string
		train bool
	}{{"fcos", false}, {"retinanet_v2", true}} {
		t.Run(c.name, func(t *testing.T) {
			_, m := tinyModel(t, c.name, tensor.Float64)
			defer m.Close()
			g := gorgonia.NewGraph()
			img := randomBatch(3, 2, 40, 56)
			x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(img.Shape()...), gorgonia.WithValue(img), gorgonia.WithName("x"))
			cost, err := headCost(m, x, c.train)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := m.Weights().Params.Nodes(g)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := graphtest.Directional(cost, append(gorgonia.Nodes{x}, ws...), graphtest.DirectionalOpts{Order: 3, Seed: 5, RTol: 1e-4, ATol: 1e-7})
			if err != nil {
				t.Fatalf("%v\n%v", err, rep)
			}
			t.Logf("%v", rep)
		})
	}
}

// TestModelsVMsAndProcs: the gradient of the head cost w.r.t. the image,
// orders 1 and 2, is the same on TapeMachine and LispMachine, and the cost
// and gradient are bitwise the same for GOMAXPROCS 1, 2 and 4; Forward's
// detections too.
func TestModelsVMsAndProcs(t *testing.T) {
	_, m := tinyModel(t, "retinanet_v1", tensor.Float64)
	defer m.Close()
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return headCost(m, in[0], false) }
	img := randomBatch(4, 1, 24, 40)
	if err := graphtest.CheckVMs(f, []*tensor.Dense{img}, graphtest.Options{Order: 2}); err != nil {
		t.Error(err)
	}
	if err := graphtest.CheckDeterministic(f, []*tensor.Dense{img}, []int{0}, 1, 2, 4); err != nil {
		t.Error(err)
	}
	g, _ := tinyModel(t, "retinanet_v1", tensor.Float64)
	forwardAcrossProcs(t, m, g.images(tensor.Float64))
}

// forwardAcrossProcs requires m's Forward of images to give bitwise the
// same detections at GOMAXPROCS 1, 2 and 4 (restored afterwards).
func forwardAcrossProcs(t *testing.T, m interface {
	Forward([]*tensor.Dense) ([]Detections, error)
}, images []*tensor.Dense) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var ref string
	for _, p := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(p)
		dets, err := m.Forward(images)
		if err != nil {
			t.Fatal(err)
		}
		got := detectionBits(dets)
		if ref == "" {
			ref = got
		} else if got != ref {
			t.Errorf("GOMAXPROCS=%d: detections differ from GOMAXPROCS=1's", p)
		}
	}
}

// detectionBits is detections' boxes, scores and labels as a string of
// their bits, for bitwise comparisons.
func detectionBits(dets []Detections) string {
	s := ""
	for _, d := range dets {
		for _, v := range append(f64s(d.Boxes), f64s(d.Scores)...) {
			s += fmt.Sprint(math.Float64bits(v), " ")
		}
		s += fmt.Sprint(d.Labels)
	}
	return s
}

// TestModelsNoDetections: with a score threshold no score passes, Forward
// gives every image empty detections ([0, 4] boxes, no labels), mapped
// back through the transform like any other.
func TestModelsNoDetections(t *testing.T) {
	g, m := tinyModel(t, "retinanet_v1", tensor.Float32)
	defer m.Close()
	r := m.(*RetinaNet)
	r.m.postprocess = func(outs [][]*tensor.Dense, anchors []*tensor.Dense, sizes [][2]int) ([]Detections, error) {
		cfg := r.Config.Postprocess
		cfg.ScoreThresh = 1
		return RetinaNetPostprocessDetections(cfg, NewBoxCoder([4]float64{1, 1, 1, 1}), outs[0], outs[1], anchors, sizes)
	}
	dets, err := m.Forward(g.images(tensor.Float32))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dets {
		if len(d.Labels) != 0 || d.Boxes.Shape()[0] != 0 || d.Scores.Shape()[0] != 0 {
			t.Errorf("image %d: %d labels, boxes %v, scores %v, want none", i, len(d.Labels), d.Boxes.Shape(), d.Scores.Shape())
		}
	}
}
