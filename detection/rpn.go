package detection

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RPNHead is torchvision's RPNHead (models/detection/rpn.py): on each FPN
// level, ConvDepth 3×3 convolutions C → C with bias, each followed by
// ReLU, then two 1×1 convolutions with bias, cls_logits to NumAnchors
// objectness logits and bbox_pred to 4·NumAnchors box deltas. Its tensors
// live under prefix ("rpn.head") as conv.<i>.0.weight/bias,
// cls_logits.weight/bias and bbox_pred.weight/bias (version 2 keys;
// LoadOptions.RPNHeads upgrades older checkpoints).
type RPNHead struct {
	// InChannels is C, the FPN's channels.
	InChannels int
	// NumAnchors is A, the anchors per location of every level.
	NumAnchors int
	// ConvDepth is the number of 3×3 convolutions; 0 means torchvision's
	// 1 (fasterrcnn_resnet50_fpn_v2 uses 2).
	ConvDepth int
}

// depth is ConvDepth with its default.
func (h RPNHead) depth() int { return orDefault(h.ConvDepth, 1) }

// check checks the configuration.
func (h RPNHead) check(name string) error {
	switch {
	case h.InChannels < 1:
		return fmt.Errorf("detection: %s: InChannels %d, want at least 1", name, h.InChannels)
	case h.NumAnchors < 1:
		return fmt.Errorf("detection: %s: NumAnchors %d, want at least 1", name, h.NumAnchors)
	case h.ConvDepth < 0:
		return fmt.Errorf("detection: %s: ConvDepth %d is negative", name, h.ConvDepth)
	}
	return nil
}

// Init adds the head's tensors to w under prefix, initialised as
// torchvision's RPNHead: every convolution's weight normal(0, 0.01), its
// bias 0. Errors: a bad configuration, rng nil, a key already in w.
func (h RPNHead) Init(w *Weights, prefix string, rng *rand.Rand) error {
	const name = "RPNHead.Init"
	if err := h.check(name); err != nil {
		return err
	}
	if rng == nil {
		return fmt.Errorf("detection: %s: rng is nil", name)
	}
	c, a := h.InChannels, h.NumAnchors
	for i := 0; i < h.depth(); i++ {
		if err := initConv3x3(w, key(prefix, fmt.Sprintf("conv.%d.0", i)), c, c, true, 0, rng); err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
	}
	for _, o := range []struct {
		name string
		out  int
	}{{"cls_logits", a}, {"bbox_pred", 4 * a}} {
		t, err := w.Add(key(prefix, o.name+".weight"), true, o.out, c, 1, 1)
		if err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
		if err := nn.Normal(t, 0, 0.01, rng); err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
		if _, err := w.Add(key(prefix, o.name+".bias"), true, o.out); err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
	}
	return nil
}

// Forward builds the head on the FPN levels features ([N, C, H_l, W_l],
// finest first, w's dtype, one graph) from w's tensors under prefix. It
// returns per level the objectness logits [N, H_l·W_l·A, 1] and the box
// deltas [N, H_l·W_l·A, 4] (dx, dy, dw, dh for BoxCoder(1, 1, 1, 1)), in
// torchvision's layout after concat_box_prediction_layers' permute:
// anchor a at location (y, x) of level l is row (y·W_l + x)·A + a.
// Differentiable to every order.
//
// Errors: a bad configuration; no levels, a nil one, a level of another
// rank, channel count, dtype, batch size or graph (named); a tensor
// missing from w or of another shape.
func (h RPNHead) Forward(w *Weights, prefix string, features []*gorgonia.Node) (objectness, deltas []*gorgonia.Node, err error) {
	return h.forward(w, prefix, features, false)
}

// forward is Forward; fused: each 3×3 convolution and its ReLU one op
// (the inference graph, no gradient).
func (h RPNHead) forward(w *Weights, prefix string, features []*gorgonia.Node, fused bool) (objectness, deltas []*gorgonia.Node, err error) {
	const name = "RPNHead"
	if err := h.check(name); err != nil {
		return nil, nil, err
	}
	node, err := headFeatures(name, w, features, h.InChannels)
	if err != nil {
		return nil, nil, err
	}
	for _, x := range features {
		t := x
		for i := 0; i < h.depth(); i++ {
			if t, err = conv3x3(node, t, key(prefix, fmt.Sprintf("conv.%d.0", i)), true, h.InChannels, fused); err != nil {
				return nil, nil, fmt.Errorf("detection: %s: %w", name, err)
			}
			if !fused {
				if t, err = nn.ReLU(t); err != nil {
					return nil, nil, fmt.Errorf("detection: %s: %w", name, err)
				}
			}
		}
		var outs [2]*gorgonia.Node
		for j, o := range []struct {
			name string
			k    int
		}{{"cls_logits", 1}, {"bbox_pred", 4}} {
			y, err := conv1x1(node, t, key(prefix, o.name), h.NumAnchors*o.k)
			if err != nil {
				return nil, nil, fmt.Errorf("detection: %s: %w", name, err)
			}
			if outs[j], err = perAnchor(y, o.k); err != nil {
				return nil, nil, fmt.Errorf("detection: %s: %w", name, err)
			}
		}
		objectness, deltas = append(objectness, outs[0]), append(deltas, outs[1])
	}
	return objectness, deltas, nil
}

// conv1x1 is the 1×1 convolution with bias under key from x's channels to
// cout; a weight of another shape is an error naming it.
func conv1x1(node nodeFunc, x *gorgonia.Node, key string, cout int) (*gorgonia.Node, error) {
	wt, err := node(key + ".weight")
	if err != nil {
		return nil, err
	}
	if want := (tensor.Shape{cout, x.Shape()[1], 1, 1}); !wt.Shape().Eq(want) {
		return nil, fmt.Errorf("%s.weight has shape %v, want %v", key, wt.Shape(), want)
	}
	b, err := node(key + ".bias")
	if err != nil {
		return nil, err
	}
	y, err := nn.Conv2d(x, wt, b, nn.Conv2dOpts{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return y, nil
}

// RPNConfig is the proposal selection of torchvision's
// RegionProposalNetwork (filter_proposals): per image and level, the
// PreNMSTopN anchors of highest objectness; their boxes decoded by
// BoxCoder(1, 1, 1, 1), clipped to the image, those narrower or lower than
// MinSize removed, those of objectness probability below ScoreThresh
// removed, batched NMS per level at NMSThresh, and the first PostNMSTopN
// kept. The Test counts apply in eval mode, the Train ones in training.
type RPNConfig struct {
	PreNMSTopNTrain, PreNMSTopNTest   int
	PostNMSTopNTrain, PostNMSTopNTest int
	// NMSThresh is the IoU above which NMS suppresses a box (0.7).
	NMSThresh float64
	// ScoreThresh is the least objectness probability kept (0; compared
	// with >=, as torchvision).
	ScoreThresh float64
	// MinSize is the least box side in pixels (torchvision's 1e-3).
	MinSize float64
	// Training: anchors of IoU >= FgIoUThresh (0.7) with a box are
	// positives, those below BgIoUThresh (0.3) with every box negatives
	// (each box's best anchors positives anyway); BatchSizePerImage (256)
	// of them sampled per image, at most PositiveFraction (0.5) positives.
	FgIoUThresh, BgIoUThresh float64
	BatchSizePerImage        int
	PositiveFraction         float64
}

// DefaultRPNConfig is fasterrcnn_resnet50_fpn's: pre-NMS top 2000 (train)
// and 1000 (test) per level, post-NMS top 2000 and 1000 per image, NMS at
// 0.7, score threshold 0, minimum size 1e-3; for training, IoU
// thresholds 0.7 and 0.3, 256 samples per image, half of them positives
// at most.
func DefaultRPNConfig() RPNConfig {
	return RPNConfig{PreNMSTopNTrain: 2000, PreNMSTopNTest: 1000, PostNMSTopNTrain: 2000, PostNMSTopNTest: 1000,
		NMSThresh: 0.7, ScoreThresh: 0, MinSize: 1e-3,
		FgIoUThresh: 0.7, BgIoUThresh: 0.3, BatchSizePerImage: 256, PositiveFraction: 0.5}
}

// check checks the settings.
func (c RPNConfig) check(opName string) error {
	switch {
	case c.PreNMSTopNTrain < 0 || c.PreNMSTopNTest < 0 || c.PostNMSTopNTrain < 0 || c.PostNMSTopNTest < 0:
		return fmt.Errorf("detection: %s: RPNConfig's top-n counts %d, %d, %d, %d, want >= 0", opName,
			c.PreNMSTopNTrain, c.PreNMSTopNTest, c.PostNMSTopNTrain, c.PostNMSTopNTest)
	case !(c.NMSThresh >= 0):
		return fmt.Errorf("detection: %s: RPNConfig.NMSThresh %v, want >= 0", opName, c.NMSThresh)
	case math.IsNaN(c.ScoreThresh):
		return fmt.Errorf("detection: %s: RPNConfig.ScoreThresh is NaN", opName)
	case math.IsNaN(c.MinSize):
		return fmt.Errorf("detection: %s: RPNConfig.MinSize is NaN", opName)
	}
	return nil
}

// topN returns the pre- and post-NMS counts of the mode.
func (c RPNConfig) topN(train bool) (pre, post int) {
	if train {
		return c.PreNMSTopNTrain, c.PostNMSTopNTrain
	}
	return c.PreNMSTopNTest, c.PostNMSTopNTest
}

// Proposals are one image's region proposals: Boxes [P, 4] (x1, y1, x2,
// y2 in the pixels of the batch the network saw) and Scores [P], their
// objectness probabilities, in decreasing order.
type Proposals struct {
	Boxes  *tensor.Dense
	Scores *tensor.Dense
}

// FilterProposals is RegionProposalNetwork.filter_proposals on the RPN
// head's outputs (RPNHead.Forward's per-level objectness [N, HWA_l, 1] and
// deltas [N, HWA_l, 4] as values) and the levels' anchors [HWA_l, 4]
// (AnchorGenerator.Anchors), with the counts of cfg's mode (train); the
// selection is RPNConfig's, the objectness top-k in torch.topk's order and
// the NMS of torchvision's batched_nms. imageSizes are the N images'
// (height, width) in the batch. It returns each image's proposals.
//
// Errors name the argument: no images, negative sizes, level counts
// differing, shapes or dtypes other than these, bad settings.
func FilterProposals(cfg RPNConfig, objectness, deltas, anchors []*tensor.Dense, imageSizes [][2]int, train bool) ([]Proposals, error) {
	const op = "FilterProposals"
	if err := cfg.check(op); err != nil {
		return nil, err
	}
	if err := headLevels(op, imageSizes, "objectness", 1, objectness, anchors, []string{"deltas"}, []int{4}, deltas); err != nil {
		return nil, err
	}
	if objectness[0].Dtype() == tensor.Float32 {
		return filterProposalsOf[float32](cfg, objectness, deltas, anchors, imageSizes, train), nil
	}
	return filterProposalsOf[float64](cfg, objectness, deltas, anchors, imageSizes, train), nil
}

// filterProposalsOf is FilterProposals on checked values.
func filterProposalsOf[T floatType](cfg RPNConfig, objectness, deltas, anchors []*tensor.Dense, imageSizes [][2]int, train bool) []Proposals {
	obj, dl, an := levelData[T](objectness), levelData[T](deltas), levelData[T](anchors)
	out := make([]Proposals, len(imageSizes))
	for i, size := range imageSizes {
		boxes, scores := proposalsOf(cfg, obj, dl, an, i, size, train)
		out[i] = Proposals{Boxes: newValue(boxes, len(scores), 4), Scores: newValue(scores, len(scores))}
	}
	return out
}

// levelData is each level's elements.
func levelData[T floatType](levels []*tensor.Dense) [][]T {
	out := make([][]T, len(levels))
	for l, t := range levels {
		out[l] = valueData[T](t)
	}
	return out
}

// proposalsOf is filter_proposals for image i of the per-level data
// (objectness [N, HWA_l], deltas [N, HWA_l, 4], anchors [HWA_l, 4]): the
// kept boxes [P, 4] and scores [P].
func proposalsOf[T floatType](cfg RPNConfig, obj, deltas, anchors [][]T, i int, size [2]int, train bool) (boxes, scores []T) {
	preN, postN := cfg.topN(train)
	coder := NewBoxCoder([4]float64{1, 1, 1, 1})
	var lvls []int
	for l := range obj {
		hwa := len(anchors[l]) / 4
		ob := obj[l][i*hwa:][:hwa]
		best := topk(ob, min(preN, hwa))
		codes, rows := make([]T, 0, 4*len(best)), make([]T, 0, 4*len(best))
		for _, a := range best {
			codes = append(codes, deltas[l][(i*hwa+a)*4:][:4]...)
			rows = append(rows, anchors[l][a*4:][:4]...)
			scores = append(scores, sigmoid(ob[a]))
			lvls = append(lvls, l)
		}
		boxes = append(boxes, clipBoxes(decodeBoxes(coder, codes, rows, len(best), 4), size)...)
	}
	// remove_small_boxes, then scores >= ScoreThresh, in place.
	minSize, thr := T(cfg.MinSize), T(cfg.ScoreThresh)
	k := 0
	for j := range scores {
		b := boxes[4*j:][:4]
		if !(b[2]-b[0] >= minSize && b[3]-b[1] >= minSize) || !(scores[j] >= thr) {
			continue
		}
		copy(boxes[4*k:4*k+4], b)
		scores[k], lvls[k] = scores[j], lvls[j]
		k++
	}
	boxes, scores, lvls = boxes[:4*k], scores[:k], lvls[:k]
	keep := batchedNMS(boxes, scores, lvls, cfg.NMSThresh)
	keep = keep[:min(len(keep), postN)]
	kb, ks := make([]T, 4*len(keep)), make([]T, len(keep))
	for j, x := range keep {
		copy(kb[4*j:4*j+4], boxes[4*x:4*x+4])
		ks[j] = scores[x]
	}
	return kb, ks
}

// batchedNMS is torchvision's batched_nms on flat boxes [K, 4]: the kept
// indices in its order (vanillaOrder above 1000 boxes).
func batchedNMS[T floatType](boxes, scores []T, idxs []int, thr float64) []int {
	if len(scores) == 0 {
		return []int{}
	}
	var keep []int
	switch b := any(boxes).(type) {
	case []float32:
		keep = cpu.BatchedNMS(b, any(scores).([]float32), idxs, thr)
	case []float64:
		keep = cpu.BatchedNMS(b, any(scores).([]float64), idxs, thr)
	}
	if len(scores) > 1000 {
		keep = vanillaOrder(keep, scores)
	}
	return keep
}

// proposalCols are the columns of the proposals op's result rows: x1, y1,
// x2, y2, the objectness probability, and 1 for a proposal (0 for a
// padding row, all zeros).
const proposalCols = 6

// proposalsNode adds the RPN's proposal selection to the graph as one op
// without a derivative (torchvision detaches the objectness and deltas):
// on the per-level objectness and deltas and sizes [N, 2] (the images'
// heights and widths, as a value set before each run), with the anchors
// of the graph's batch shape. Its result is [N, P, proposalCols] with P
// the mode's PostNMSTopN: each image's proposals in order, then rows of
// zeros.
func proposalsNode(cfg RPNConfig, train bool, objectness, deltas []*gorgonia.Node, sizes *gorgonia.Node, anchors []*tensor.Dense, params string) (*gorgonia.Node, error) {
	n := objectness[0].Shape()[0]
	_, post := cfg.topN(train)
	levels := len(objectness)
	out := tensor.Shape{n, post, proposalCols}
	dims := make([]int, 2*levels+1)
	for i := range dims {
		dims[i] = 3
	}
	dims[2*levels] = 2
	spec := ad.OpSpec{
		Name:      "RPNProposals",
		Params:    fmt.Sprintf("%+v train=%v anchors %s", cfg, train, params),
		InputDims: dims, OutputDims: 3,
		DiffWRT: make([]bool, len(dims)),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for l := 0; l < levels; l++ {
				hwa := anchors[l].Shape()[0]
				if !in[l].Eq(tensor.Shape{n, hwa, 1}) || !in[levels+l].Eq(tensor.Shape{n, hwa, 4}) {
					return nil, fmt.Errorf("detection: RPNProposals: level %d: objectness %v and deltas %v, want [%d, %d, 1] and [%d, %d, 4]",
						l, in[l], in[levels+l], n, hwa, n, hwa)
				}
			}
			if !in[2*levels].Eq(tensor.Shape{n, 2}) {
				return nil, fmt.Errorf("detection: RPNProposals: image sizes %v, want [%d, 2]", in[2*levels], n)
			}
			return out.Clone(), nil
		},
		Kernel: ad.Floats(proposalsKernel[float32](cfg, train, anchors), proposalsKernel[float64](cfg, train, anchors)),
		Backward: func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		},
	}
	in := append(append(append(gorgonia.Nodes{}, objectness...), deltas...), sizes)
	return ad.Apply(spec, in...)
}

// proposalsKernel is the proposals op's kernel: proposalsOf per image.
func proposalsKernel[T floatType](cfg RPNConfig, train bool, anchors []*tensor.Dense) func(ad.Tensor[T], []ad.Tensor[T]) error {
	an := make([][]T, len(anchors))
	for l, a := range anchors {
		if a.Dtype() == tensor.Float32 {
			an[l] = convertValues[T](valueData[float32](a))
		} else {
			an[l] = convertValues[T](valueData[float64](a))
		}
	}
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		levels := len(an)
		obj, dl := make([][]T, levels), make([][]T, levels)
		for l := range an {
			obj[l], dl[l] = in[l].Data, in[levels+l].Data
		}
		sizes := in[2*levels].Data
		n, p := out.Shape[0], out.Shape[1]
		for i := 0; i < n; i++ {
			h, w := sizes[2*i], sizes[2*i+1]
			if !(h >= 0 && w >= 0 && h == T(math.Trunc(float64(h))) && w == T(math.Trunc(float64(w)))) {
				return fmt.Errorf("detection: RPNProposals: image %d has size (%v, %v), want whole numbers >= 0", i, h, w)
			}
			boxes, scores := proposalsOf(cfg, obj, dl, an, i, [2]int{int(h), int(w)}, train)
			rows := out.Data[i*p*proposalCols:][:p*proposalCols]
			for j := range scores {
				r := rows[j*proposalCols:][:proposalCols]
				copy(r, boxes[4*j:4*j+4])
				r[4], r[5] = scores[j], 1
			}
		}
		return nil
	}
}
