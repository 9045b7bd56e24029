package detection

import (
	"fmt"
	"math/rand/v2"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FCOSConfig is the configuration of torchvision's FCOS
// (models/detection/fcos.py) in eval mode; FCOSResNet50FPN gives
// fcos_resnet50_fpn's.
type FCOSConfig struct {
	// Backbone is the ResNet-FPN; its OutChannels (0: 256) are the head's
	// input channels.
	Backbone BackboneWithFPN
	// NumClasses is the number of classes (91 for COCO), background
	// included as torchvision counts them.
	NumClasses int
	// NumConvs is the depth of each head tower; 0 means torchvision's 4.
	NumConvs int
	// Transform resizes, normalises and batches the images.
	Transform GeneralizedRCNNTransform
	// AnchorGenerator gives one anchor per location and level (FCOS's
	// anchors are points with a size: sizes 8, 16, 32, 64, 128).
	AnchorGenerator AnchorGenerator
	// Postprocess is score_thresh, nms_thresh, detections_per_img and
	// topk_candidates (FCOSPostprocessConfig: 0.2, 0.6, 100, 1000).
	Postprocess PostprocessConfig
}

// FCOSResNet50FPN is the configuration of torchvision's
// fcos_resnet50_fpn(num_classes=numClasses) with its COCO weights'
// structure: ResNet-50 with FrozenBatchNorm2d (eps 1e-5), three trainable
// stages, layers 2–4 into a 256-channel FPN with P6 and P7 from P5,
// min_size 800, max_size 1333. Swap Backbone.Body for ResNet18() etc. for
// other depths (torchvision builds those only by hand).
func FCOSResNet50FPN(numClasses int) FCOSConfig {
	return FCOSConfig{
		Backbone: BackboneWithFPN{Body: ResNet50(), TrainableLayers: 3, ReturnedLayers: []int{2, 3, 4},
			OutChannels: 256, ExtraBlocks: LastLevelP6P7{InChannels: 256, OutChannels: 256}},
		NumClasses: numClasses,
		Transform:  NewGeneralizedRCNNTransform(800, 1333),
		AnchorGenerator: AnchorGenerator{
			Sizes:        [][]float64{{8}, {16}, {32}, {64}, {128}},
			AspectRatios: [][]float64{{1}, {1}, {1}, {1}, {1}},
		},
		Postprocess: FCOSPostprocessConfig(),
	}
}

// FCOS is torchvision's FCOS detector in eval mode: Forward takes images
// and returns torchvision's detections; Build puts the backbone and head
// into any graph (for losses and higher-order derivatives); Weights holds
// every tensor by torchvision's state_dict key.
type FCOS struct {
	Config FCOSConfig
	m      *oneStage
}

// fcosHead is the configuration's head.
func (c FCOSConfig) head() FCOSHead {
	return FCOSHead{InChannels: orDefault(c.Backbone.OutChannels, 256), NumAnchors: 1,
		NumClasses: c.NumClasses, NumConvs: c.NumConvs}
}

// NewFCOS returns an FCOS of cfg in dtype dt (float32 or float64) with
// weights drawn from rng as torchvision's constructors draw them (ResNet
// convolutions kaiming_normal_ fan_out, FPN kaiming_uniform_ a=1, heads
// normal std 0.01 and the classification prior −log(99); norms weight 1
// bias 0), equal in distribution, not in values (torch's generator is not
// reproduced). Load a checkpoint into it with LoadFCOS or
// Weights.LoadStateDict.
//
// Errors: a bad configuration (named; an AnchorGenerator whose levels are
// not the backbone's maps, len(ReturnedLayers) plus 2 for LastLevelP6P7
// or 1 for LastLevelMaxPool, or with more than one anchor per location),
// dt not a float dtype, rng nil.
func NewFCOS(cfg FCOSConfig, dt tensor.Dtype, rng *rand.Rand) (*FCOS, error) {
	head := cfg.head()
	if err := checkLevels("FCOS", cfg.Backbone, cfg.AnchorGenerator, 1); err != nil {
		return nil, err
	}
	m := &oneStage{
		name: "FCOS", backbone: cfg.Backbone, transform: cfg.Transform, anchors: cfg.AnchorGenerator,
		head: func(w *Weights, f []*gorgonia.Node, train, fused bool) (*HeadOutputs, error) {
			if fused {
				return head.forward(w, "head", f, true)
			}
			return head.Forward(w, "head", f, train)
		},
		postprocess: func(outs [][]*tensor.Dense, anchors []*tensor.Dense, sizes [][2]int) ([]Detections, error) {
			return FCOSPostprocessDetections(cfg.Postprocess, BoxLinearCoder{NormalizeBySize: true},
				outs[0], outs[1], outs[2], anchors, sizes)
		},
	}
	if err := m.init(dt, rng, func(w *Weights, rng *rand.Rand) error { return head.Init(w, "head", rng) }); err != nil {
		return nil, err
	}
	return &FCOS{Config: cfg, m: m}, nil
}

// LoadFCOS returns an FCOS of cfg in dtype dt holding the weights of the
// torch.save checkpoint at path (a state dict: torchvision's published
// file, or torch.save(model.state_dict()) of a model of the same
// structure), loaded by Weights.LoadStateDict with opts (strict unless
// opts.NonStrict; float32 weights into a float64 model need
// opts.ConvertDtype). It returns the keys a non-strict load skipped.
//
// Errors: as NewFCOS's, LoadCheckpoint's and LoadStateDict's (every
// missing, unexpected or mismatched key named in one error).
func LoadFCOS(path string, cfg FCOSConfig, dt tensor.Dtype, opts LoadOptions) (*FCOS, IncompatibleKeys, error) {
	f, err := NewFCOS(cfg, dt, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, IncompatibleKeys{}, err
	}
	keys, err := f.m.load(path, opts)
	if err != nil {
		return nil, keys, err
	}
	return f, keys, nil
}

// stage is f's shared part, nil for a nil f.
func (f *FCOS) stage() *oneStage {
	if f == nil {
		return nil
	}
	return f.m
}

// Weights returns the model's tensors (the model's own: an optimizer's
// in-place step or a load changes the model); nil for a nil model.
func (f *FCOS) Weights() *Weights { return f.stage().weightSet() }

// Forward runs the model on images ([3, H_i, W_i] each, any sizes, the
// model's dtype, pixel values in [0, 1]) and returns torchvision's eval
// output per image: boxes in the image's own pixels, scores, labels.
//
// Forward builds a graph and machine per padded batch shape on its first
// use and keeps those of the 4 most recently used shapes (each holds the
// model's intermediate buffers), so batches of a few shapes run without
// rebuilding. An FCOS is not safe for concurrent use: calls of Forward,
// Close, or anything that writes Weights must not overlap; use one model
// per goroutine.
//
// Errors: no images, an image of another rank, channel count or dtype, a
// zero side, NaN or infinite pixels (each named); a resized image over
// MaxResizedElements; the model closed (Close); a graph error.
func (f *FCOS) Forward(images []*tensor.Dense) ([]Detections, error) {
	return f.stage().forward(images)
}

// Build adds the backbone and head to x's graph: x is the transformed,
// padded batch [N, 3, H, W] (GeneralizedRCNNTransform.Transform's
// Tensors) of the model's dtype; it returns the FPN levels (finest first)
// and the head outputs per level. train builds batch norm in training
// mode where the backbone has BatchNorm2d.
func (f *FCOS) Build(x *gorgonia.Node, train bool) ([]*gorgonia.Node, *HeadOutputs, error) {
	return f.stage().build(x, train, false)
}

// Loss builds the model in training mode on x (the transformed batch
// [B, 3, H, W], as Build's) and torchvision's training losses on it
// (FCOS.compute_loss and FCOSHead.compute_loss, torchvision 0.14): an
// anchor takes the ground-truth box of least area among those whose
// centre is within FCOSCenterSamplingRadius anchor sizes of its own,
// that contain it, and whose largest distance to the anchor lies in the
// level's range (4, 8 anchor sizes; the first level from 0, the last to
// ∞); Classification: the sigmoid focal loss of every anchor against
// one-hot targets; BboxRegression: the GIoU loss of the foreground
// anchors' decoded boxes (BoxLinearCoder, normalised by size);
// BboxCtrness: the binary cross entropy with logits of their centre-ness
// against √(min(l, r)/max(l, r)·min(t, b)/max(t, b)) of their boxes; each
// summed over the batch and divided by max(1, the batch's foreground
// anchors). Set the returned LossInputs to a batch's ground truth before
// each run; one graph serves every batch of x's shape.
//
// Errors: as Build's.
func (f *FCOS) Loss(x *gorgonia.Node) (*LossInputs, *Losses, error) {
	return f.stage().loss(x, fcosLoss, nil)
}

// LossAt is Loss with the trainable parameters of at (by state_dict key)
// in place of the weights' own nodes: the model at other parameter values
// computed in the graph, such as MAML's adapted θ − α·∇L_s(θ) (package
// meta; NewMAMLTask builds it on a detector), as torch's
// functional_call(model, at, (images, targets)). Keys not in at take the
// weights' own nodes (Params.Node), the frozen tensors always do; each
// node has its parameter's shape and dtype and lives in x's graph.
//
// Errors: as Loss's; a key of at that is not in Weights().Params; a nil
// node or one of another shape or dtype than its parameter; a node of
// another graph.
func (f *FCOS) LossAt(x *gorgonia.Node, at map[string]*gorgonia.Node) (*LossInputs, *Losses, error) {
	return f.stage().loss(x, fcosLoss, at)
}

// Close releases Forward's machines; Forward fails after it.
func (f *FCOS) Close() error { return f.stage().close() }

// checkLevels checks a detector's anchor generator against its backbone's
// levels and its head's anchors per location (see
// AnchorGenerator.checkModel); a bad backbone is left to its Init.
func checkLevels(model string, b BackboneWithFPN, g AnchorGenerator, perLocation int) error {
	levels, err := b.numLevels()
	if err != nil {
		return nil
	}
	if err := g.checkModel(model, levels, perLocation); err != nil {
		return fmt.Errorf("detection: New%s: %w", model, err)
	}
	return nil
}

// transform is f's transform (Trainable).
func (f *FCOS) transform() (GeneralizedRCNNTransform, bool) { return f.stage().transformOf() }
