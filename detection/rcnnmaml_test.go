package detection

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/meta"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rcnnMAMLGolden is testdata/detection/fasterrcnn_maml.json.gz
// (scripts/gen_detection_fasterrcnn_maml.py): one inner SGD step through
// the tiny Faster R-CNN, torch's double backward through it with a
// differentiable roi_align in torchvision's place, and the samplers'
// draws of the support and query losses.
type rcnnMAMLGolden struct {
	mamlGolden
	SupportDraws [][]int `json:"support_draws"`
	QueryDraws   [][]int `json:"query_draws"`
	PreNMS       int     `json:"pre_nms_top_n"`
	PostNMS      int     `json:"post_nms_top_n"`
	BoxBatch     int     `json:"box_batch_size_per_image"`
}

// replayDraws is a Randperm giving draws in order; another n fails t.
func replayDraws(t *testing.T, what string, draws [][]int) func(n int) []int {
	seq := draws
	return func(n int) []int {
		if len(seq) == 0 || len(seq[0]) != n {
			t.Errorf("%s: randperm(%d) does not follow torch's draws", what, n)
			out := make([]int, n)
			for i := range out {
				out[i] = i
			}
			return out
		}
		p := seq[0]
		seq = seq[1:]
		return p
	}
}

// tinyRCNN is the loss goldens' tiny Faster R-CNN in dt with the
// training counts of a golden.
func tinyRCNN(t *testing.T, dt tensor.Dtype, preNMS, postNMS, boxBatch int) *FasterRCNN {
	t.Helper()
	return tinyRCNNOf(t, loadRCNNGoldens(t)[0], dt, preNMS, postNMS, boxBatch)
}

// tinyRCNNOf is tinyRCNN of the golden g0's model (v1 or v2).
func tinyRCNNOf(t *testing.T, g0 rcnnGolden, dt tensor.Dtype, preNMS, postNMS, boxBatch int) *FasterRCNN {
	t.Helper()
	cfg := g0.config()
	cfg.Transform = NewGeneralizedRCNNTransform(80, 112)
	cfg.RPN.PreNMSTopNTrain, cfg.RPN.PostNMSTopNTrain = preNMS, postNMS
	cfg.RoIHeads.BatchSizePerImage = boxBatch
	path := filepath.Join("..", "testdata", "detection", g0.Checkpoint)
	m, _, err := LoadFasterRCNN(path, cfg, dt, LoadOptions{ConvertDtype: dt == tensor.Float64})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFasterRCNNMAMLGolden compares a MAML step through the whole Faster
// R-CNN (float64) with torch's double backward through torchvision's
// model (its roi_align made differentiable twice): the support and query
// losses and the meta-gradient w.r.t. every trainable parameter, second
// and first order, to 1e-9 relative (checkGrads' scale), the samplers
// replaying torch's draws. v2 too (fasterrcnn_v2_maml.json.gz): double
// backward through every norm's batch statistics, the box head's over
// the sampled rows of a padded batch (fewer than 64 samples per image).
func TestFasterRCNNMAMLGolden(t *testing.T) {
	t.Run("v1", func(t *testing.T) { rcnnMAMLGoldenOf(t, loadRCNNGoldens(t)[0], "fasterrcnn_maml.json.gz") })
	t.Run("v2", func(t *testing.T) { rcnnMAMLGoldenOf(t, v2Golden(t), "fasterrcnn_v2_maml.json.gz") })
}

func rcnnMAMLGoldenOf(t *testing.T, g0 rcnnGolden, file string) {
	c := golden.Load[rcnnMAMLGolden](t, filepath.Join("..", "testdata", "detection", file))[0]
	for _, first := range []bool{false, true} {
		name, want := "second_order", c.MetaGrads
		if first {
			name, want = "first_order", c.FirstOrderGrads
		}
		t.Run(name, func(t *testing.T) {
			m := tinyRCNNOf(t, g0, tensor.Float64, c.PreNMS, c.PostNMS, c.BoxBatch)
			defer m.Close()
			g := gorgonia.NewGraph()
			xs := c.Support.batchNode(t, g, "support", tensor.Float64)
			xq := c.Query.batchNode(t, g, "query", tensor.Float64)
			task, err := NewMAMLTask(m, xs, xq, meta.MAMLOpts{InnerLR: c.Alpha, FirstOrder: first})
			if err != nil {
				t.Fatal(err)
			}
			ss := [][2]int{{c.Support.Height, c.Support.Width}, {c.Support.Height, c.Support.Width}}
			qs := [][2]int{{c.Query.Height, c.Query.Width}, {c.Query.Height, c.Query.Width}}
			if err := task.SetImageSizes(ss, qs); err != nil {
				t.Fatal(err)
			}
			task.Support[0].SetRandperm(replayDraws(t, "support", c.SupportDraws))
			task.Query.SetRandperm(replayDraws(t, "query", c.QueryDraws))
			if err := task.SetTargets(c.Support.targets(t), c.Query.targets(t)); err != nil {
				t.Fatal(err)
			}
			vals, err := graphtest.Eval(g, append(gorgonia.Nodes{task.Step.SupportLosses[0], task.Step.QueryLoss}, task.Step.MetaGrads...)...)
			if err != nil {
				t.Fatal(err)
			}
			const rtol = 1e-9
			for _, l := range []struct {
				what      string
				got, want float64
			}{{"support loss", vals[0][0], c.SupportLoss}, {"query loss", vals[1][0], c.QueryLoss}} {
				// loss_objectness is float32 in torchvision (see
				// TestFasterRCNNLossGolden): the sums agree to its rounding.
				if !(math.Abs(l.got-l.want) <= 1e-7*math.Abs(l.want)) {
					t.Errorf("%s %.17g, torch %.17g", l.what, l.got, l.want)
				}
			}
			checkGrads(t, lossGolden{Case: name, Grads: want}, task.Names, vals[2:], rtol)
		})
	}
}

// TestFasterRCNNMAMLDirectional checks the MAML meta-loss
// L_q(θ − α∇L_s(θ)) of the tiny Faster R-CNN along a random direction
// over every trainable weight against central differences: order 1 is
// the second-order meta-gradient, order 2 its derivative (third
// derivatives of the detector's loss through MultiScaleRoIAlign, the box
// head and the RPN). The derivatives treat the proposals as constants,
// as torchvision detaches them, while finite differences would see them
// move: the reduced model takes fixed proposals (random boxes) in place
// of the proposals op's. The samplers take the first candidates (an
// identity randperm), so every evaluation samples alike. v2 too: its
// norms in train mode, the box head's over the sampled rows of a padded
// batch (64 rows for 50 proposals and the ground truth).
func TestFasterRCNNMAMLDirectional(t *testing.T) {
	t.Run("v1", func(t *testing.T) { rcnnMAMLDirectional(t, loadRCNNGoldens(t)[0], 32) })
	t.Run("v2", func(t *testing.T) { rcnnMAMLDirectional(t, v2Golden(t), 64) })
}

func rcnnMAMLDirectional(t *testing.T, g0 rcnnGolden, boxBatch int) {
	support := []Targets{
		{Boxes: newValue([]float64{2, 3, 40, 45, 10, 4, 60, 50}, 2, 4), Labels: []int{1, 2}},
		{Boxes: newValue([]float64{0, 0, 100, 70}, 1, 4), Labels: []int{3}},
	}
	query := []Targets{
		{Boxes: newValue([]float64{30, 10, 70, 56}, 1, 4), Labels: []int{2}},
		{Boxes: newValue([]float64{4, 4, 48, 40, 52, 20, 102, 68}, 2, 4), Labels: []int{1, 3}},
	}
	ts, tq := padded(t, 2, support), padded(t, 2, query)
	m := tinyRCNNOf(t, g0, tensor.Float64, 100, 50, boxBatch)
	defer m.Close()
	identity := func(n int) []int {
		p := make([]int, n)
		for i := range p {
			p[i] = i
		}
		return p
	}
	m.Config.Randperm = identity
	g := gorgonia.NewGraph()
	input := func(name string, seed uint64) *gorgonia.Node {
		x := randomBatch(seed, 2, 80, 112)
		return gorgonia.NewTensor(g, x.Dtype(), 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x), gorgonia.WithName(name))
	}
	xs, xq := input("support", 5), input("query", 6)
	params := m.Weights().Params
	theta, err := params.Nodes(g)
	if err != nil {
		t.Fatal(err)
	}
	names := params.Names()
	var ins []*LossInputs
	lossAt := func(x *gorgonia.Node, seed uint64) meta.LossAt {
		props := fixedProposals(g, seed, 2, 50, 80, 112)
		return func(at gorgonia.Nodes) (*gorgonia.Node, error) {
			byName := map[string]*gorgonia.Node{}
			for i, n := range at {
				byName[names[i]] = n
			}
			in, losses, err := m.lossWith(x, byName, props)
			if err != nil {
				return nil, err
			}
			ins = append(ins, in)
			return losses.Total, nil
		}
	}
	step, err := meta.MAML(theta, lossAt(xs, 7), lossAt(xq, 8), meta.MAMLOpts{InnerLR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range ins {
		tb := ts
		if i == len(ins)-1 {
			tb = tq
		}
		if err := in.Set(tb); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := graphtest.Directional(step.QueryLoss, theta,
		graphtest.DirectionalOpts{Order: 2, Seed: 13, RTol: 1e-6, ATol: 1e-9})
	if err != nil {
		t.Fatalf("%v\n%v", err, rep)
	}
	t.Logf("%v", rep)
}

// fixedProposals is a constant node [n, p, proposalCols] of random
// proposals inside an h×w image: boxes of sides 4 to 60 pixels, scores
// 1, every row a proposal.
func fixedProposals(g *gorgonia.ExprGraph, seed uint64, n, p, h, w int) *gorgonia.Node {
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]float64, n*p*proposalCols)
	for r := 0; r < n*p; r++ {
		bw, bh := 4+56*rng.Float64(), 4+56*rng.Float64()
		x1, y1 := rng.Float64()*(float64(w)-bw), rng.Float64()*(float64(h)-bh)
		copy(v[r*proposalCols:], []float64{x1, y1, x1 + bw, y1 + bh, 1, 1})
	}
	c, err := ad.Constant(g, newValue(v, n, p, proposalCols))
	if err != nil {
		panic(err)
	}
	return c
}
