package detection

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FasterRCNNConfig is the configuration of torchvision's FasterRCNN
// (models/detection/faster_rcnn.py) with an FPN backbone, in eval mode;
// FasterRCNNResNet50FPN gives fasterrcnn_resnet50_fpn's.
type FasterRCNNConfig struct {
	// Backbone is the ResNet-FPN. Its returned stages' maps feed the RoI
	// pooling (torchvision's featmap_names "0".."3"); all its maps, the
	// extra block's too, feed the RPN. OutChannels (0: 256) is C.
	Backbone BackboneWithFPN
	// NumClasses counts the background class 0 (91 for COCO).
	NumClasses int
	// Transform resizes, normalises and batches the images.
	Transform GeneralizedRCNNTransform
	// AnchorGenerator is the RPN's anchors (one size, three aspect
	// ratios per level for fasterrcnn_resnet50_fpn).
	AnchorGenerator AnchorGenerator
	// RPNConvDepth is RPNHead.ConvDepth (0: 1).
	RPNConvDepth int
	// RPN is the proposal selection (DefaultRPNConfig).
	RPN RPNConfig
	// RoIOutputSize and SamplingRatio are the box RoI pooling's
	// (MultiScaleRoIAlign's; 0 means torchvision's 7 and 2).
	RoIOutputSize, SamplingRatio int
	// Representation is TwoMLPHead's width (0: 1024); unused with
	// ConvFCHead.
	Representation int
	// ConvFCHead, if not nil, is the box head in place of TwoMLPHead
	// (fasterrcnn_resnet50_fpn_v2's box_head); its InputSize must be (the
	// backbone's channels, RoIOutputSize, RoIOutputSize). The predictor
	// takes its output width.
	ConvFCHead *FastRCNNConvFCHead
	// RoIHeads is the detection selection (DefaultRoIHeadsConfig).
	RoIHeads RoIHeadsConfig
	// Randperm, if not nil, is the training samplers' torch.randperm(n):
	// a permutation of 0..n−1. nil: the model's own source (math/rand/v2's
	// PCG, seeded 0, 0). Each LossInputs.Set draws the RPN's samples
	// (image after image), each run of a loss graph the box head's; with
	// several loss graphs in one (MAML's support and query) the order is
	// every Set's, then the runs', where torchvision interleaves them per
	// forward: to replay torchvision's draws give each LossInputs its own
	// (LossInputs.SetRandperm).
	Randperm func(n int) []int
}

// FasterRCNNAnchorGenerator is torchvision's _default_anchorgen() of
// Faster R-CNN: sizes 32, 64, 128, 256, 512, one per level, and aspect
// ratios 0.5, 1, 2 on every level.
func FasterRCNNAnchorGenerator() AnchorGenerator {
	var g AnchorGenerator
	for _, s := range []float64{32, 64, 128, 256, 512} {
		g.Sizes = append(g.Sizes, []float64{s})
		g.AspectRatios = append(g.AspectRatios, []float64{0.5, 1, 2})
	}
	return g
}

// FasterRCNNResNet50FPN is the configuration of torchvision's
// fasterrcnn_resnet50_fpn(num_classes=numClasses) with its COCO_V1
// weights' structure: ResNet-50 with FrozenBatchNorm2d of eps 0, three
// trainable stages, layers 1–4 into a 256-channel FPN with a max-pooled
// "pool" level, the default anchors, RPN and RoI heads, a 1024-wide
// TwoMLPHead, min_size 800, max_size 1333.
func FasterRCNNResNet50FPN(numClasses int) FasterRCNNConfig {
	body := ResNet50()
	body.Eps = 0
	return FasterRCNNConfig{
		Backbone: BackboneWithFPN{Body: body, TrainableLayers: 3, ReturnedLayers: []int{1, 2, 3, 4},
			OutChannels: 256, ExtraBlocks: LastLevelMaxPool{}},
		NumClasses:      numClasses,
		Transform:       NewGeneralizedRCNNTransform(800, 1333),
		AnchorGenerator: FasterRCNNAnchorGenerator(),
		RPN:             DefaultRPNConfig(),
		RoIHeads:        DefaultRoIHeadsConfig(),
	}
}

// FasterRCNNResNet50FPNV2 is the configuration of torchvision's
// fasterrcnn_resnet50_fpn_v2(num_classes=numClasses) with its COCO_V1
// weights' structure (Li et al., "Benchmarking Detection Transfer
// Learning with Vision Transformers"): ResNet-50 with BatchNorm2d (eps
// 1e-5), three trainable stages, layers 1–4 into a 256-channel FPN with
// BatchNorm2d and a max-pooled "pool" level, the default anchors, an RPN
// head of two convolutions, the RPN and RoI heads' defaults, and the box
// head FastRCNNConvFCHead((256, 7, 7), [256, 256, 256, 256], [1024],
// BatchNorm2d); min_size 800, max_size 1333.
func FasterRCNNResNet50FPNV2(numClasses int) FasterRCNNConfig {
	c := FasterRCNNResNet50FPN(numClasses)
	c.Backbone.Body = ResNet50()
	c.Backbone.Body.NormLayer = BatchNorm2d
	c.Backbone.FPNBatchNorm = true
	c.RPNConvDepth = 2
	c.ConvFCHead = &FastRCNNConvFCHead{InputSize: [3]int{256, 7, 7}, ConvLayers: []int{256, 256, 256, 256},
		FCLayers: []int{1024}, BatchNorm: true}
	return c
}

// FasterRCNN is torchvision's Faster R-CNN detector in eval mode. Like
// FCOS, it is not safe for concurrent use.
type FasterRCNN struct {
	Config  FasterRCNNConfig
	weights *Weights
	run     *runner
	mu      sync.Mutex // guards rng
	rng     *rand.Rand
}

// parts are the configuration's heads.
func (c FasterRCNNConfig) parts() (RPNHead, boxHead, FastRCNNPredictor) {
	ch := orDefault(c.Backbone.OutChannels, 256)
	a := 0
	if n := c.AnchorGenerator.NumAnchorsPerLocation(); len(n) > 0 {
		a = n[0]
	}
	out := orDefault(c.RoIOutputSize, 7)
	var box boxHead = TwoMLPHead{InChannels: ch * out * out, Representation: orDefault(c.Representation, 1024)}
	if c.ConvFCHead != nil {
		h := *c.ConvFCHead
		h.ConvLayers, h.FCLayers = slices.Clone(h.ConvLayers), slices.Clone(h.FCLayers)
		box = h
	}
	return RPNHead{InChannels: ch, NumAnchors: a, ConvDepth: c.RPNConvDepth}, box,
		FastRCNNPredictor{InChannels: box.outChannels(), NumClasses: c.NumClasses}
}

// pooledHeights are the heights of the maps the RoI pooling takes for a
// batch of height h: the ResNet's stem (a 7×7 convolution of stride 2
// and padding 3, a 3×3 max pooling of stride 2 and padding 1) gives
// layer1's, each later stage halves it as a 3×3 convolution of stride 2
// and padding 1 does; the returned stages' heights.
func (c FasterRCNNConfig) pooledHeights(h int) []int {
	conv := func(h, k, s, p int) int { return (h+2*p-k)/s + 1 }
	stages := []int{conv(conv(h, 7, 2, 3), 3, 2, 1)}
	for i := 1; i < 4; i++ {
		stages = append(stages, conv(stages[i-1], 3, 2, 1))
	}
	returned := c.Backbone.ReturnedLayers
	if len(returned) == 0 {
		returned = []int{2, 3, 4}
	}
	out := make([]int, 0, len(returned))
	for _, r := range returned {
		if r >= 1 && r <= len(stages) {
			out = append(out, stages[r-1])
		}
	}
	return out
}

// pooledMaps is how many of the backbone's maps the RoI pooling takes
// (its returned stages' maps, not the extra blocks').
func (c FasterRCNNConfig) pooledMaps() int {
	if len(c.Backbone.ReturnedLayers) == 0 {
		return 3 // BackboneWithFPN's default stages 2, 3, 4
	}
	return len(c.Backbone.ReturnedLayers)
}

// checkTraining checks the training settings.
func (c FasterRCNNConfig) checkTraining() error {
	const name = "FasterRCNN.Loss"
	for _, m := range []struct {
		what    string
		hi, lo  float64
		sampler BalancedPositiveNegativeSampler
	}{
		{"RPNConfig", c.RPN.FgIoUThresh, c.RPN.BgIoUThresh, BalancedPositiveNegativeSampler{c.RPN.BatchSizePerImage, c.RPN.PositiveFraction}},
		{"RoIHeadsConfig", c.RoIHeads.FgIoUThresh, c.RoIHeads.BgIoUThresh, BalancedPositiveNegativeSampler{c.RoIHeads.BatchSizePerImage, c.RoIHeads.PositiveFraction}},
	} {
		if !(m.lo <= m.hi) {
			return fmt.Errorf("detection: %s: %s's BgIoUThresh %v above FgIoUThresh %v", name, m.what, m.lo, m.hi)
		}
		if err := m.sampler.check(name, m.what+"'s"); err != nil {
			return err
		}
		if m.sampler.BatchSizePerImage < 1 {
			return fmt.Errorf("detection: %s: %s.BatchSizePerImage %d, want at least 1", name, m.what, m.sampler.BatchSizePerImage)
		}
	}
	return nil
}

// check checks what the parts' Init does not.
func (c FasterRCNNConfig) check() error {
	const name = "NewFasterRCNN"
	if err := c.RPN.check(name); err != nil {
		return err
	}
	if err := c.RoIHeads.check(name); err != nil {
		return err
	}
	switch {
	case c.NumClasses < 2:
		return fmt.Errorf("detection: %s: NumClasses %d, want at least 2 (the background class 0 and one more)", name, c.NumClasses)
	case c.RoIOutputSize < 0 || c.SamplingRatio < 0 || c.Representation < 0:
		return fmt.Errorf("detection: %s: RoIOutputSize %d, SamplingRatio %d and Representation %d, want >= 0", name,
			c.RoIOutputSize, c.SamplingRatio, c.Representation)
	}
	if h := c.ConvFCHead; h != nil {
		if err := h.check(name + ": ConvFCHead"); err != nil {
			return err
		}
		ch, out := orDefault(c.Backbone.OutChannels, 256), orDefault(c.RoIOutputSize, 7)
		if want := [3]int{ch, out, out}; h.InputSize != want {
			return fmt.Errorf("detection: %s: ConvFCHead.InputSize %v, want %v (the backbone's channels, RoIOutputSize twice)", name, h.InputSize, want)
		}
	}
	rpn, _, _ := c.parts()
	return checkLevels("FasterRCNN", c.Backbone, c.AnchorGenerator, rpn.NumAnchors)
}

// NewFasterRCNN returns a Faster R-CNN of cfg in dtype dt with weights
// drawn from rng as torchvision's constructors draw them: the backbone as
// NewFCOS's (FeaturePyramidNetwork.Init's norms with FPNBatchNorm), the
// RPN head's convolutions normal(0, 0.01) with zero biases, the box head
// as TwoMLPHead's or FastRCNNConvFCHead's Init (ConvFCHead), the
// predictor's linear layers as torch.nn.Linear.
//
// Errors: a bad configuration (named), dt not a float dtype, rng nil.
func NewFasterRCNN(cfg FasterRCNNConfig, dt tensor.Dtype, rng *rand.Rand) (*FasterRCNN, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("detection: NewFasterRCNN: rng is nil")
	}
	w, err := NewWeights(dt)
	if err != nil {
		return nil, fmt.Errorf("detection: NewFasterRCNN: %w", err)
	}
	rpn, box, pred := cfg.parts()
	for _, init := range []func() error{
		func() error { return cfg.Backbone.Init(w, "backbone", rng) },
		func() error { return rpn.Init(w, "rpn.head", rng) },
		func() error { return box.Init(w, "roi_heads.box_head", rng) },
		func() error { return pred.Init(w, "roi_heads.box_predictor", rng) },
	} {
		if err := init(); err != nil {
			return nil, fmt.Errorf("detection: NewFasterRCNN: %w", err)
		}
	}
	f := &FasterRCNN{Config: cfg, weights: w}
	f.run = newVariantRunner(f.buildInference)
	return f, nil
}

// LoadFasterRCNN returns a Faster R-CNN of cfg in dtype dt holding the
// weights of the torch.save checkpoint at path, as LoadFCOS; version-1
// RPN head keys (rpn.head.conv.weight, torchvision's published COCO_V1
// file) are upgraded as RPNHead does.
func LoadFasterRCNN(path string, cfg FasterRCNNConfig, dt tensor.Dtype, opts LoadOptions) (*FasterRCNN, IncompatibleKeys, error) {
	f, err := NewFasterRCNN(cfg, dt, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, IncompatibleKeys{}, err
	}
	ck, err := LoadCheckpoint(path)
	if err != nil {
		return nil, IncompatibleKeys{}, fmt.Errorf("detection: LoadFasterRCNN: %w", err)
	}
	opts.RPNHeads = append(slices.Clone(opts.RPNHeads), "rpn.head.")
	keys, err := f.weights.LoadStateDict(ck, opts)
	if err != nil {
		return nil, keys, fmt.Errorf("detection: LoadFasterRCNN: %w", err)
	}
	return f, keys, nil
}

// Weights returns the model's tensors (see FCOS.Weights); nil for a nil
// model.
func (f *FasterRCNN) Weights() *Weights {
	if f == nil {
		return nil
	}
	return f.weights
}

// Close releases Forward's machines; Forward fails after it.
func (f *FasterRCNN) Close() error {
	if f == nil {
		return nil
	}
	return f.run.close()
}

// Forward runs the model on images ([3, H_i, W_i] each, any sizes, the
// model's dtype, pixel values in [0, 1]) and returns torchvision's eval
// output per image: boxes in the image's own pixels, scores, labels
// (1..NumClasses−1).
//
// One graph holds the backbone, the RPN head, the proposal selection (an
// op without a derivative, as torchvision detaches the proposals; each
// image's proposals padded with zero boxes to PostNMSTopNTest rows), the
// RoI pooling of the proposals, the box head and the predictor; the
// detections are selected on its outputs' values. Forward builds a graph
// and machine per padded batch shape (and RoI pooling scales, which
// torchvision infers from the largest image, and Config.RPN and
// Config.AnchorGenerator, which the graph holds) on its first use and
// keeps the 4 most recently used; Config.RoIHeads applies to the graph's
// outputs on each call.
//
// Errors: as FCOS.Forward's; the RoI pooling's scales, inferred from the
// largest image as torchvision does, not halving from map to map (images
// far smaller than their padded batch).
func (f *FasterRCNN) Forward(images []*tensor.Dense) ([]Detections, error) {
	il, raw, err := f.rawOutputs(images)
	if err != nil {
		return nil, err
	}
	boxes := make([]*tensor.Dense, len(raw.proposals))
	for i, p := range raw.proposals {
		boxes[i] = p.Boxes
	}
	dets, err := FastRCNNPostprocessDetections(f.Config.RoIHeads, raw.classLogits, raw.boxRegression, boxes, il.ImageSizes)
	if err != nil {
		return nil, fmt.Errorf("detection: FasterRCNN.Forward: %w", err)
	}
	orig := make([][2]int, len(images))
	for i, im := range images {
		s := im.Shape()
		orig[i] = [2]int{s[1], s[2]}
	}
	return f.Config.Transform.Postprocess(dets, il.ImageSizes, orig)
}

// rcnnOutputs are the inference graph's outputs as values: each image's
// proposals, and the class logits [ΣP_i, K] and box regression [ΣP_i,
// 4K] of the proposals.
type rcnnOutputs struct {
	proposals                  []Proposals
	classLogits, boxRegression *tensor.Dense
}

// rcnnVariant is what an inference graph is built for beyond the batch's
// shape: the RoI pooling's scales (inferred from the largest image, as
// torchvision infers them; images of other sizes with the same scales
// share the graph), and the settings the graph holds (Config.RPN and the
// anchors, so that changing them after a Forward builds a new graph;
// Config.RoIHeads is read on values).
type rcnnVariant struct {
	Scales  []float64
	RPN     RPNConfig
	Anchors string
}

// rcnnMeta is what the inference graph keeps for its runs: the image
// sizes' input node.
type rcnnMeta struct {
	sizes *gorgonia.Node
}

// rawOutputs transforms images and runs the inference graph.
func (f *FasterRCNN) rawOutputs(images []*tensor.Dense) (ImageList, *rcnnOutputs, error) {
	if f == nil || f.weights == nil {
		return ImageList{}, nil, fmt.Errorf("detection: FasterRCNN.Forward: the model is nil or not made by its constructor")
	}
	dt := f.weights.Dtype()
	for i, im := range images {
		if im != nil && im.Dtype() != dt {
			return ImageList{}, nil, fmt.Errorf("detection: FasterRCNN.Forward: images[%d] is %v, the model %v", i, im.Dtype(), dt)
		}
	}
	il, err := f.Config.Transform.Transform(images)
	if err != nil {
		return ImageList{}, nil, err
	}
	sizesV, largest := sizesValue(dt, il.ImageSizes)
	s := il.Tensors.Shape()
	heights := f.Config.pooledHeights(s[2])
	scales := make([]float64, len(heights))
	for l, h := range heights {
		scales[l] = gops.InferScale(h, largest[0])
	}
	variant := rcnnVariant{Scales: scales, RPN: f.Config.RPN, Anchors: fmt.Sprint(f.Config.AnchorGenerator)}
	outs, _, err := f.run.runVariant(il.Tensors, variant, func(meta any) error {
		return gorgonia.Let(meta.(rcnnMeta).sizes, sizesV)
	})
	if err != nil {
		return ImageList{}, nil, fmt.Errorf("detection: FasterRCNN.Forward: %w", err)
	}
	props, logits, reg := outs[0], outs[1], outs[2]
	raw := &rcnnOutputs{}
	k := logits.Shape()[1]
	var rows []int // the rows of real proposals in the padded outputs
	if dt == tensor.Float32 {
		raw.proposals, rows = splitProposals[float32](props)
	} else {
		raw.proposals, rows = splitProposals[float64](props)
	}
	raw.classLogits = gatherRows(logits, rows, k)
	raw.boxRegression = gatherRows(reg, rows, 4*k)
	return il, raw, nil
}

// sizesValue is the image sizes' value [N, 2] (height, width) in dt, and
// the largest height and width.
func sizesValue(dt tensor.Dtype, sizes [][2]int) (*tensor.Dense, [2]int) {
	var largest [2]int
	flat := make([]float64, 0, 2*len(sizes))
	for _, s := range sizes {
		largest = [2]int{max(largest[0], s[0]), max(largest[1], s[1])}
		flat = append(flat, float64(s[0]), float64(s[1]))
	}
	if dt == tensor.Float32 {
		return newValue(convertValues[float32](flat), len(sizes), 2), largest
	}
	return newValue(flat, len(sizes), 2), largest
}

// splitProposals reads the proposals op's result [N, P, proposalCols]:
// each image's proposals, and the rows (of the N·P) that hold them.
func splitProposals[T floatType](props *tensor.Dense) ([]Proposals, []int) {
	s := props.Shape()
	n, p := s[0], s[1]
	data := valueData[T](props)
	out := make([]Proposals, n)
	var rows []int
	for i := 0; i < n; i++ {
		var boxes, scores []T
		for j := 0; j < p; j++ {
			r := data[(i*p+j)*proposalCols:][:proposalCols]
			if r[5] == 0 {
				break
			}
			boxes, scores = append(boxes, r[:4]...), append(scores, r[4])
			rows = append(rows, i*p+j)
		}
		out[i] = Proposals{Boxes: newValue(boxes, len(scores), 4), Scores: newValue(scores, len(scores))}
	}
	return out, rows
}

// gatherRows copies the rows of t [R, cols] into a new [len(rows), cols].
func gatherRows(t *tensor.Dense, rows []int, cols int) *tensor.Dense {
	if t.Dtype() == tensor.Float32 {
		return newValue(gatherOf(valueData[float32](t), rows, cols), len(rows), cols)
	}
	return newValue(gatherOf(valueData[float64](t), rows, cols), len(rows), cols)
}

func gatherOf[T floatType](data []T, rows []int, cols int) []T {
	out := make([]T, 0, len(rows)*cols)
	for _, r := range rows {
		out = append(out, data[r*cols:][:cols]...)
	}
	return out
}

// buildInference is the runner's build: the inference graph of the batch
// x, variant an rcnnVariant.
func (f *FasterRCNN) buildInference(x *gorgonia.Node, variant any) ([]*gorgonia.Node, any, error) {
	v := variant.(rcnnVariant)
	cfg := f.Config
	cfg.RPN = v.RPN
	w := f.weights
	features, _, err := cfg.Backbone.forwardFused(w, "backbone", x)
	if err != nil {
		return nil, nil, err
	}
	rpn, box, pred := cfg.parts()
	obj, deltas, err := rpn.forward(w, "rpn.head", features, true)
	if err != nil {
		return nil, nil, err
	}
	xs := x.Shape()
	n := xs[0]
	anchors, _, params, err := f.anchorsOf(x, features)
	if err != nil {
		return nil, nil, err
	}
	sizes := gorgonia.NewMatrix(x.Graph(), w.Dtype(), gorgonia.WithShape(n, 2), gorgonia.WithName("image_sizes"))
	props, err := proposalsNode(cfg.RPN, false, obj, deltas, sizes, anchors, params)
	if err != nil {
		return nil, nil, err
	}
	maps := features[:cfg.pooledMaps()]
	heights := cfg.pooledHeights(xs[2])
	for l, m := range maps {
		if m.Shape()[2] != heights[l] {
			return nil, nil, fmt.Errorf("internal: pooled map %d has height %d, pooledHeights %v", l, m.Shape()[2], heights)
		}
	}
	logits, reg, err := f.roiHeadsAt(w, maps, props, [2]int{xs[2], xs[3]}, v.Scales, box, pred, nil, true)
	if err != nil {
		return nil, nil, err
	}
	return []*gorgonia.Node{props, logits, reg}, rcnnMeta{sizes: sizes}, nil
}

// anchorsOf are the anchors of the batch x with FPN maps features: per
// level and all levels together, and a description of them for the
// proposals op's Params.
func (f *FasterRCNN) anchorsOf(x *gorgonia.Node, features []*gorgonia.Node) (levels []*tensor.Dense, all *tensor.Dense, params string, err error) {
	xs := x.Shape()
	grids := make([][2]int, len(features))
	for l, ft := range features {
		s := ft.Shape()
		grids[l] = [2]int{s[2], s[3]}
	}
	levels, all, err = f.Config.AnchorGenerator.Anchors(x.Dtype(), [2]int{xs[2], xs[3]}, grids)
	if err != nil {
		return nil, nil, "", err
	}
	return levels, all, fmt.Sprintf("%+v image %v grids %v", f.Config.AnchorGenerator, xs[2:], grids), nil
}

// transform is f's transform (Trainable).
func (f *FasterRCNN) transform() (GeneralizedRCNNTransform, bool) {
	if f == nil || f.weights == nil {
		return GeneralizedRCNNTransform{}, false
	}
	return f.Config.Transform, true
}
