package detection

import (
	"fmt"
	"math"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestFasterRCNNVMsAndProcs: the training loss of the tiny Faster R-CNN,
// v1 and v2 (proposals and samples made in the graph; v2's box head norms
// over padded sampled rows) and its gradient w.r.t. the images agree
// between the TapeMachine and the LispMachine, and are bitwise the same
// for GOMAXPROCS 1, 2 and 4; Forward's detections too.
func TestFasterRCNNVMsAndProcs(t *testing.T) {
	t.Run("v1", func(t *testing.T) { rcnnVMsAndProcs(t, loadRCNNGoldens(t)[0], 32) })
	t.Run("v2", func(t *testing.T) { rcnnVMsAndProcs(t, v2Golden(t), 64) })
}

func rcnnVMsAndProcs(t *testing.T, g rcnnGolden, boxBatch int) {
	m := tinyRCNNOf(t, g, tensor.Float64, 100, 50, boxBatch)
	defer m.Close()
	m.Config.Randperm = identityRandperm
	tb := padded(t, 2, []Targets{
		{Boxes: newValue([]float64{2, 3, 40, 45, 10, 4, 60, 50}, 2, 4), Labels: []int{1, 2}},
		{Boxes: newValue([]float64{0, 0, 100, 70}, 1, 4), Labels: []int{3}},
	})
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		lin, losses, err := m.Loss(in[0])
		if err != nil {
			return nil, err
		}
		if err := lin.Set(tb); err != nil {
			return nil, err
		}
		return losses.Total, nil
	}
	img := randomBatch(9, 2, 64, 96)
	if err := graphtest.CheckVMs(f, []*tensor.Dense{img}, graphtest.Options{Order: 1}); err != nil {
		t.Error(err)
	}
	if err := graphtest.CheckDeterministic(f, []*tensor.Dense{img}, []int{0}, 1, 2, 4); err != nil {
		t.Error(err)
	}
	forwardAcrossProcs(t, m, g.images(tensor.Float64))
}

// TestFasterRCNNConfigAfterForward: changing Config.RPN after a Forward
// takes effect on the next (the graph holds the RPN's settings, so a
// new one is built): an RPN score threshold above every probability
// leaves no proposals, hence no detections; back to the old settings,
// the first graph gives the first detections again.
func TestFasterRCNNConfigAfterForward(t *testing.T) {
	g := loadRCNNGoldens(t)[0]
	m := g.load(t, tensor.Float64)
	defer m.Close()
	first, err := m.Forward(g.images(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	old := m.Config.RPN
	m.Config.RPN.ScoreThresh = 1.5
	dets, err := m.Forward(g.images(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dets {
		if len(d.Labels) != 0 {
			t.Errorf("image %d: %d detections with no proposals", i, len(d.Labels))
		}
	}
	m.Config.RPN = old
	again, err := m.Forward(g.images(tensor.Float64))
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if fmt.Sprint(f64s(again[i].Scores), again[i].Labels) != fmt.Sprint(f64s(first[i].Scores), first[i].Labels) {
			t.Errorf("image %d: detections differ after restoring Config.RPN", i)
		}
	}
}

// TestFasterRCNNGraphPerScales: images of different sizes padded to one
// batch shape share Forward's graph when torchvision would infer the
// same RoI pooling scales from them.
func TestFasterRCNNGraphPerScales(t *testing.T) {
	g := loadRCNNGoldens(t)[0]
	m := g.load(t, tensor.Float64)
	defer m.Close()
	for _, s := range [][2]int{{48, 67}, {48, 68}, {47, 65}} {
		x := randomBatch(uint64(s[1]), 1, s[0], s[1])
		im, err := x.Slice(gorgonia.S(0))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Forward([]*tensor.Dense{im.(*tensor.Dense).Materialize().(*tensor.Dense)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(m.run.graphs); n != 1 {
		t.Errorf("%d graphs for one padded shape and one set of scales, want 1", n)
	}
}

// TestFasterRCNNLossStateOwned: the loss graph keeps its own copy of the
// ground truth and of the configuration it was built with: changing the
// TargetBatch given to Set, or the model's Config, after Set changes no
// loss; and Trainer.Step clips to the padded batch, not to sizes an
// earlier StepImages gave the same graph.
func TestFasterRCNNLossStateOwned(t *testing.T) {
	m := tinyRCNN(t, tensor.Float64, 100, 50, 32)
	defer m.Close()
	m.Config.Randperm = identityRandperm
	x := randomBatch(9, 2, 80, 112)
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x), gorgonia.WithName("x"))
	in, losses, err := m.Loss(xn)
	if err != nil {
		t.Fatal(err)
	}
	tb := padded(t, 2, []Targets{
		{Boxes: newValue([]float64{2, 3, 40, 45, 10, 4, 60, 50}, 2, 4), Labels: []int{1, 2}},
		{Boxes: newValue([]float64{0, 0, 100, 70}, 1, 4), Labels: []int{3}},
	})
	run := func() float64 {
		t.Helper()
		vals, err := graphtest.Eval(g, losses.Total)
		if err != nil {
			t.Fatal(err)
		}
		return vals[0][0]
	}
	if err := in.Set(tb); err != nil {
		t.Fatal(err)
	}
	want := run()
	tb.Labels[0], tb.Labels[1] = 3, 3
	valueData[float64](tb.Boxes)[0] = 30
	m.Config.RoIHeads.BatchSizePerImage = 7
	m.Config.RoIHeads.BoxWeights = [4]float64{1, 1, 1, 1}
	if got := run(); got != want {
		t.Errorf("loss %v after changing the caller's targets and the Config, %v before", got, want)
	}
}

// TestFasterRCNNStepAfterStepImages: Trainer.Step on a batch clips the
// proposals to the padded batch even after a StepImages of the same
// batch shape gave the graph smaller image sizes: its losses equal a
// fresh Trainer's Step.
func TestFasterRCNNStepAfterStepImages(t *testing.T) {
	m, images, targets := rcnnTrainSetup(t)
	defer m.Close()
	opts := DefaultTrainerOpts(len(images))
	opts.LR, opts.Momentum, opts.WeightDecay, opts.WarmupIters = 0, 0, 0, 0
	il, err := m.Config.Transform.Transform(images)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := NewTrainer(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	want, err := fresh.Step(il.Tensors, targets)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.StepImages(images, targets); err != nil {
		t.Fatal(err)
	}
	got, err := tr.Step(il.Tensors, targets)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Step after StepImages %+v, a fresh Trainer's Step %+v", got, want)
	}
	if _, err := NewTrainer(nil, opts); err == nil {
		t.Error("NewTrainer(nil): no error")
	}
	for _, s := range []BalancedPositiveNegativeSampler{{-4, 0.5}, {4, math.NaN()}, {4, 1.5}} {
		if _, _, err := s.Sample([]int{1, 0, 0}, identityRandperm); err == nil {
			t.Errorf("Sample with %+v: no error", s)
		}
	}
	if _, _, err := (BalancedPositiveNegativeSampler{4, 0.5}).Sample([]int{1, 0}, nil); err == nil {
		t.Error("Sample with a nil randperm: no error")
	}
}
