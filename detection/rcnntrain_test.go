package detection

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// identityRandperm is a Randperm that keeps the first candidates.
func identityRandperm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// rcnnTrainSetup is the tiny Faster R-CNN (float32, the identity
// sampler source) with the inference golden's three images and a box per
// image.
func rcnnTrainSetup(t *testing.T) (*FasterRCNN, []*tensor.Dense, []Targets) {
	t.Helper()
	g := loadRCNNGoldens(t)[0]
	cfg := g.config()
	cfg.RPN.PreNMSTopNTrain, cfg.RPN.PostNMSTopNTrain, cfg.RoIHeads.BatchSizePerImage = 100, 60, 32
	cfg.Randperm = identityRandperm
	m, _, err := LoadFasterRCNN("../testdata/detection/"+g.Checkpoint, cfg, tensor.Float32, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	images := g.images(tensor.Float32)
	targets := make([]Targets, len(images))
	for i, im := range images {
		h, w := float64(im.Shape()[1]), float64(im.Shape()[2])
		targets[i] = Targets{Boxes: newValue([]float32{float32(0.1 * w), float32(0.2 * h), float32(0.6 * w), float32(0.9 * h)}, 1, 4),
			Labels: []int{1 + i%3}}
	}
	return m, images, targets
}

// TestFasterRCNNTrainerStepEqualsLoss: a Trainer's first step reports the
// losses of the model's loss graph run by hand on the same transformed
// batch, image sizes (the images differ in size: the proposals are
// clipped to each one's) and ground truth.
func TestFasterRCNNTrainerStepEqualsLoss(t *testing.T) {
	m, images, targets := rcnnTrainSetup(t)
	defer m.Close()
	il, err := m.Config.Transform.Transform(images)
	if err != nil {
		t.Fatal(err)
	}
	scaled := make([]Targets, len(targets))
	for i, tg := range targets {
		s := images[i].Shape()
		b, err := ResizeBoxes(tg.Boxes, [2]int{s[1], s[2]}, il.ImageSizes[i])
		if err != nil {
			t.Fatal(err)
		}
		scaled[i] = Targets{Boxes: b, Labels: tg.Labels}
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(il.Tensors.Shape()...), gorgonia.WithValue(il.Tensors), gorgonia.WithName("x"))
	in, losses, err := m.Loss(x)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.SetImageSizes(il.ImageSizes); err != nil {
		t.Fatal(err)
	}
	if err := in.Set(padded(t, 1, scaled)); err != nil {
		t.Fatal(err)
	}
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	if err := ad.RunAll(vm); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for name, n := range map[string]*gorgonia.Node{"classifier": losses.Classification, "box_reg": losses.BboxRegression,
		"objectness": losses.Objectness, "rpn_box_reg": losses.RPNBoxReg, "total": losses.Total} {
		want[name] = graphtest.Floats(n.Value())[0]
	}
	tr, err := NewTrainer(m, DefaultTrainerOpts(len(images)))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	lv, err := tr.StepImages(images, targets)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{"classifier": lv.Classification, "box_reg": lv.BboxRegression,
		"objectness": lv.Objectness, "rpn_box_reg": lv.RPNBoxReg, "total": lv.Total}
	for k, w := range want {
		if got[k] != w || w == 0 {
			t.Errorf("%s: Trainer %v, the loss graph %v", k, got[k], w)
		}
	}
	if lv.BboxCtrness != 0 {
		t.Errorf("BboxCtrness %v, want 0 (Faster R-CNN has none)", lv.BboxCtrness)
	}
}

// TestFasterRCNNTrainerReducesLoss: eight SGD steps (LR 0.005: at 0.02
// the random tiny model's class logits diverge, as in torch) on one batch
// lower the total loss by a fifth at least.
func TestFasterRCNNTrainerReducesLoss(t *testing.T) {
	m, images, targets := rcnnTrainSetup(t)
	defer m.Close()
	opts := DefaultTrainerOpts(len(images))
	opts.LR, opts.WarmupIters = 0.005, 0
	tr, err := NewTrainer(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var first, last LossValues
	for step := 0; step < 8; step++ {
		if last, err = tr.StepImages(images, targets); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = last
		}
		sum := last.Classification + last.BboxRegression + last.Objectness + last.RPNBoxReg
		if math.Abs(sum-last.Total) > 1e-5*math.Abs(last.Total) {
			t.Errorf("step %d: the losses %+v do not add up to Total", step, last)
		}
	}
	t.Logf("loss %+v → %+v", first, last)
	if !(last.Total < 0.8*first.Total) {
		t.Errorf("loss %v after 8 steps, first %v", last.Total, first.Total)
	}
}
