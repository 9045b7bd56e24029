package detection

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/tensor"
)

// TestTrainerStepEqualsHandBuilt runs three Trainer steps (warm-up and a
// milestone inside them) and the same steps by hand, on a second copy of
// the model: its loss graph with ad.Grad, a TapeMachine, optim.SGD,
// LinearLR and MultiStepLR stepped as train.py steps them. The losses,
// the learning rates and every weight after each step (BatchNorm2d's
// running statistics of RetinaNet v2 too) must be the same, bit for bit.
func TestTrainerStepEqualsHandBuilt(t *testing.T) {
	opts := TrainerOpts{LR: 0.02, Momentum: 0.9, WeightDecay: 1e-4, WarmupIters: 2, WarmupFactor: 0.1,
		Milestones: []int{2}, Gamma: 0.1}
	batch := randomBatch(3, 2, 40, 56)
	targets := twoImageTargets()
	tb, err := PadTargets(targets, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fcos", "retinanet_v2"} {
		t.Run(name, func(t *testing.T) {
			_, m := tinyModel(t, name, tensor.Float64)
			defer m.Close()
			_, ref := tinyModel(t, name, tensor.Float64)
			defer ref.Close()
			tr, err := NewTrainer(m.(Trainable), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()

			lg := newLossGraph(t, ref, batch, true)
			vm, err := ad.NewTapeMachine(lg.g)
			if err != nil {
				t.Fatal(err)
			}
			defer vm.Close()
			params := ref.Weights().Params.Values()
			sgd, err := optim.NewSGD(params, optim.SGDOpts{LR: opts.LR, Momentum: opts.Momentum, WeightDecay: opts.WeightDecay})
			if err != nil {
				t.Fatal(err)
			}
			warm, err := optim.NewLinearLR(sgd, opts.WarmupFactor, 1, opts.WarmupIters)
			if err != nil {
				t.Fatal(err)
			}
			decay, err := optim.NewMultiStepLR(sgd, opts.Milestones, opts.Gamma)
			if err != nil {
				t.Fatal(err)
			}
			for step := 0; step < 3; step++ {
				if tr.LR() != sgd.LR() {
					t.Fatalf("step %d: lr %v, by hand %v", step, tr.LR(), sgd.LR())
				}
				got, err := tr.Step(batch, targets)
				if err != nil {
					t.Fatal(err)
				}
				want, grads := lg.run(t, vm, tb)
				gs := make([]tensor.Tensor, len(grads))
				for i, g := range grads {
					gs[i] = tensor.New(tensor.WithShape(params[i].Shape()...), tensor.WithBacking(g))
				}
				if err := sgd.Step(gs); err != nil {
					t.Fatal(err)
				}
				if step < opts.WarmupIters {
					if err := warm.Step(); err != nil {
						t.Fatal(err)
					}
				}
				if err := decay.Step(); err != nil {
					t.Fatal(err)
				}
				total := want["classification"] + want["bbox_regression"] + want["bbox_ctrness"]
				if got.Classification != want["classification"] || got.BboxRegression != want["bbox_regression"] ||
					got.BboxCtrness != want["bbox_ctrness"] || math.Abs(got.Total-total) > 1e-12*total {
					t.Errorf("step %d: losses %+v, by hand %v", step, got, want)
				}
				sameWeights(t, m.Weights(), ref.Weights())
			}
			if tr.Steps() != 3 || tr.LR() != sgd.LR() || math.Abs(tr.LR()-0.002) > 1e-15 {
				t.Errorf("after 3 steps: %d steps, lr %v, by hand %v, want 0.002", tr.Steps(), tr.LR(), sgd.LR())
			}
		})
	}
}

// sameWeights fails unless a and b hold the same tensors, bit for bit.
func sameWeights(t *testing.T, a, b *Weights) {
	t.Helper()
	for _, set := range [][2]interface {
		Names() []string
		Values() []tensor.Tensor
	}{{a.Params, b.Params}, {a.Frozen, b.Frozen}} {
		names, av, bv := set[0].Names(), set[0].Values(), set[1].Values()
		for i := range av {
			x, y := graphtest.Floats(av[i]), graphtest.Floats(bv[i])
			for j := range x {
				if x[j] != y[j] {
					t.Fatalf("%s[%d] = %v, by hand %v", names[i], j, x[j], y[j])
				}
			}
		}
	}
}

// TestTrainerReducesLoss trains tiny models (float32) on the golden
// images, in their own pixels (StepImages: the model's transform resizes
// them and their boxes): eight steps of SGD on one batch lower the loss
// by a fifth at least.
func TestTrainerReducesLoss(t *testing.T) {
	for _, name := range []string{"fcos", "retinanet_v2"} {
		t.Run(name, func(t *testing.T) {
			g, m := tinyModel(t, name, tensor.Float32)
			defer m.Close()
			images := g.images(tensor.Float32)
			targets := make([]Targets, len(images))
			for i, im := range images {
				h, w := float64(im.Shape()[1]), float64(im.Shape()[2])
				targets[i] = Targets{Boxes: newValue([]float32{float32(0.1 * w), float32(0.2 * h), float32(0.6 * w), float32(0.9 * h)}, 1, 4),
					Labels: []int{i % 3}}
			}
			opts := DefaultTrainerOpts(len(images))
			opts.LR, opts.WarmupIters = 0.02, 0
			tr, err := NewTrainer(m.(Trainable), opts)
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
			}
			t.Logf("loss %+v → %+v", first, last)
			if !(last.Total < 0.8*first.Total) {
				t.Errorf("loss %v after 8 steps, first %v", last.Total, first.Total)
			}
		})
	}
}

// TestTrainerErrors: bad options, images and targets are errors naming
// the problem, and a failed Step leaves the weights as they were.
func TestTrainerErrors(t *testing.T) {
	_, m := tinyModel(t, "fcos", tensor.Float64)
	defer m.Close()
	ok := DefaultTrainerOpts(2)
	for name, c := range map[string]struct {
		mod  func(*TrainerOpts)
		want string
	}{
		"lr":       {func(o *TrainerOpts) { o.LR = -1 }, "lr"},
		"warm-up":  {func(o *TrainerOpts) { o.WarmupIters = -1 }, "WarmupIters -1 is negative"},
		"factor":   {func(o *TrainerOpts) { o.WarmupFactor = 0 }, "WarmupFactor 0 is outside (0, 1]"},
		"momentum": {func(o *TrainerOpts) { o.Momentum = -1 }, "momentum"},
		"gamma":    {func(o *TrainerOpts) { o.Gamma = math.NaN() }, "gamma"},
	} {
		o := ok
		c.mod(&o)
		if _, err := NewTrainer(m.(Trainable), o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, c.want)
		}
	}
	if _, err := NewTrainer((*FCOS)(nil), ok); err == nil {
		t.Error("a nil FCOS: no error")
	}

	tr, err := NewTrainer(m.(Trainable), ok)
	if err != nil {
		t.Fatal(err)
	}
	before := graphtest.Floats(m.Weights().Params.Values()[0])
	batch := randomBatch(3, 2, 40, 56)
	bad := twoImageTargets()
	bad[1].Labels = []int{4}
	nan := randomBatch(3, 2, 40, 56)
	nan.Data().([]float64)[7] = math.NaN()
	for name, c := range map[string]struct {
		images  *tensor.Dense
		targets []Targets
		want    string
	}{
		"label":   {batch, bad, "targets[1].Labels[0] = 4, the model has 4 classes"},
		"count":   {batch, twoImageTargets()[:1], "1 targets for 2 images"},
		"dtype":   {graphtest.Float32([]*tensor.Dense{batch})[0], twoImageTargets(), "want [B, 3, H, W] float64"},
		"rank":    {newValue(make([]float64, 3*8*8), 3, 8, 8), twoImageTargets(), "want [B, 3, H, W]"},
		"nil":     {nil, twoImageTargets(), "images is nil"},
		"NaN":     {nan, twoImageTargets(), "the loss is NaN"},
		"x2 < x1": {batch, []Targets{twoImageTargets()[0], {Boxes: newValue([]float64{5, 1, 2, 3}, 1, 4), Labels: []int{0}}}, "has x2 <= x1"},
	} {
		if _, err := tr.Step(c.images, c.targets); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, c.want)
		}
	}
	if after := graphtest.Floats(m.Weights().Params.Values()[0]); after[0] != before[0] || tr.Steps() != 0 {
		t.Errorf("failed steps changed the weights (%v → %v) or counted (%d)", before[0], after[0], tr.Steps())
	}
	if _, err := tr.StepImages([]*tensor.Dense{newValue(make([]float64, 3*8*8), 3, 8, 8)}, nil); err == nil ||
		!strings.Contains(err.Error(), "0 targets for 1 images") {
		t.Errorf("StepImages without targets: error %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Step(batch, twoImageTargets()); err == nil || !strings.Contains(err.Error(), "not made by NewTrainer") {
		t.Errorf("Step after Close: error %v", err)
	}
}

// TestTrainerNaNKeepsStatistics: a step whose loss is not finite (a NaN
// pixel) leaves every tensor of the weights as it was, BatchNorm2d's
// running statistics (which the training forward updates) included, so
// the model still detects.
func TestTrainerNaNKeepsStatistics(t *testing.T) {
	_, m := tinyModel(t, "retinanet_v2", tensor.Float64)
	defer m.Close()
	tr, err := NewTrainer(m.(Trainable), DefaultTrainerOpts(2))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	frozen := m.Weights().Frozen
	var before [][]float64
	for _, v := range frozen.Values() {
		before = append(before, slices.Clone(graphtest.Floats(v)))
	}
	nan := randomBatch(3, 2, 40, 56)
	nan.Data().([]float64)[7] = math.NaN()
	if _, err := tr.Step(nan, twoImageTargets()); err == nil || !strings.Contains(err.Error(), "the loss is NaN") {
		t.Fatalf("NaN image: error %v", err)
	}
	changed := 0
	for i, v := range frozen.Values() {
		for j, x := range graphtest.Floats(v) {
			if math.Float64bits(x) != math.Float64bits(before[i][j]) {
				if changed++; changed <= 3 {
					t.Errorf("%s[%d]: %v → %v", frozen.Names()[i], j, before[i][j], x)
				}
			}
		}
	}
	if changed == 0 && !slices.ContainsFunc(frozen.Names(), func(s string) bool { return strings.HasSuffix(s, "bn1.running_mean") }) {
		t.Error("the model has no running statistics: the test checks nothing")
	}
}
