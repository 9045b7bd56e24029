package detection

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Faster R-CNN's training losses (torchvision 0.14's
// RegionProposalNetwork.compute_loss and RoIHeads' fastrcnn_loss) in one
// static graph. What torchvision decides on detached values is decided on
// values here too:
//
//   - the RPN's targets depend only on the anchors and the ground truth:
//     LossInputs.Set matches and samples them and writes per-anchor
//     targets and weights into the graph's input nodes;
//   - the box head's samples depend on the proposals, which depend on the
//     RPN's outputs of the same run: an op without a derivative
//     (rcnnSampleOp) takes the proposals op's result and the batch's
//     ground truth, appends the ground-truth boxes, matches, samples, and
//     returns the sampled boxes with their per-class targets and weights,
//     padded to BatchSizePerImage rows per image.
//
// Every mean of torchvision is a weighted sum here: a sampled element's
// weight is 1/(the number of sampled elements), the others' 0.

// BalancedPositiveNegativeSampler is torchvision's
// det_utils.BalancedPositiveNegativeSampler: of an image's positives (a
// label >= 1) it keeps at most ⌊BatchSizePerImage·PositiveFraction⌋, and
// of its negatives (label 0) at most BatchSizePerImage less the positives
// kept, each subset drawn by a random permutation (torch.randperm(n),
// its first k).
type BalancedPositiveNegativeSampler struct {
	BatchSizePerImage int
	PositiveFraction  float64
}

// check checks the settings.
func (s BalancedPositiveNegativeSampler) check(opName, what string) error {
	if s.BatchSizePerImage < 0 || !(s.PositiveFraction >= 0 && s.PositiveFraction <= 1) {
		return fmt.Errorf("detection: %s: %s BatchSizePerImage %d and PositiveFraction %v, want >= 0 and in [0, 1]",
			opName, what, s.BatchSizePerImage, s.PositiveFraction)
	}
	return nil
}

// Sample returns the masks of the sampled positives and negatives of
// labels (one image's), drawing with randperm (a permutation of 0..n−1,
// as torch.randperm(n)). Errors: BatchSizePerImage negative,
// PositiveFraction outside [0, 1]; randperm nil or returning something
// other than a permutation of n.
func (s BalancedPositiveNegativeSampler) Sample(labels []int, randperm func(n int) []int) (pos, neg []bool, err error) {
	if err := s.check("BalancedPositiveNegativeSampler.Sample", "the sampler's"); err != nil {
		return nil, nil, err
	}
	if randperm == nil {
		return nil, nil, fmt.Errorf("detection: BalancedPositiveNegativeSampler.Sample: randperm is nil")
	}
	var positive, negative []int
	for i, l := range labels {
		switch {
		case l >= 1:
			positive = append(positive, i)
		case l == 0:
			negative = append(negative, i)
		}
	}
	numPos := min(len(positive), int(float64(s.BatchSizePerImage)*s.PositiveFraction))
	numNeg := min(len(negative), s.BatchSizePerImage-numPos)
	pos, neg = make([]bool, len(labels)), make([]bool, len(labels))
	for _, d := range []struct {
		from []int
		k    int
		mask []bool
	}{{positive, numPos, pos}, {negative, numNeg, neg}} {
		perm := randperm(len(d.from))
		if len(perm) != len(d.from) {
			return nil, nil, fmt.Errorf("detection: BalancedPositiveNegativeSampler: randperm(%d) returned %d indices", len(d.from), len(perm))
		}
		seen := make([]bool, len(perm))
		for _, j := range perm {
			if j < 0 || j >= len(perm) || seen[j] {
				return nil, nil, fmt.Errorf("detection: BalancedPositiveNegativeSampler: randperm(%d) is not a permutation (index %d)", len(d.from), j)
			}
			seen[j] = true
		}
		for _, j := range perm[:d.k] {
			d.mask[d.from[j]] = true
		}
	}
	return pos, neg, nil
}

// rcnnTargets are a Faster R-CNN loss graph's value inputs and state.
type rcnnTargets struct {
	f       *FasterRCNN
	cfg     FasterRCNNConfig // the model's configuration when the graph was built
	batch   int
	anchors *tensor.Dense // all levels [A, 4]
	padded  [2]int        // the batch's padded (H, W)
	scales  []float64     // the RoI pooling's scales the graph was built with
	maps    []int         // the pooled maps' heights
	// RPN inputs: objectness target and weight [B·A], box target and
	// weight [B·A, 4].
	objTarget, objWeight, boxTarget, boxWeight *tensor.Dense
	sizes                                      *tensor.Dense // [B, 2]
	nodes                                      map[*tensor.Dense]*gorgonia.Node
	// The batch's ground truth (float64), read by the sample op, and the
	// samplers' source (nil: the model's).
	mu       sync.Mutex
	tb       *TargetBatch
	randperm func(n int) []int
}

// draw is the samplers' torch.randperm(n).
func (t *rcnnTargets) draw(n int) []int {
	t.mu.Lock()
	rp := t.randperm
	t.mu.Unlock()
	if rp != nil {
		return rp(n)
	}
	return t.f.randperm(n)
}

// SetRandperm gives a Faster R-CNN loss graph's samplers their own
// torch.randperm(n) (a permutation of 0..n−1), in place of the model's
// Config.Randperm: Set draws the RPN's samples with it, image after image,
// and the graph's runs the box head's. nil goes back to the model's. A
// no-op for FCOS's and RetinaNet's losses, which draw nothing.
func (in *LossInputs) SetRandperm(randperm func(n int) []int) {
	if in == nil || in.rcnn == nil {
		return
	}
	in.rcnn.mu.Lock()
	in.rcnn.randperm = randperm
	in.rcnn.mu.Unlock()
}

// newRCNNTargets makes the inputs of a loss graph g of batch b.
func newRCNNTargets(f *FasterRCNN, g *gorgonia.ExprGraph, b int, anchors *tensor.Dense, padded [2]int) *rcnnTargets {
	dt := anchors.Dtype()
	a := anchors.Shape()[0]
	zeros := func(shape ...int) *tensor.Dense { return tensor.New(tensor.Of(dt), tensor.WithShape(shape...)) }
	t := &rcnnTargets{f: f, cfg: f.Config, batch: b, anchors: anchors, padded: padded,
		objTarget: zeros(b * a), objWeight: zeros(b * a), boxTarget: zeros(b*a, 4), boxWeight: zeros(b*a, 4),
		sizes: zeros(b, 2), nodes: map[*tensor.Dense]*gorgonia.Node{}}
	for i, v := range []*tensor.Dense{t.objTarget, t.objWeight, t.boxTarget, t.boxWeight, t.sizes} {
		name := fmt.Sprintf("rcnn_input%d_%p", i, t)
		t.nodes[v] = gorgonia.NewTensor(g, dt, v.Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(name))
	}
	sizes := make([][2]int, b)
	for i := range sizes {
		sizes[i] = padded
	}
	t.setSizes(sizes)
	return t
}

// setSizes writes the image sizes' input.
func (t *rcnnTargets) setSizes(sizes [][2]int) {
	v, _ := sizesValue(t.sizes.Dtype(), sizes)
	_, _ = gorgonia.Copy(t.sizes, v) // the same dtype and shape: cannot fail
}

// SetImageSizes gives a Faster R-CNN loss graph the batch's image sizes
// (height, width of each image before padding, ImageList.ImageSizes),
// to which the proposals are clipped, as torchvision clips them; until
// the first call they are the padded batch's size. A no-op for FCOS's
// and RetinaNet's losses.
//
// Errors: a number of sizes other than the graph's batch; a side below 1
// or above the padded batch's; sizes from which torchvision would infer
// other RoI pooling scales than the graph's (images far smaller than the
// padded batch: build the graph for their size).
func (in *LossInputs) SetImageSizes(sizes [][2]int) error {
	if in == nil {
		return fmt.Errorf("detection: LossInputs.SetImageSizes: nil LossInputs")
	}
	t := in.rcnn
	if t == nil {
		return nil
	}
	if len(sizes) != t.batch {
		return fmt.Errorf("detection: LossInputs.SetImageSizes: %d sizes for a batch of %d", len(sizes), t.batch)
	}
	for i, s := range sizes {
		if s[0] < 1 || s[1] < 1 || s[0] > t.padded[0] || s[1] > t.padded[1] {
			return fmt.Errorf("detection: LossInputs.SetImageSizes: sizes[%d] = %v outside [1, %v]", i, s, t.padded)
		}
	}
	_, largest := sizesValue(t.sizes.Dtype(), sizes)
	for l, h := range t.maps {
		if gops.InferScale(h, largest[0]) != t.scales[l] {
			return fmt.Errorf("detection: LossInputs.SetImageSizes: the largest image %v gives map %d the RoI pooling scale %v, "+
				"the graph was built for %v (padded batch %v)", largest, l, gops.InferScale(h, largest[0]), t.scales[l], t.padded)
		}
	}
	t.setSizes(sizes)
	return nil
}

// set is LossInputs.Set for a Faster R-CNN graph: the RPN's targets on
// values, and the ground truth kept for the sample op.
func (t *rcnnTargets) set(tb TargetBatch) error {
	const op = "LossInputs.Set"
	if err := tb.check(op, t.batch, t.cfg.NumClasses); err != nil {
		return err
	}
	if t.anchors.Dtype() == tensor.Float32 {
		if err := tb.checkFloat32(op); err != nil {
			return err
		}
	}
	for b := range tb.Counts {
		if _, labels := tb.image(b); len(labels) > 0 {
			for i, l := range labels {
				if l < 1 {
					return fmt.Errorf("detection: %s: targets[%d].Labels[%d] = %d: Faster R-CNN's classes start at 1 (0 is the background)", op, b, i, l)
				}
			}
		}
	}
	var err error
	if t.anchors.Dtype() == tensor.Float32 {
		err = setRPNTargets[float32](t, tb)
	} else {
		err = setRPNTargets[float64](t, tb)
	}
	if err != nil {
		return err
	}
	own := TargetBatch{Boxes: tb.Boxes.Clone().(*tensor.Dense), Labels: slices.Clone(tb.Labels),
		Counts: slices.Clone(tb.Counts), MaxBoxes: tb.MaxBoxes} // the run reads it: not the caller's
	t.mu.Lock()
	t.tb = &own
	t.mu.Unlock()
	return nil
}

// randperm is the model's torch.randperm.
func (f *FasterRCNN) randperm(n int) []int {
	if f.Config.Randperm != nil {
		return f.Config.Randperm(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng == nil {
		f.rng = rand.New(rand.NewPCG(0, 0))
	}
	return f.rng.Perm(n)
}

// setRPNTargets is assign_targets_to_anchors and compute_loss's sampling
// in T: per image, the anchors matched by box IoU (RPNConfig's
// thresholds, low-quality matches kept), labelled 1 (a box), 0
// (background) or ignored, sampled; the objectness target and weight of
// each sampled anchor, and the BoxCoder(1, 1, 1, 1) code of its box for a
// sampled positive, the weights 1/(the batch's sampled anchors).
func setRPNTargets[T floatType](t *rcnnTargets, tb TargetBatch) error {
	cfg := t.cfg.RPN
	anchors := valueData[T](t.anchors)
	a := len(anchors) / 4
	objT, objW := valueData[T](t.objTarget), valueData[T](t.objWeight)
	boxT, boxW := valueData[T](t.boxTarget), valueData[T](t.boxWeight)
	matcher := Matcher{HighThreshold: cfg.FgIoUThresh, LowThreshold: cfg.BgIoUThresh, AllowLowQualityMatches: true}
	sampler := BalancedPositiveNegativeSampler{BatchSizePerImage: cfg.BatchSizePerImage, PositiveFraction: cfg.PositiveFraction}
	type sampled struct {
		pos, neg []bool
		matches  []int
		gt       []T
	}
	all := make([]sampled, t.batch)
	total := 0
	for b := range all {
		xs, _ := tb.image(b)
		gt := convertValues[T](xs)
		labels := make([]int, a)
		matches := make([]int, a)
		if len(gt) > 0 {
			var err error
			if matches, err = match(matcher, boxIoU(gt, anchors), len(gt)/4, a); err != nil {
				return fmt.Errorf("detection: LossInputs.Set: image %d: %w", b, err)
			}
			for i, m := range matches {
				switch {
				case m >= 0:
					labels[i] = 1
				case m == BetweenThresholds:
					labels[i] = -1
				}
			}
		}
		pos, neg, err := sampler.Sample(labels, t.draw)
		if err != nil {
			return err
		}
		for i := range pos {
			if pos[i] || neg[i] {
				total++
			}
		}
		all[b] = sampled{pos, neg, matches, gt}
	}
	// Every draw succeeded: only now are the inputs written, so that a
	// failed Set leaves the previous batch's whole.
	clear(objT)
	clear(objW)
	clear(boxT)
	clear(boxW)
	if total == 0 {
		return nil
	}
	w := 1 / T(total)
	coder := NewBoxCoder([4]float64{1, 1, 1, 1})
	for b, s := range all {
		for i := range s.pos {
			r := b*a + i
			switch {
			case s.pos[i]:
				objT[r], objW[r] = 1, w
				m := s.matches[i]
				code := encodeBoxes(coder, s.gt[4*m:4*m+4], anchors[4*i:4*i+4], 1)
				copy(boxT[4*r:4*r+4], code)
				for j := 0; j < 4; j++ {
					boxW[4*r+j] = w
				}
			case s.neg[i]:
				objW[r] = w
			}
		}
	}
	return nil
}

// sampleCols is the width of the sample op's result rows for k classes:
// the box (4), the classification weights (k), the box targets (4k), the
// box weights (4k) and the row's mask (1 for a sample, 0 for padding).
func sampleCols(k int) int { return 5 + 9*k }

// sampleNode adds RoIHeads.select_training_samples as an op without a
// derivative on the proposals op's result props [N, P, proposalCols]: per
// image its proposals and ground-truth boxes, matched (RoIHeadsConfig's
// thresholds), labelled with their box's class (0: background), sampled;
// the sampled boxes in index order, each with the weight 1/R (R the
// batch's samples, torchvision's labels.numel()) at its class in the
// classification weights, and for a positive the BoxCoder(BoxWeights)
// code of its box at its class's 4 columns of the targets, weighted 1/R;
// the last column 1. The result is [N, S, sampleCols(K)], S =
// BatchSizePerImage; rows beyond an image's samples are zeros.
func (t *rcnnTargets) sampleNode(props *gorgonia.Node) (*gorgonia.Node, error) {
	cfg := t.cfg
	s := props.Shape()
	n, k := s[0], cfg.NumClasses
	rows := cfg.RoIHeads.BatchSizePerImage
	out := tensor.Shape{n, rows, sampleCols(k)}
	spec := ad.OpSpec{
		Name:      "RoIHeadsSample",
		Params:    fmt.Sprintf("%+v targets %p", cfg.RoIHeads, t),
		InputDims: []int{3}, OutputDims: 3, DiffWRT: []bool{false},
		Shape:  ad.FixedShape("detection: RoIHeadsSample", s, out),
		Kernel: ad.Floats(sampleKernel[float32](t, k), sampleKernel[float64](t, k)),
		Backward: func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		},
	}
	return ad.Apply(spec, props)
}

// sampleKernel is the sample op's kernel.
func sampleKernel[T floatType](t *rcnnTargets, k int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		t.mu.Lock()
		tb := t.tb
		t.mu.Unlock()
		if tb == nil {
			return fmt.Errorf("detection: Faster R-CNN loss: no ground truth: call LossInputs.Set before running the graph")
		}
		cfg := t.cfg.RoIHeads
		n, p, rows := in[0].Shape[0], in[0].Shape[1], out.Shape[1]
		sampler := BalancedPositiveNegativeSampler{BatchSizePerImage: cfg.BatchSizePerImage, PositiveFraction: cfg.PositiveFraction}
		matcher := Matcher{HighThreshold: cfg.FgIoUThresh, LowThreshold: cfg.BgIoUThresh}
		type image struct {
			boxes, gt []T
			labels    []int // per box: its class, 0 background, −1 ignored
			matches   []int
			sampled   []int
		}
		imgs := make([]image, n)
		total := 0
		for i := range imgs {
			var boxes []T
			for j := 0; j < p; j++ {
				r := in[0].Data[(i*p+j)*proposalCols:][:proposalCols]
				if r[5] == 0 {
					break
				}
				boxes = append(boxes, r[:4]...)
			}
			xs, gtLabels := tb.image(i)
			gt := convertValues[T](xs)
			boxes = append(boxes, gt...) // add_gt_proposals
			m := len(boxes) / 4
			labels, matches := make([]int, m), make([]int, m)
			if len(gt) > 0 {
				var err error
				if matches, err = match(matcher, boxIoU(gt, boxes), len(gt)/4, m); err != nil {
					return fmt.Errorf("detection: Faster R-CNN loss: image %d: %w", i, err)
				}
				for j, x := range matches {
					switch x {
					case BelowLowThreshold:
						labels[j] = 0
					case BetweenThresholds:
						labels[j] = -1
					default:
						labels[j] = gtLabels[x]
					}
				}
			}
			pos, neg, err := sampler.Sample(labels, t.draw)
			if err != nil {
				return err
			}
			var sampled []int
			for j := range pos {
				if pos[j] || neg[j] {
					sampled = append(sampled, j)
				}
			}
			if len(sampled) > rows {
				return fmt.Errorf("detection: Faster R-CNN loss: image %d: %d samples for %d rows", i, len(sampled), rows)
			}
			total += len(sampled)
			imgs[i] = image{boxes, gt, labels, matches, sampled}
		}
		if total == 0 {
			return nil
		}
		w := 1 / T(total)
		coder := NewBoxCoder(cfg.BoxWeights)
		cols := sampleCols(k)
		for i, im := range imgs {
			for r, j := range im.sampled {
				row := out.Data[(i*rows+r)*cols:][:cols]
				copy(row[:4], im.boxes[4*j:4*j+4])
				c := im.labels[j]
				row[4+c] = w
				row[4+9*k] = 1
				if c < 1 {
					continue
				}
				m := im.matches[j]
				code := encodeBoxes(coder, im.gt[4*m:4*m+4], im.boxes[4*j:4*j+4], 1)
				copy(row[4+k+4*c:][:4], code)
				for q := 0; q < 4; q++ {
					row[4+5*k+4*c+q] = w
				}
			}
		}
		return nil
	}
}

// Loss builds the model in training mode on x (the transformed batch [B,
// 3, H, W]) and torchvision's training losses on it (torchvision 0.14's
// RegionProposalNetwork and RoIHeads in training): Objectness, the binary
// cross entropy with logits of the RPN's sampled anchors (RPNConfig's
// matcher and sampler), averaged; RPNBoxReg, the smooth L1 loss (β = 1/9)
// of its sampled positives' deltas against BoxCoder(1, 1, 1, 1)'s codes,
// summed and divided by the sampled anchors; then, on the proposals of
// this run (RPNConfig's training counts) and the ground truth boxes,
// matched and sampled by RoIHeadsConfig's settings and pooled,
// Classification ("loss_classifier"), the cross entropy of the sampled
// boxes' class logits, averaged; BboxRegression ("loss_box_reg"), the
// smooth L1 loss (β = 1/9) of the positives' regression at their class
// against BoxCoder(BoxWeights)'s codes, summed and divided by the
// samples. The proposals and samples are constants of the derivative, as
// torchvision detaches them. BatchNorm2d norms (FasterRCNNResNet50FPNV2's
// body, FPN and box head; the frozen layers' too) normalise with the
// batch's statistics, the box head's over the sampled RoIs only (the
// padded rows masked out: nn.BatchNormOpts.Mask), and each run updates
// their running statistics once, as torchvision's train mode.
//
// Set the returned LossInputs to a batch's ground truth (labels >= 1)
// before each run, and SetImageSizes to the batch's image sizes when they
// are not the padded batch's. The RPN's samples are drawn by Set, the box
// head's by each run of the graph (a second run after one Set draws them
// anew; torchvision draws both in each forward), with the LossInputs'
// SetRandperm source, else Config.Randperm, else the model's own. The
// graph keeps the configuration it was built with: later changes of
// f.Config apply to graphs built after them.
//
// Differences from torchvision: a batch in which nothing is sampled (no
// anchor, or no RoI) has losses 0 there, where torchvision's means of
// nothing are NaN; a ground-truth label 0 (the background) is an error,
// where torchvision trains it as background.
//
// Errors: x nil, not [B, 3, H, W] or not of the model's dtype; the
// backbone's and heads' errors (a tensor missing from the weights);
// training settings out of range.
func (f *FasterRCNN) Loss(x *gorgonia.Node) (*LossInputs, *Losses, error) {
	return f.loss(x, nil)
}

// LossAt is Loss with the trainable parameters of at in place of the
// weights' own nodes (see FCOS.LossAt).
func (f *FasterRCNN) LossAt(x *gorgonia.Node, at map[string]*gorgonia.Node) (*LossInputs, *Losses, error) {
	return f.loss(x, at)
}

// loss is Loss and LossAt.
func (f *FasterRCNN) loss(x *gorgonia.Node, at map[string]*gorgonia.Node) (*LossInputs, *Losses, error) {
	return f.lossWith(x, at, nil)
}

// lossWith is loss; fixed, if not nil, is a node [N, P, proposalCols]
// whose rows are the proposals in place of the proposals op's (a test's
// seam: derivatives checked against finite differences need proposals
// that do not move with the weights, as torchvision's detached ones move).
func (f *FasterRCNN) lossWith(x *gorgonia.Node, at map[string]*gorgonia.Node, fixed *gorgonia.Node) (*LossInputs, *Losses, error) {
	fail := func(err error) (*LossInputs, *Losses, error) {
		return nil, nil, fmt.Errorf("detection: FasterRCNN.Loss: %w", err)
	}
	if f == nil || f.weights == nil {
		return fail(fmt.Errorf("the model is nil or not made by its constructor"))
	}
	if x == nil || x.Shape().Dims() != 4 || x.Dtype() != f.weights.Dtype() {
		return fail(fmt.Errorf("x must be a [B, 3, H, W] node of the model's dtype %v", f.weights.Dtype()))
	}
	cfg := f.Config
	if err := cfg.checkTraining(); err != nil {
		return fail(err)
	}
	w := f.weights
	if at != nil {
		var err error
		if w, err = w.paramsAt("FasterRCNN.LossAt", at); err != nil {
			return nil, nil, err
		}
	}
	features, _, err := cfg.Backbone.Forward(w, "backbone", x, true)
	if err != nil {
		return fail(err)
	}
	rpn, box, pred := cfg.parts()
	obj, deltas, err := rpn.Forward(w, "rpn.head", features)
	if err != nil {
		return fail(err)
	}
	xs := x.Shape()
	b := xs[0]
	levels, all, params, err := f.anchorsOf(x, features)
	if err != nil {
		return fail(err)
	}
	t := newRCNNTargets(f, x.Graph(), b, all, [2]int{xs[2], xs[3]})
	node := func(v *tensor.Dense) *gorgonia.Node { return t.nodes[v] }
	props := fixed
	if props == nil {
		if props, err = proposalsNode(cfg.RPN, true, obj, deltas, node(t.sizes), levels, params); err != nil {
			return fail(err)
		}
	}
	samples, err := t.sampleNode(props)
	if err != nil {
		return fail(err)
	}
	maps := features[:cfg.pooledMaps()]
	t.maps = make([]int, len(maps))
	t.scales = make([]float64, len(maps))
	for l, m := range maps {
		t.maps[l] = m.Shape()[2]
		t.scales[l] = gops.InferScale(t.maps[l], xs[2])
	}
	k := cfg.NumClasses
	s := cfg.RoIHeads.BatchSizePerImage
	bd := ad.NewBuilder(x)
	part := func(start, length int) *gorgonia.Node {
		return bd.Do(func() (*gorgonia.Node, error) {
			y, err := nn.Narrow(samples, 2, start, length)
			if err != nil {
				return nil, err
			}
			return nn.Reshape(y, b*s, length)
		})
	}
	var mask *gorgonia.Node // (only where a norm takes it: the LispMachine refuses loose ends)
	if box.hasNorm() {
		mask = part(4+9*k, 1)
	}
	logits, reg, err := f.roiHeadsAt(w, maps, samples, [2]int{xs[2], xs[3]}, t.scales, box, pred, mask, false)
	if err != nil {
		return fail(err)
	}
	out := &Losses{}
	logsm := bd.Do(func() (*gorgonia.Node, error) { return nn.LogSoftmax(logits, 1) })
	out.Classification = bd.Neg(bd.Sum(bd.HadamardProd(part(4, k), logsm)))
	boxL1 := bd.Do(func() (*gorgonia.Node, error) { return nn.SmoothL1Loss(reg, part(4+k, 4*k), 1.0/9, ad.ReductionNone) })
	out.BboxRegression = bd.Sum(bd.HadamardProd(part(4+5*k, 4*k), boxL1))
	objFlat := bd.Do(func() (*gorgonia.Node, error) {
		c, err := nn.Concat(1, obj...)
		if err != nil {
			return nil, err
		}
		return nn.Reshape(c, b*all.Shape()[0])
	})
	out.Objectness = bd.Do(func() (*gorgonia.Node, error) {
		return nn.BinaryCrossEntropyWithLogits(objFlat, node(t.objTarget),
			nn.BCEWithLogitsOpts{Weight: node(t.objWeight), Reduction: ad.ReductionSum})
	})
	deltaFlat := bd.Do(func() (*gorgonia.Node, error) {
		c, err := nn.Concat(1, deltas...)
		if err != nil {
			return nil, err
		}
		return nn.Reshape(c, b*all.Shape()[0], 4)
	})
	rpnL1 := bd.Do(func() (*gorgonia.Node, error) {
		return nn.SmoothL1Loss(deltaFlat, node(t.boxTarget), 1.0/9, ad.ReductionNone)
	})
	out.RPNBoxReg = bd.Sum(bd.HadamardProd(node(t.boxWeight), rpnL1))
	out.Total = bd.Add(bd.Add(out.Classification, out.BboxRegression), bd.Add(out.Objectness, out.RPNBoxReg))
	if err := bd.Err(); err != nil {
		return fail(err)
	}
	return &LossInputs{rcnn: t, batch: b, anchorBoxes: all}, out, nil
}

// roiHeadsAt is the box branch on rows [N, S, C] whose first 4 columns
// are boxes (the proposals op's or the sample op's result): each image's
// S boxes pooled from maps with the given scales (MultiScaleRoIAlign),
// the box head and FastRCNNPredictor with w's tensors: class logits [N·S,
// K] and box regression [N·S, 4K]. mask, if not nil, is the sampled rows
// [N·S, 1] of a training graph (the box head's norms in train mode, their
// statistics over those rows); nil: eval mode (or a head without norms).
// fused: the inference graph's fused box head (no derivative).
func (f *FasterRCNN) roiHeadsAt(w *Weights, maps []*gorgonia.Node, samples *gorgonia.Node, padded [2]int, scales []float64, box boxHead, pred FastRCNNPredictor, mask *gorgonia.Node, fused bool) (*gorgonia.Node, *gorgonia.Node, error) {
	cfg := f.Config
	ss := samples.Shape()
	n, s := ss[0], ss[1]
	boxes := make([]*gorgonia.Node, n)
	sizes := make([][2]int, n)
	for i := range boxes {
		b, err := nn.Narrow(samples, 0, i, 1)
		if err == nil {
			b, err = nn.Narrow(b, 2, 0, 4)
		}
		if err == nil {
			b, err = nn.Reshape(b, s, 4)
		}
		if err != nil {
			return nil, nil, err
		}
		boxes[i], sizes[i] = b, padded
	}
	out := orDefault(cfg.RoIOutputSize, 7)
	pooled, err := gops.MultiScaleRoIAlign(maps, boxes, sizes, gops.MultiScaleRoIAlignOpts{
		OutputSize: [2]int{out, out}, SamplingRatio: orDefault(cfg.SamplingRatio, 2), Scales: scales})
	if err != nil {
		return nil, nil, err
	}
	if mask != nil {
		if mask, err = nn.Reshape(mask, n*s); err != nil {
			return nil, nil, err
		}
	}
	var h *gorgonia.Node
	if fused {
		h, err = box.forwardFused(w, "roi_heads.box_head", pooled)
	} else {
		h, err = box.forward(w, "roi_heads.box_head", pooled, mask != nil, mask)
	}
	if err != nil {
		return nil, nil, err
	}
	return pred.Forward(w, "roi_heads.box_predictor", h)
}
