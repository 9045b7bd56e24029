package detection

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The training losses of RetinaNet and FCOS (torchvision 0.14's
// compute_loss) as graph nodes on the head outputs of Build(x, true).
// What depends only on the anchors and the ground truth (the matching,
// the one-hot class targets, the regression targets, which anchors count
// and the normalisers) is computed on values by LossInputs.Set and fed to
// input nodes of the graph, so that one graph serves every batch of its
// image size: the loss is a weighted sum over all anchors, each anchor's
// weight 0 where torchvision leaves it out.

// Losses are a training graph's loss nodes, torchvision's loss dict:
// scalars of the model's dtype, differentiable to every order w.r.t. the
// weights and the image.
type Losses struct {
	// Classification is "classification": the sigmoid focal loss (alpha
	// 0.25, gamma 2), summed.
	Classification *gorgonia.Node
	// BboxRegression is "bbox_regression": RetinaNet's L1 loss of the box
	// codes (BoxLossType "l1") or GIoU loss of the decoded boxes
	// ("giou"); FCOS's GIoU loss.
	BboxRegression *gorgonia.Node
	// BboxCtrness is FCOS's "bbox_ctrness", the centre-ness binary cross
	// entropy with logits; nil for RetinaNet.
	BboxCtrness *gorgonia.Node
	// Objectness is Faster R-CNN's "loss_objectness": the RPN's binary
	// cross entropy with logits of its sampled anchors, averaged; nil for
	// the one-stage models. (Faster R-CNN's Classification is
	// "loss_classifier", its BboxRegression "loss_box_reg".)
	Objectness *gorgonia.Node
	// RPNBoxReg is Faster R-CNN's "loss_rpn_box_reg": the RPN's smooth L1
	// loss of its sampled positive anchors, divided by the sampled
	// anchors; nil for the one-stage models.
	RPNBoxReg *gorgonia.Node
	// Total is the sum of the losses, torchvision's
	// sum(loss_dict.values()).
	Total *gorgonia.Node
}

// lossKind is the loss a LossInputs feeds.
type lossKind int

const (
	retinaNetL1 lossKind = iota
	retinaNetGIoU
	fcosLoss
)

// LossInputs are the value inputs of a training graph built by
// RetinaNet.Loss, FCOS.Loss or FasterRCNN.Loss: Set fills them from a
// batch's ground truth before each run of the graph's machine. Not safe
// for concurrent use.
type LossInputs struct {
	kind                 lossKind
	batch, anchors, k    int
	perLevel             []int
	anchorBoxes          *tensor.Dense // [N, 4]
	clsTarget, clsWeight *tensor.Dense // [B, N, K]
	boxTarget, boxWeight *tensor.Dense // l1: [B, N, 4] both; giou: [B·N, 4], [B·N]
	ctrTarget, ctrWeight *tensor.Dense // FCOS: [B, N, 1]
	nodes                map[*tensor.Dense]*gorgonia.Node
	rcnn                 *rcnnTargets // Faster R-CNN's (the fields above unused)
}

// Anchors returns the anchors [N, 4] of the graph's image size, those the
// targets are matched to (AnchorGenerator.Anchors' all).
func (in *LossInputs) Anchors() *tensor.Dense { return in.anchorBoxes }

// Set computes the targets of the batch tb (PadTargets) on values, as
// torchvision's compute_loss does, and writes them into the graph's input
// nodes; the next run of the graph's machine computes the losses of this
// batch. For Faster R-CNN, Set matches and samples the RPN's anchors
// (drawing with the samplers' source) and keeps a copy of tb, from which
// each run of the graph samples the box head's proposals; its labels
// must be >= 1 (0 is the background).
//
// Errors: a number of images other than the graph's batch; a label at or
// above the model's NumClasses (for Faster R-CNN, below 1 too); as
// PadTargets' checks (tb not made by it); for a float32 model, a box that
// is infinite or has x2 <= x1 or y2 <= y1 once rounded to float32 (the
// targets are matched in the model's dtype); for Faster R-CNN, a sampler
// source's draw that is not a permutation. A failed Set leaves the
// previous batch's inputs whole.
func (in *LossInputs) Set(tb TargetBatch) error {
	if in != nil && in.rcnn != nil {
		return in.rcnn.set(tb)
	}
	if in == nil || in.clsTarget == nil {
		return fmt.Errorf("detection: LossInputs.Set: not made by a model's Loss")
	}
	if err := tb.check("LossInputs.Set", in.batch, in.k); err != nil {
		return err
	}
	if in.anchorBoxes.Dtype() == tensor.Float32 {
		if err := tb.checkFloat32("LossInputs.Set"); err != nil {
			return err
		}
		setTargets[float32](in, tb)
	} else {
		setTargets[float64](in, tb)
	}
	return nil
}

// setTargets is Set in T, the model's dtype.
func setTargets[T floatType](in *LossInputs, tb TargetBatch) {
	anchors := valueData[T](in.anchorBoxes)
	n, k := in.anchors, in.k
	matches := make([][]int, in.batch)
	gts := make([][]T, in.batch)
	labels := make([][]int, in.batch)
	fg := make([]int, in.batch)
	total := 0
	for b := range matches {
		xs, ls := tb.image(b)
		gts[b], labels[b] = convertValues[T](xs), ls
		if in.kind == fcosLoss {
			matches[b] = fcosMatch(anchors, gts[b], in.perLevel, FCOSCenterSamplingRadius)
		} else {
			// Errors only without anchors or boxes, handled before.
			matches[b], _ = retinaNetMatch(anchors, gts[b])
		}
		for _, m := range matches[b] {
			if m >= 0 {
				fg[b]++
			}
		}
		total += fg[b]
	}
	clsT, clsW := in.clsTarget.Data().([]T), in.clsWeight.Data().([]T)
	boxT, boxW := in.boxTarget.Data().([]T), in.boxWeight.Data().([]T)
	var ctrT, ctrW []T
	if in.kind == fcosLoss {
		ctrT, ctrW = in.ctrTarget.Data().([]T), in.ctrWeight.Data().([]T)
	}
	clear(clsT)
	per := len(boxW) / (in.batch * n) // weights per anchor: 4 (l1) or 1
	coder := NewBoxCoder([4]float64{1, 1, 1, 1})
	for b, ms := range matches {
		// RetinaNet: each image's sum / max(1, num_foreground), their
		// mean over the images; FCOS: the batch's sum / max(1,
		// num_foreground).
		w := T(1 / float64(max(1, fg[b])*in.batch))
		if in.kind == fcosLoss {
			w = T(1 / float64(max(1, total)))
		}
		for i, m := range ms {
			row := b*n + i
			a := anchors[4*i : 4*i+4]
			cw := w
			if m == BetweenThresholds {
				cw = 0
			}
			for c := 0; c < k; c++ {
				clsW[row*k+c] = cw
			}
			bw, bt := T(0), a
			if m >= 0 {
				clsT[row*k+labels[b][m]] = 1
				bw, bt = w, gts[b][4*m:4*m+4]
			}
			for c := 0; c < per; c++ {
				boxW[row*per+c] = bw
			}
			switch {
			case in.kind == retinaNetL1 && m >= 0:
				copy(boxT[4*row:], encodeBoxes(coder, bt, a, 1))
			case in.kind == retinaNetL1:
				clear(boxT[4*row : 4*row+4])
			default: // the GIoU losses' boxes: bg anchors get themselves
				copy(boxT[4*row:], bt)
			}
			if in.kind == fcosLoss {
				ctrT[row], ctrW[row] = 0, bw
				if m >= 0 {
					ctrT[row] = centerness(linearEncode(BoxLinearCoder{NormalizeBySize: true}, a, bt, 1))
				}
			}
		}
	}
}

// centerness is FCOS's centre-ness target of the codes (l, t, r, b):
// √(min(l, r)/max(l, r) · min(t, b)/max(t, b)).
func centerness[T floatType](c []T) T {
	return T(math.Sqrt(float64(min(c[0], c[2]) / max(c[0], c[2]) * (min(c[1], c[3]) / max(c[1], c[3])))))
}

// newLossInputs makes the inputs of a loss of kind for a batch of b
// images, anchors [N, 4] (perLevel[l] on level l) and k classes, in the
// anchors' dtype, as nodes of g.
func newLossInputs(g *gorgonia.ExprGraph, kind lossKind, b, k int, anchors *tensor.Dense, perLevel []int) (*LossInputs, error) {
	n := anchors.Shape()[0]
	dt := anchors.Dtype()
	zeros := func(shape ...int) *tensor.Dense { return tensor.New(tensor.Of(dt), tensor.WithShape(shape...)) }
	in := &LossInputs{kind: kind, batch: b, anchors: n, k: k, perLevel: perLevel, anchorBoxes: anchors,
		clsTarget: zeros(b, n, k), clsWeight: zeros(b, n, k), nodes: map[*tensor.Dense]*gorgonia.Node{}}
	if kind == retinaNetL1 {
		in.boxTarget, in.boxWeight = zeros(b, n, 4), zeros(b, n, 4)
	} else {
		in.boxTarget, in.boxWeight = zeros(b*n, 4), zeros(b*n)
	}
	if kind == fcosLoss {
		in.ctrTarget, in.ctrWeight = zeros(b, n, 1), zeros(b, n, 1)
	}
	for i, t := range []*tensor.Dense{in.clsTarget, in.clsWeight, in.boxTarget, in.boxWeight, in.ctrTarget, in.ctrWeight} {
		if t == nil {
			continue
		}
		name := fmt.Sprintf("loss_input%d_%p", i, in)
		in.nodes[t] = gorgonia.NewTensor(g, dt, t.Dims(), gorgonia.WithShape(t.Shape()...), gorgonia.WithValue(t), gorgonia.WithName(name))
	}
	return in, nil
}

// decodeInputs are constant nodes [B·N, 4] of the anchors repeated over
// the batch: scale and offset of a decoding. RetinaNet's BoxCoder
// (weights 1): scale (w, h, w, h), offset (cx, cy, cx, cy) with cx = x1 +
// 0.5·w; FCOS's BoxLinearCoder: scale (−w, −h, w, h), offset with cx =
// 0.5·(x1 + x2).
func decodeInputs[T floatType](g *gorgonia.ExprGraph, in *LossInputs) (scale, offset *gorgonia.Node, err error) {
	a := valueData[T](in.anchorBoxes)
	n := in.anchors
	s, o := make([]T, 4*n*in.batch), make([]T, 4*n*in.batch)
	half := T(0.5)
	for i := 0; i < n; i++ {
		x := a[4*i : 4*i+4]
		w, h := x[2]-x[0], x[3]-x[1]
		cx, cy := x[0]+T(half*w), x[1]+T(half*h)
		sc := [4]T{w, h, w, h}
		if in.kind == fcosLoss {
			cx, cy = T(half*(x[0]+x[2])), T(half*(x[1]+x[3]))
			sc = [4]T{-w, -h, w, h}
		}
		for b := 0; b < in.batch; b++ {
			r := 4 * (b*n + i)
			copy(s[r:r+4], sc[:])
			copy(o[r:r+4], []T{cx, cy, cx, cy})
		}
	}
	if scale, err = ad.Constant(g, newValue(s, in.batch*n, 4)); err != nil {
		return nil, nil, err
	}
	offset, err = ad.Constant(g, newValue(o, in.batch*n, 4))
	return scale, offset, err
}

// build adds the losses on the concatenated head outputs cls [B, N, K],
// reg [B, N, 4] and (FCOS) ctr [B, N, 1].
func (in *LossInputs) build(cls, reg, ctr *gorgonia.Node) (*Losses, error) {
	g := cls.Graph()
	node := func(t *tensor.Dense) *gorgonia.Node { return in.nodes[t] }
	b := ad.NewBuilder(cls)
	focal := b.Do(func() (*gorgonia.Node, error) {
		return gops.SigmoidFocalLoss(cls, node(in.clsTarget), 0.25, 2, ad.ReductionNone)
	})
	out := &Losses{Classification: b.Sum(b.HadamardProd(focal, node(in.clsWeight)))}
	var perBox *gorgonia.Node
	if in.kind == retinaNetL1 {
		perBox = b.Do(func() (*gorgonia.Node, error) { return nn.SmoothL1Loss(reg, node(in.boxTarget), 0, ad.ReductionNone) })
	} else {
		var scale, offset *gorgonia.Node
		var err error
		if in.anchorBoxes.Dtype() == tensor.Float32 {
			scale, offset, err = decodeInputs[float32](g, in)
		} else {
			scale, offset, err = decodeInputs[float64](g, in)
		}
		if err != nil {
			return nil, err
		}
		flat := b.Do(func() (*gorgonia.Node, error) { return nn.Reshape(reg, in.batch*in.anchors, 4) })
		var boxes *gorgonia.Node
		if in.kind == fcosLoss {
			// BoxLinearCoder.decode: (cx − l·w, cy − t·h, cx + r·w, cy + b·h).
			boxes = b.Add(offset, b.HadamardProd(flat, scale))
		} else {
			boxes = retinaNetDecode(b, flat, scale, offset)
		}
		perBox = b.Do(func() (*gorgonia.Node, error) {
			return gops.GeneralizedBoxIoULoss(boxes, node(in.boxTarget), ad.ReductionNone, gops.DefaultBoxEps)
		})
	}
	out.BboxRegression = b.Sum(b.HadamardProd(perBox, node(in.boxWeight)))
	out.Total = b.Add(out.Classification, out.BboxRegression)
	if in.kind == fcosLoss {
		out.BboxCtrness = b.Do(func() (*gorgonia.Node, error) {
			return nn.BinaryCrossEntropyWithLogits(ctr, node(in.ctrTarget),
				nn.BCEWithLogitsOpts{Weight: node(in.ctrWeight), Reduction: ad.ReductionSum})
		})
		out.Total = b.Add(out.Total, out.BboxCtrness)
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// retinaNetDecode is BoxCoder.decode_single (weights 1) of codes [M, 4]
// in the graph, scale (w, h, w, h) and offset (cx, cy, cx, cy) the
// anchors': with dw, dh clamped above at log(1000/16), the box
// (cx' − ½w', cy' − ½h', cx' + ½w', cy' + ½h') for cx' = dx·w + cx and
// w' = exp(dw)·w. min(d, clip) is d − relu(d − clip): d itself below the
// clip (no rounding), its gradient 1 there and 0 above.
func retinaNetDecode(b *ad.Builder, codes, scale, offset *gorgonia.Node) *gorgonia.Node {
	over := b.Do(func() (*gorgonia.Node, error) { return nn.ReLU(b.AddConst(codes, -DefaultBboxXformClip)) })
	clipped := b.Sub(codes, over)
	half := b.Scale(b.HadamardProd(b.Exp(clipped), scale), 0.5) // columns 2, 3: ½w', ½h'
	centre := b.Add(b.HadamardProd(codes, scale), offset)       // columns 0, 1: cx', cy'
	narrow := func(x *gorgonia.Node, start int) *gorgonia.Node {
		return b.Do(func() (*gorgonia.Node, error) { return nn.Narrow(x, 1, start, 2) })
	}
	lo := b.Sub(narrow(centre, 0), narrow(half, 2))
	hi := b.Add(narrow(centre, 0), narrow(half, 2))
	return b.Do(func() (*gorgonia.Node, error) { return nn.Concat(1, lo, hi) })
}

// loss builds the model in training mode on x and its losses of kind,
// with the parameters of at (LossAt's) in place of the weights' own
// nodes.
func (m *oneStage) loss(x *gorgonia.Node, kind lossKind, at map[string]*gorgonia.Node) (*LossInputs, *Losses, error) {
	if m == nil || m.weights == nil {
		return nil, nil, fmt.Errorf("detection: Loss: the model is nil or not made by its constructor")
	}
	w := m.weights
	if at != nil {
		var err error
		if w, err = w.paramsAt(m.name+".LossAt", at); err != nil {
			return nil, nil, err
		}
	}
	features, heads, err := m.buildWith(w, x, true, false)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*LossInputs, *Losses, error) {
		return nil, nil, fmt.Errorf("detection: %s.Loss: %w", m.name, err)
	}
	cls, reg, ctr, err := heads.Cat()
	if err != nil {
		return fail(err)
	}
	grids := make([][2]int, len(features))
	for l, f := range features {
		s := f.Shape()
		grids[l] = [2]int{s[2], s[3]}
	}
	s := x.Shape()
	levels, anchors, err := m.anchors.Anchors(x.Dtype(), [2]int{s[2], s[3]}, grids)
	if err != nil {
		return fail(err)
	}
	perLevel := make([]int, len(levels))
	for l, a := range levels {
		perLevel[l] = a.Shape()[0]
	}
	cs := cls.Shape()
	if cs[1] != anchors.Shape()[0] {
		return fail(fmt.Errorf("%d anchors for %d head outputs per image", anchors.Shape()[0], cs[1]))
	}
	in, err := newLossInputs(x.Graph(), kind, cs[0], cs[2], anchors, perLevel)
	if err != nil {
		return fail(err)
	}
	losses, err := in.build(cls, reg, ctr)
	if err != nil {
		return fail(err)
	}
	return in, losses, nil
}
