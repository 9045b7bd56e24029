package detection

import (
	"fmt"
	"math"
	"strings"

	"github.com/gops-dev/gops/nn"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Trainable is a detector that a Trainer trains and NewMAMLTask
// meta-trains: *FCOS or *RetinaNet (the unexported method keeps other
// types out).
type Trainable interface {
	// Loss builds the model in training mode and its losses on x (see
	// FCOS.Loss, RetinaNet.Loss).
	Loss(x *gorgonia.Node) (*LossInputs, *Losses, error)
	// LossAt builds the training losses on x at the parameter nodes at
	// instead of the weights' own (FCOS.LossAt).
	LossAt(x *gorgonia.Node, at map[string]*gorgonia.Node) (*LossInputs, *Losses, error)
	// Weights are the model's tensors; Params are trained.
	Weights() *Weights
	// transform is the model's transform; ok false for a nil model or
	// one not made by its constructor.
	transform() (t GeneralizedRCNNTransform, ok bool)
}

var (
	_ Trainable = (*FCOS)(nil)
	_ Trainable = (*RetinaNet)(nil)
	_ Trainable = (*FasterRCNN)(nil)
)

// TrainerOpts are a Trainer's optimizer and learning-rate schedule,
// torchvision's references/detection/train.py: SGD (lr, momentum 0.9,
// weight decay 1e-4 on every parameter), a linear warm-up from
// WarmupFactor·LR to LR over the first WarmupIters steps
// (lr_scheduler.LinearLR, stepped per iteration), and the learning rate
// multiplied by Gamma at each of Milestones (lr_scheduler.MultiStepLR).
// DefaultTrainerOpts gives the recipe; zero fields mean zero (no
// momentum, no weight decay, no warm-up).
type TrainerOpts struct {
	// LR is the learning rate after the warm-up, >= 0 (train.py: 0.01 for
	// a batch of 8 images, scaled linearly with the batch).
	LR float64
	// Momentum and WeightDecay are torch.optim.SGD's momentum and
	// weight_decay, >= 0.
	Momentum, WeightDecay float64
	// WarmupIters is the length of the linear warm-up in steps (train.py:
	// min(1000, len(data_loader) − 1)); 0 for none.
	WarmupIters int
	// WarmupFactor is the warm-up's start factor, in (0, 1] (train.py:
	// 0.001).
	WarmupFactor float64
	// Milestones are the steps (counted from 1; train.py counts epochs:
	// multiply its lr_steps by the steps per epoch) after which the
	// learning rate is multiplied by Gamma (MultiStepLR's: >= 0, any
	// order, one listed twice applies twice); may be empty.
	Milestones []int
	// Gamma is MultiStepLR's factor, finite and >= 0 (train.py: 0.1).
	Gamma float64
}

// DefaultTrainerOpts returns torchvision's detection recipe for batches
// of batch images: LR 0.01·batch/8, momentum 0.9, weight decay 1e-4, a
// warm-up of 1000 steps from factor 0.001, Gamma 0.1 and no milestones
// (set them for the run's length, e.g. at 2/3 and 8/9 of it as
// train.py's 16 and 22 of 26 epochs).
func DefaultTrainerOpts(batch int) TrainerOpts {
	return TrainerOpts{LR: 0.01 * float64(batch) / 8, Momentum: 0.9, WeightDecay: 1e-4,
		WarmupIters: 1000, WarmupFactor: 0.001, Gamma: 0.1}
}

// LossValues are one step's losses (torchvision's loss dict, as floats):
// those of the weights before the step's update.
type LossValues struct {
	// Classification, BboxRegression, BboxCtrness, Objectness and
	// RPNBoxReg are Losses' nodes' values (0 for a loss the model does
	// not have).
	Classification, BboxRegression, BboxCtrness float64
	Objectness, RPNBoxReg                       float64
	// Total is their sum, the loss that was differentiated.
	Total float64
}

// Trainer trains a detector with torchvision's recipe (TrainerOpts): each
// Step runs the training graph (forward, losses and their gradients
// w.r.t. the model's Weights().Params) and updates the weights in place
// with SGD, then steps the learning-rate schedule: one iteration of
// train.py's train_one_epoch. It builds one graph and machine per batch
// shape [B, 3, H, W] on its first use (ad.ReuseResults on; the 4 most
// recently used are kept), so batches of a fixed image size and batch
// size run without rebuilding; the ground truth never changes the graph
// (LossInputs). The model's Forward sees every update (the weights are
// shared). Not safe for concurrent use, nor to use while the model's
// Forward runs.
type Trainer struct {
	model  Trainable
	run    *runner
	opt    *optim.SGD
	warmup *optim.LRScheduler // nil without a warm-up
	decay  *optim.LRScheduler
	opts   TrainerOpts
	steps  int
	// stats are the weights' running statistics (a training run of
	// BatchNorm2d updates them), saved holds their values before a run:
	// Step puts them back when the loss is not finite.
	stats, saved []*tensor.Dense
}

// trainGraph is the meta of a Trainer's graph: its loss inputs and the
// gradients of the total loss.
type trainGraph struct {
	in    *LossInputs
	grads *nn.Grads
	which []int // where outs[3:] go in step's values
}

// NewTrainer makes a Trainer of model (an *FCOS, *RetinaNet or
// *FasterRCNN) with the
// optimizer and schedule of opts. The optimizer starts at WarmupFactor·LR
// when there is a warm-up (torch's LinearLR constructor).
//
// Errors: model nil or not made by its constructor; LR negative or not
// finite;
// Momentum, WeightDecay negative or not finite; WarmupIters negative;
// WarmupFactor outside (0, 1] with a warm-up; a negative milestone;
// Gamma negative or not finite.
func NewTrainer(model Trainable, opts TrainerOpts) (*Trainer, error) {
	fail := func(err error) (*Trainer, error) { return nil, fmt.Errorf("detection: NewTrainer: %w", err) }
	if model == nil {
		return fail(fmt.Errorf("the model is nil"))
	}
	if _, ok := model.transform(); !ok {
		return fail(fmt.Errorf("the model is nil or not made by its constructor"))
	}
	if opts.WarmupIters < 0 {
		return fail(fmt.Errorf("WarmupIters %d is negative", opts.WarmupIters))
	}
	if opts.WarmupIters > 0 && !(opts.WarmupFactor > 0 && opts.WarmupFactor <= 1) {
		return fail(fmt.Errorf("WarmupFactor %v is outside (0, 1]", opts.WarmupFactor))
	}
	params := model.Weights().Params
	opt, err := optim.NewSGD(params.Values(), optim.SGDOpts{LR: opts.LR, Momentum: opts.Momentum, WeightDecay: opts.WeightDecay})
	if err != nil {
		return fail(err)
	}
	opts.Milestones = append([]int(nil), opts.Milestones...)
	t := &Trainer{model: model, opt: opt, opts: opts}
	frozen := model.Weights().Frozen
	for i, v := range frozen.Values() {
		name := frozen.Names()[i]
		if d, ok := v.(*tensor.Dense); ok && (strings.HasSuffix(name, "running_mean") || strings.HasSuffix(name, "running_var")) {
			t.stats, t.saved = append(t.stats, d), append(t.saved, d.Clone().(*tensor.Dense))
		}
	}
	if opts.WarmupIters > 0 {
		if t.warmup, err = optim.NewLinearLR(opt, opts.WarmupFactor, 1, opts.WarmupIters); err != nil {
			return fail(err)
		}
	}
	if t.decay, err = optim.NewMultiStepLR(opt, opts.Milestones, opts.Gamma); err != nil {
		return fail(err)
	}
	t.run = newRunner(func(x *gorgonia.Node) ([]*gorgonia.Node, any, error) {
		in, losses, err := model.Loss(x)
		if err != nil {
			return nil, nil, err
		}
		grads, err := params.Grad(losses.Total)
		if err != nil {
			return nil, nil, err
		}
		outs := []*gorgonia.Node{losses.Total, losses.Classification, losses.BboxRegression}
		var which []int // the LossValues fields of outs beyond the first three
		for i, n := range []*gorgonia.Node{losses.BboxCtrness, losses.Objectness, losses.RPNBoxReg} {
			if n != nil {
				outs, which = append(outs, n), append(which, 3+i)
			}
		}
		return outs, &trainGraph{in: in, grads: grads, which: which}, nil
	})
	return t, nil
}

// Step is one training iteration on a batch: images is the transformed
// batch [B, 3, H, W] of the model's dtype (GeneralizedRCNNTransform's
// Transform: normalised, resized and padded; ImageList.Tensors) and
// targets the B images' ground truth in that batch's pixels (ResizeBoxes
// from the original sizes to ImageList.ImageSizes; StepImages does both).
// It computes the losses and their gradients at the current weights,
// updates the weights (SGD) and steps the schedule; it returns the losses
// before the update.
//
// Errors: t nil or closed; images not [B, 3, H, W] of the model's dtype;
// len(targets) != B; PadTargets' and LossInputs.Set's errors (bad boxes,
// labels out of range); a graph error or a non-finite loss (train.py
// stops there too), after which the weights are left as they were,
// BatchNorm2d's running statistics (which the run updated) put back.
func (t *Trainer) Step(images *tensor.Dense, targets []Targets) (LossValues, error) {
	return t.step(images, nil, targets)
}

// step is Step with the images' sizes in the batch (nil: the padded
// batch's), to which Faster R-CNN clips its proposals.
func (t *Trainer) step(images *tensor.Dense, sizes [][2]int, targets []Targets) (LossValues, error) {
	fail := func(err error) (LossValues, error) {
		return LossValues{}, fmt.Errorf("detection: Trainer.Step: %w", err)
	}
	if t == nil || t.run == nil {
		return fail(fmt.Errorf("the trainer is nil or not made by NewTrainer"))
	}
	dt := t.model.Weights().Dtype()
	if images == nil || images.Dims() != 4 || images.Shape()[1] != 3 || images.Dtype() != dt {
		what := "nil"
		if images != nil {
			what = fmt.Sprintf("%v %v", images.Dtype(), images.Shape())
		}
		return fail(fmt.Errorf("images is %s, want [B, 3, H, W] %v", what, dt))
	}
	if b := images.Shape()[0]; len(targets) != b {
		return fail(fmt.Errorf("%d targets for %d images", len(targets), b))
	}
	most := 0
	for _, tg := range targets {
		most = max(most, len(tg.Labels))
	}
	tb, err := PadTargets(targets, most)
	if err != nil {
		return LossValues{}, err
	}
	rg, err := t.run.graph(images, nil)
	if err != nil {
		return fail(err)
	}
	tg := rg.meta.(*trainGraph)
	if sizes == nil { // the padded batch's, not an earlier StepImages' sizes
		s := images.Shape()
		sizes = make([][2]int, s[0])
		for i := range sizes {
			sizes[i] = [2]int{s[2], s[3]}
		}
	}
	if err := tg.in.SetImageSizes(sizes); err != nil {
		return fail(err)
	}
	if err := tg.in.Set(tb); err != nil {
		return LossValues{}, err
	}
	copyStats(t.saved, t.stats)
	if err := rg.exec(images); err != nil {
		copyStats(t.stats, t.saved)
		return fail(err)
	}
	var v [6]float64
	for i, o := range rg.outs {
		j := i
		if i >= 3 {
			j = tg.which[i-3]
		}
		v[j] = scalarOf(o)
	}
	lv := LossValues{Total: v[0], Classification: v[1], BboxRegression: v[2], BboxCtrness: v[3], Objectness: v[4], RPNBoxReg: v[5]}
	if math.IsNaN(lv.Total) || math.IsInf(lv.Total, 0) {
		copyStats(t.stats, t.saved)
		return lv, fmt.Errorf("detection: Trainer.Step: the loss is %v (%+v); the weights are unchanged", lv.Total, lv)
	}
	if err := t.opt.Step(tg.grads.Values()); err != nil {
		return fail(err)
	}
	t.steps++
	if t.warmup != nil && t.steps <= t.opts.WarmupIters {
		if err := t.warmup.Step(); err != nil {
			return fail(err)
		}
	}
	if err := t.decay.Step(); err != nil {
		return fail(err)
	}
	return lv, nil
}

// StepImages is Step on images [3, H_i, W_i] as the model takes them in
// Forward (pixels in [0, 1]) and targets in their pixels: the model's
// transform (Transform: the last of MinSize; torchvision's training
// transform draws one of MinSize at random) resizes, normalises and
// batches the images and ResizeBoxes scales each image's boxes alike.
//
// Errors: Step's; the transform's (named images); ResizeBoxes'.
func (t *Trainer) StepImages(images []*tensor.Dense, targets []Targets) (LossValues, error) {
	if t == nil || t.run == nil {
		return LossValues{}, fmt.Errorf("detection: Trainer.StepImages: the trainer is nil or not made by NewTrainer")
	}
	if len(targets) != len(images) {
		return LossValues{}, fmt.Errorf("detection: Trainer.StepImages: %d targets for %d images", len(targets), len(images))
	}
	tr, _ := t.model.transform()
	il, err := tr.Transform(images)
	if err != nil {
		return LossValues{}, err
	}
	scaled := make([]Targets, len(targets))
	for i, tg := range targets {
		scaled[i] = Targets{Labels: tg.Labels}
		if tg.Boxes == nil {
			continue
		}
		s := images[i].Shape()
		if scaled[i].Boxes, err = ResizeBoxes(tg.Boxes, [2]int{s[1], s[2]}, il.ImageSizes[i]); err != nil {
			return LossValues{}, fmt.Errorf("detection: Trainer.StepImages: targets[%d]: %w", i, err)
		}
	}
	return t.step(il.Tensors, il.ImageSizes, scaled)
}

// LR is the learning rate the next Step uses; 0 for a nil Trainer.
func (t *Trainer) LR() float64 {
	if t == nil {
		return 0
	}
	return t.opt.LR()
}

// Steps is the number of Steps that updated the weights.
func (t *Trainer) Steps() int {
	if t == nil {
		return 0
	}
	return t.steps
}

// Optimizer is the trainer's SGD (its State and LoadState for
// checkpoints). The schedulers are torch's chainable ones: a learning
// rate set on it is where the schedule goes on from.
func (t *Trainer) Optimizer() *optim.SGD {
	if t == nil {
		return nil
	}
	return t.opt
}

// Close releases the trainer's machines; Step fails after it. The model
// stays usable.
func (t *Trainer) Close() error {
	if t == nil {
		return nil
	}
	err := t.run.close()
	t.run = nil
	return err
}

// copyStats copies each of src's float32 or float64 tensors into dst's
// of the same shape.
func copyStats(dst, src []*tensor.Dense) {
	for i, d := range dst {
		switch x := d.Data().(type) {
		case []float32:
			copy(x, src[i].Data().([]float32))
		case []float64:
			copy(x, src[i].Data().([]float64))
		}
	}
}

// scalarOf is a float32 or float64 scalar's value (a one-element
// tensor's), NaN for anything else.
func scalarOf(x gorgonia.Value) float64 {
	if x == nil {
		return math.NaN()
	}
	switch v := x.Data().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	case []float32:
		return float64(v[0])
	case []float64:
		return v[0]
	}
	return math.NaN()
}
