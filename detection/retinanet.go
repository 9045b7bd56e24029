package detection

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RetinaNetConfig is the configuration of torchvision's RetinaNet
// (models/detection/retinanet.py) in eval mode; RetinaNetResNet50FPN and
// RetinaNetResNet50FPNV2 give retinanet_resnet50_fpn's and _v2's.
type RetinaNetConfig struct {
	// Backbone is the ResNet-FPN; its OutChannels (0: 256) are the head's
	// input channels.
	Backbone BackboneWithFPN
	// NumClasses is the number of classes (91 for COCO).
	NumClasses int
	// HeadNorm is the head towers' norm: HeadNormNone (v1) or
	// HeadNormGroupNorm (v2).
	HeadNorm HeadNorm
	// NumConvs is the depth of each head tower; 0 means torchvision's 4.
	NumConvs int
	// Transform resizes, normalises and batches the images.
	Transform GeneralizedRCNNTransform
	// AnchorGenerator is torchvision's _default_anchorgen() for
	// RetinaNet: three sizes and three aspect ratios per level.
	AnchorGenerator AnchorGenerator
	// Postprocess is score_thresh, nms_thresh, detections_per_img and
	// topk_candidates (RetinaNetPostprocessConfig: 0.05, 0.5, 300, 1000).
	Postprocess PostprocessConfig
	// BoxLossType is the box regression loss of Loss, torchvision's
	// regression_head._loss_type: "l1" (or "", v1's default) or "giou"
	// (retinanet_resnet50_fpn_v2's).
	BoxLossType string
}

// RetinaNetAnchorGenerator is torchvision's _default_anchorgen(): sizes
// (s, ⌊s·2^(1/3)⌋, ⌊s·2^(2/3)⌋) for s = 32, 64, 128, 256, 512 and aspect
// ratios 0.5, 1, 2 on every level.
func RetinaNetAnchorGenerator() AnchorGenerator {
	var g AnchorGenerator
	for _, s := range []float64{32, 64, 128, 256, 512} {
		g.Sizes = append(g.Sizes, []float64{s, math.Floor(s * math.Pow(2, 1.0/3)), math.Floor(s * math.Pow(2, 2.0/3))})
		g.AspectRatios = append(g.AspectRatios, []float64{0.5, 1, 2})
	}
	return g
}

// RetinaNetResNet50FPN is the configuration of torchvision's
// retinanet_resnet50_fpn(num_classes=numClasses) with its COCO_V1
// weights' structure: ResNet-50 with FrozenBatchNorm2d of eps 0 (the
// builder's overwrite_eps(model, 0.0) for those weights; the eps is not in
// the checkpoint), three trainable stages, layers 2–4 into a 256-channel
// FPN with P6 and P7 from P5, heads without norm, min_size 800, max_size
// 1333.
func RetinaNetResNet50FPN(numClasses int) RetinaNetConfig {
	body := ResNet50()
	body.Eps = 0
	return RetinaNetConfig{
		Backbone: BackboneWithFPN{Body: body, TrainableLayers: 3, ReturnedLayers: []int{2, 3, 4},
			OutChannels: 256, ExtraBlocks: LastLevelP6P7{InChannels: 256, OutChannels: 256}},
		NumClasses:      numClasses,
		HeadNorm:        HeadNormNone,
		Transform:       NewGeneralizedRCNNTransform(800, 1333),
		AnchorGenerator: RetinaNetAnchorGenerator(),
		Postprocess:     RetinaNetPostprocessConfig(),
	}
}

// RetinaNetResNet50FPNV2 is the configuration of torchvision's
// retinanet_resnet50_fpn_v2(num_classes=numClasses): ResNet-50 with
// BatchNorm2d (eps 1e-5), three trainable stages, P6 from C5
// (LastLevelP6P7(2048, 256)), GroupNorm(32) heads, the GIoU box loss.
func RetinaNetResNet50FPNV2(numClasses int) RetinaNetConfig {
	c := RetinaNetResNet50FPN(numClasses)
	c.Backbone.Body = ResNet50()
	c.Backbone.Body.NormLayer = BatchNorm2d
	c.Backbone.ExtraBlocks = LastLevelP6P7{InChannels: 2048, OutChannels: 256}
	c.HeadNorm = HeadNormGroupNorm
	c.BoxLossType = "giou"
	return c
}

// RetinaNet is torchvision's RetinaNet detector in eval mode (see FCOS for
// the methods' contracts; like FCOS, not safe for concurrent use).
type RetinaNet struct {
	Config RetinaNetConfig
	m      *oneStage
}

// head is the configuration's head.
func (c RetinaNetConfig) head() RetinaNetHead {
	a := 0
	if n := c.AnchorGenerator.NumAnchorsPerLocation(); len(n) > 0 {
		a = n[0]
	}
	return RetinaNetHead{InChannels: orDefault(c.Backbone.OutChannels, 256), NumAnchors: a,
		NumClasses: c.NumClasses, NumConvs: c.NumConvs, Norm: c.HeadNorm}
}

// NewRetinaNet returns a RetinaNet of cfg in dtype dt with weights drawn
// from rng as torchvision's constructors draw them (see NewFCOS).
//
// Errors: a bad configuration (named; an AnchorGenerator whose levels are
// not the backbone's maps or differ in anchors per location), dt not a
// float dtype, rng nil.
func NewRetinaNet(cfg RetinaNetConfig, dt tensor.Dtype, rng *rand.Rand) (*RetinaNet, error) {
	head := cfg.head()
	if err := checkLevels("RetinaNet", cfg.Backbone, cfg.AnchorGenerator, head.NumAnchors); err != nil {
		return nil, err
	}
	m := &oneStage{
		name: "RetinaNet", backbone: cfg.Backbone, transform: cfg.Transform, anchors: cfg.AnchorGenerator,
		head: func(w *Weights, f []*gorgonia.Node, train, fused bool) (*HeadOutputs, error) {
			if fused {
				return head.forward(w, "head", f, true)
			}
			return head.Forward(w, "head", f, train)
		},
		postprocess: func(outs [][]*tensor.Dense, anchors []*tensor.Dense, sizes [][2]int) ([]Detections, error) {
			return RetinaNetPostprocessDetections(cfg.Postprocess, NewBoxCoder([4]float64{1, 1, 1, 1}),
				outs[0], outs[1], anchors, sizes)
		},
		upgrades: []string{"head.classification_head.", "head.regression_head."},
	}
	if err := m.init(dt, rng, func(w *Weights, rng *rand.Rand) error { return head.Init(w, "head", rng) }); err != nil {
		return nil, err
	}
	return &RetinaNet{Config: cfg, m: m}, nil
}

// LoadRetinaNet returns a RetinaNet of cfg in dtype dt holding the
// weights of the torch.save checkpoint at path, as LoadFCOS; version-1
// head keys (checkpoints of torchvision before 0.13) are upgraded as
// torchvision's heads do.
func LoadRetinaNet(path string, cfg RetinaNetConfig, dt tensor.Dtype, opts LoadOptions) (*RetinaNet, IncompatibleKeys, error) {
	r, err := NewRetinaNet(cfg, dt, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, IncompatibleKeys{}, err
	}
	keys, err := r.m.load(path, opts)
	if err != nil {
		return nil, keys, err
	}
	return r, keys, nil
}

// stage is r's shared part, nil for a nil r.
func (r *RetinaNet) stage() *oneStage {
	if r == nil {
		return nil
	}
	return r.m
}

// Weights returns the model's tensors (see FCOS.Weights).
func (r *RetinaNet) Weights() *Weights { return r.stage().weightSet() }

// Forward runs the model on images (see FCOS.Forward).
func (r *RetinaNet) Forward(images []*tensor.Dense) ([]Detections, error) {
	return r.stage().forward(images)
}

// Build adds the backbone and head to x's graph (see FCOS.Build); the
// head outputs have no BboxCtrness.
func (r *RetinaNet) Build(x *gorgonia.Node, train bool) ([]*gorgonia.Node, *HeadOutputs, error) {
	return r.stage().build(x, train, false)
}

// Loss builds the model in training mode on x (the transformed batch
// [B, 3, H, W], as Build's; v2's BatchNorm2d with batch statistics) and
// torchvision's training losses on it (RetinaNet.compute_loss,
// torchvision 0.14): anchors matched to the ground truth by box IoU
// (Matcher 0.5, 0.4, low-quality matches kept); Classification: the
// sigmoid focal loss of the anchors not BetweenThresholds against one-hot
// targets; BboxRegression: the L1 loss of the foreground anchors' codes
// against BoxCoder(1, 1, 1, 1)'s codes of their boxes (BoxLossType "l1")
// or the GIoU loss of their decoded boxes ("giou"); each summed per image,
// divided by max(1, the image's foreground anchors), averaged over the
// images. The targets are values: Set the returned LossInputs to a batch's
// ground truth before each run; one graph serves every batch of x's
// shape.
//
// Errors: as Build's; a BoxLossType other than "", "l1" and "giou".
func (r *RetinaNet) Loss(x *gorgonia.Node) (*LossInputs, *Losses, error) {
	return r.loss(x, nil)
}

// LossAt is Loss with the trainable parameters of at in place of the
// weights' own nodes (see FCOS.LossAt).
//
// Errors: as Loss's and FCOS.LossAt's.
func (r *RetinaNet) LossAt(x *gorgonia.Node, at map[string]*gorgonia.Node) (*LossInputs, *Losses, error) {
	return r.loss(x, at)
}

// loss is Loss and LossAt.
func (r *RetinaNet) loss(x *gorgonia.Node, at map[string]*gorgonia.Node) (*LossInputs, *Losses, error) {
	kind := retinaNetL1
	switch t := r.boxLossType(); t {
	case "", "l1":
	case "giou":
		kind = retinaNetGIoU
	default:
		return nil, nil, fmt.Errorf("detection: RetinaNet.Loss: BoxLossType %q, want \"l1\" or \"giou\"", t)
	}
	return r.stage().loss(x, kind, at)
}

// boxLossType is the configuration's BoxLossType, "" for a nil r.
func (r *RetinaNet) boxLossType() string {
	if r == nil {
		return ""
	}
	return r.Config.BoxLossType
}

// Close releases Forward's machines.
func (r *RetinaNet) Close() error { return r.stage().close() }

// transform is r's transform (Trainable).
func (r *RetinaNet) transform() (GeneralizedRCNNTransform, bool) { return r.stage().transformOf() }
