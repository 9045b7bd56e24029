package detection

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Block is a ResNet's residual block, torchvision.models.resnet's
// BasicBlock or Bottleneck.
type Block int

const (
	// BasicBlock is two 3×3 convolutions (the first with the stage's
	// stride), each followed by the norm; expansion 1 (ResNet-18/34).
	BasicBlock Block = iota
	// Bottleneck is 1×1, 3×3 (with the stride, as ResNet v1.5, and the
	// groups) and 1×1 convolutions, each followed by the norm; expansion 4
	// (ResNet-50/101).
	Bottleneck
)

// expansion is the block's output channels per plane.
func (b Block) expansion() int {
	if b == Bottleneck {
		return 4
	}
	return 1
}

// String is torchvision's class name.
func (b Block) String() string {
	switch b {
	case BasicBlock:
		return "BasicBlock"
	case Bottleneck:
		return "Bottleneck"
	}
	return fmt.Sprintf("Block(%d)", int(b))
}

// NormLayer is a ResNet's normalisation layer, torchvision's norm_layer.
type NormLayer int

const (
	// FrozenBatchNorm2d is torchvision.ops.misc.FrozenBatchNorm2d
	// (nn.FrozenBatchNorm2d): fixed weight, bias, running_mean and
	// running_var, all four in Weights.Frozen; the default of
	// torchvision's resnet_fpn_backbone and of its v1 detectors.
	FrozenBatchNorm2d NormLayer = iota
	// BatchNorm2d is torch.nn.BatchNorm2d (nn.BatchNorm): weight and bias
	// parameters, running statistics in Weights.Frozen, batch statistics
	// in training (Forward's train) and the running ones in eval;
	// torchvision's v2 detectors.
	BatchNorm2d
)

// ResNet is torchvision.models.resnet.ResNet as a detection backbone: the
// stem (conv1 7×7 stride 2 padding 3 without bias, bn1, ReLU, max pooling
// 3×3 stride 2 padding 1) and the stages layer1.. (stride 1, then 2), each
// of Layers[i] blocks of Planes[i] planes, the first block with a
// downsample (1×1 convolution with the stride, then the norm) where the
// stride is not 1 or the channels change. No avgpool or fc. Input
// [N, 3, H, W]; stage i's output has Planes[i]·expansion channels and
// stride 4·2^i. replace_stride_with_dilation is not supported.
//
// State dict keys are torchvision's ("conv1.weight", "bn1.running_mean",
// "layer2.0.conv1.weight", "layer2.0.downsample.0.weight",
// "layer2.0.downsample.1.weight"), under the prefix that Init and Forward
// are given ("backbone.body" in a detector).
type ResNet struct {
	// Block is BasicBlock or Bottleneck.
	Block Block
	// Layers is the number of blocks of each stage, 1 to 4 stages, each
	// at least 1 (torchvision: [2,2,2,2] for ResNet-18).
	Layers []int
	// StemWidth is conv1's output channels (torchvision's initial
	// inplanes); 0 means 64.
	StemWidth int
	// Planes is each stage's planes; nil means torchvision's 64, 128, 256,
	// 512 (the first len(Layers)). Small values make tiny test models.
	Planes []int
	// Groups and WidthPerGroup are a Bottleneck's 3×3 convolution groups
	// and width per group (ResNeXt); 0 means torchvision's 1 and 64.
	// BasicBlock takes only 1 and 64 (torchvision's ValueError).
	Groups, WidthPerGroup int
	// NormLayer is FrozenBatchNorm2d (the zero value) or BatchNorm2d.
	NormLayer NormLayer
	// Eps is the norm's eps, used as given: torchvision's default 1e-5
	// (the ResNet18..ResNet101 constructors set it), but 0.0 for
	// torchvision's COCO_V1 Faster R-CNN and RetinaNet v1 weights (their
	// builders pass FrozenBatchNorm2d eps=0.0; the eps is not in a
	// checkpoint). BatchNorm2d needs Eps > 0 (nn.BatchNorm's Eps 0 means
	// 1e-5).
	Eps float64
}

// ResNet18 is torchvision's resnet18 as a backbone: BasicBlock, layers
// [2, 2, 2, 2], FrozenBatchNorm2d with eps 1e-5; stage channels 64, 128,
// 256, 512.
func ResNet18() ResNet { return ResNet{Block: BasicBlock, Layers: []int{2, 2, 2, 2}, Eps: 1e-5} }

// ResNet34 is torchvision's resnet34 as a backbone: BasicBlock, layers
// [3, 4, 6, 3], FrozenBatchNorm2d with eps 1e-5; stage channels 64, 128,
// 256, 512.
func ResNet34() ResNet { return ResNet{Block: BasicBlock, Layers: []int{3, 4, 6, 3}, Eps: 1e-5} }

// ResNet50 is torchvision's resnet50 as a backbone: Bottleneck, layers
// [3, 4, 6, 3], FrozenBatchNorm2d with eps 1e-5; stage channels 256, 512,
// 1024, 2048.
func ResNet50() ResNet { return ResNet{Block: Bottleneck, Layers: []int{3, 4, 6, 3}, Eps: 1e-5} }

// ResNet101 is torchvision's resnet101 as a backbone: Bottleneck, layers
// [3, 4, 23, 3], FrozenBatchNorm2d with eps 1e-5; stage channels 256,
// 512, 1024, 2048.
func ResNet101() ResNet { return ResNet{Block: Bottleneck, Layers: []int{3, 4, 23, 3}, Eps: 1e-5} }

// blockPlan is one residual block: its key (relative to the ResNet's
// prefix, "layer2.0"), input channels, Bottleneck width, output channels,
// stride, and whether it has a downsample.
type blockPlan struct {
	name                   string
	in, width, out, stride int
	downsample, bottleneck bool
	groups                 int
}

// resnetPlan is a checked ResNet: the stem width, its blocks by stage,
// and each stage's output channels.
type resnetPlan struct {
	r        ResNet
	stem     int
	stages   [][]blockPlan
	channels []int
	// fused builds the inference graph (train false): each convolution
	// with its norm (FrozenBatchNorm2d, or BatchNorm2d in eval mode),
	// residual sum and ReLU one fused op (fusedConv), bitwise the
	// separate ops, without a gradient.
	fused bool
}

// plan checks r and lays out its blocks as torchvision's _make_layer.
func (r ResNet) plan() (*resnetPlan, error) {
	const name = "detection: ResNet"
	if r.Block != BasicBlock && r.Block != Bottleneck {
		return nil, fmt.Errorf("%s: Block %v is not BasicBlock or Bottleneck", name, r.Block)
	}
	if r.NormLayer != FrozenBatchNorm2d && r.NormLayer != BatchNorm2d {
		return nil, fmt.Errorf("%s: NormLayer %d is not FrozenBatchNorm2d or BatchNorm2d", name, int(r.NormLayer))
	}
	if !(r.Eps >= 0) || math.IsInf(r.Eps, 0) || (r.NormLayer == BatchNorm2d && r.Eps == 0) {
		return nil, fmt.Errorf("%s: Eps %v must be finite and non-negative (positive with BatchNorm2d)", name, r.Eps)
	}
	if len(r.Layers) < 1 || len(r.Layers) > 4 {
		return nil, fmt.Errorf("%s: Layers %v must have 1 to 4 stages", name, r.Layers)
	}
	planes := r.Planes
	if planes == nil {
		planes = []int{64, 128, 256, 512}[:len(r.Layers)]
	}
	if len(planes) != len(r.Layers) {
		return nil, fmt.Errorf("%s: Planes %v must have one entry per stage of Layers %v", name, planes, r.Layers)
	}
	stem, groups, wpg := orDefault(r.StemWidth, 64), orDefault(r.Groups, 1), orDefault(r.WidthPerGroup, 64)
	if stem < 1 || groups < 1 || wpg < 1 {
		return nil, fmt.Errorf("%s: StemWidth %d, Groups %d and WidthPerGroup %d must be positive", name, r.StemWidth, r.Groups, r.WidthPerGroup)
	}
	if r.Block == BasicBlock && (groups != 1 || wpg != 64) {
		return nil, fmt.Errorf("%s: BasicBlock only supports Groups 1 and WidthPerGroup 64, got %d and %d", name, groups, wpg)
	}
	p := &resnetPlan{r: r, stem: stem}
	in := stem
	for i, n := range r.Layers {
		if n < 1 || planes[i] < 1 {
			return nil, fmt.Errorf("%s: stage %d: %d blocks of %d planes, both must be positive", name, i+1, n, planes[i])
		}
		out := planes[i] * r.Block.expansion()
		width := planes[i]
		if r.Block == Bottleneck {
			width = planes[i] * wpg / 64 * groups // int(planes·(base_width/64))·groups
			if width < groups {
				return nil, fmt.Errorf("%s: stage %d: Bottleneck width %d below Groups %d", name, i+1, width, groups)
			}
		}
		var stage []blockPlan
		for j := range n {
			b := blockPlan{name: fmt.Sprintf("layer%d.%d", i+1, j), in: in, width: width, out: out, stride: 1,
				bottleneck: r.Block == Bottleneck, groups: groups}
			if j == 0 && i > 0 {
				b.stride = 2
			}
			b.downsample = j == 0 && (b.stride != 1 || in != out)
			stage = append(stage, b)
			in = out
		}
		p.stages = append(p.stages, stage)
		p.channels = append(p.channels, out)
	}
	return p, nil
}

// orDefault is v, or def where v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// StageChannels returns each stage's output channels (Planes[i] times
// the block's expansion). Errors: r is not a valid configuration.
func (r ResNet) StageChannels() ([]int, error) {
	p, err := r.plan()
	if err != nil {
		return nil, err
	}
	return p.channels, nil
}

// Init adds the ResNet's tensors under prefix (torchvision's keys, every
// parameter trainable, as torchvision's plain resnet), initialised as
// torchvision's ResNet.__init__: convolutions kaiming_normal_ (mode
// fan_out, relu: N(0, 2/fan_out)); norms weight 1, bias 0,
// running_mean 0, running_var 1 (zero_init_residual false).
//
// Errors: r is not a valid configuration; a key is already in w.
func (r ResNet) Init(w *Weights, prefix string, rng *rand.Rand) error {
	p, err := r.plan()
	if err != nil {
		return err
	}
	return p.init(w, prefix, rng, len(p.stages), func(string) bool { return true })
}

// Forward builds the ResNet on x [N, 3, H, W] (the weights' dtype) in
// x's graph and returns each stage's output, layer1 first:
// [N, StageChannels[i], H_i, W_i] with H_1 = ⌈⌈H/2⌉/2⌉ and then halved
// rounding up (a 1×1 map stays 1×1). train selects BatchNorm2d's batch
// statistics (each run then updates the running ones in the weights);
// FrozenBatchNorm2d ignores it.
//
// Errors: r is not a valid configuration; x nil, not [N ≥ 1, 3, H ≥ 1,
// W ≥ 1] or not of the weights' dtype; a tensor missing from w or of the
// wrong shape (named by its key).
func (r ResNet) Forward(w *Weights, prefix string, x *gorgonia.Node, train bool) ([]*gorgonia.Node, error) {
	p, err := r.plan()
	if err != nil {
		return nil, err
	}
	return p.forward(w, prefix, x, train, len(p.stages))
}

// init adds the stem and the first stages stages' tensors; trainable says
// which parameters (by key relative to prefix) go to w.Params.
func (p *resnetPlan) init(w *Weights, prefix string, rng *rand.Rand, stages int, trainable func(string) bool) error {
	if w == nil {
		return fmt.Errorf("detection: ResNet.Init: the weights are nil")
	}
	if err := addKaimingNormal(w, key(prefix, "conv1.weight"), trainable("conv1.weight"), rng, p.stem, 3, 7, 7); err != nil {
		return err
	}
	if err := p.initNorm(w, prefix, "bn1", p.stem, trainable); err != nil {
		return err
	}
	for _, stage := range p.stages[:stages] {
		for _, b := range stage {
			for _, c := range b.convs() {
				k := b.name + "." + c.name + ".weight"
				if err := addKaimingNormal(w, key(prefix, k), trainable(k), rng, c.out, c.in/c.groups, c.k, c.k); err != nil {
					return err
				}
				if err := p.initNorm(w, prefix, b.name+"."+c.norm, c.out, trainable); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// blockConv is one convolution of a block and its norm: keys (relative to
// the block), channels, kernel size, stride, padding and groups.
type blockConv struct {
	name, norm                      string
	in, out, k, stride, pad, groups int
}

// convs are the block's convolutions in torchvision's module order, the
// downsample last.
func (b blockPlan) convs() []blockConv {
	var cs []blockConv
	if b.bottleneck {
		cs = []blockConv{
			{"conv1", "bn1", b.in, b.width, 1, 1, 0, 1},
			{"conv2", "bn2", b.width, b.width, 3, b.stride, 1, b.groups},
			{"conv3", "bn3", b.width, b.out, 1, 1, 0, 1},
		}
	} else {
		cs = []blockConv{
			{"conv1", "bn1", b.in, b.out, 3, b.stride, 1, 1},
			{"conv2", "bn2", b.out, b.out, 3, 1, 1, 1},
		}
	}
	if b.downsample {
		cs = append(cs, blockConv{"downsample.0", "downsample.1", b.in, b.out, 1, b.stride, 0, 1})
	}
	return cs
}

// initNorm adds the norm called name (relative to prefix) of c channels:
// FrozenBatchNorm2d's four buffers (weight 1, bias 0, running_mean 0,
// running_var 1) to w.Frozen, or BatchNorm2d's weight 1 and bias 0 (as
// trainable says) and its statistics (0 and 1, in w.Frozen).
func (p *resnetPlan) initNorm(w *Weights, prefix, name string, c int, trainable func(string) bool) error {
	return addBatchNorm2d(w, key(prefix, name), c, p.r.NormLayer == BatchNorm2d && trainable(name+".weight"))
}

// addKaimingNormal adds a conv weight [out, in, kh, kw] under k drawn as
// torchvision's ResNet: kaiming_normal_(mode="fan_out",
// nonlinearity="relu").
func addKaimingNormal(w *Weights, k string, trainable bool, rng *rand.Rand, shape ...int) error {
	v, err := w.Add(k, trainable, shape...)
	if err != nil {
		return err
	}
	if err := nn.KaimingNormal(v, 0, "fan_out", "relu", rng); err != nil {
		return fmt.Errorf("detection: %s: %w", k, err)
	}
	return nil
}

// forward builds the stem and the first stages stages.
func (p *resnetPlan) forward(w *Weights, prefix string, x *gorgonia.Node, train bool, stages int) ([]*gorgonia.Node, error) {
	if err := checkImages("ResNet.Forward", w, x, 3); err != nil {
		return nil, err
	}
	stem := nn.Conv2dOpts{Stride: [2]int{2, 2}, Padding: [2]int{3, 3}}
	var y *gorgonia.Node
	var err error
	if p.fused {
		if y, err = p.fusedConvNorm(w, prefix, "conv1", "bn1", stem, x, nil, true); err != nil {
			return nil, err
		}
	} else {
		if y, err = conv2d(w, prefix, "conv1", x, stem, false); err != nil {
			return nil, err
		}
		if y, err = p.norm(w, prefix, "bn1", y, train); err != nil {
			return nil, err
		}
		if y, err = nn.ReLU(y); err != nil {
			return nil, err
		}
	}
	if y, err = nn.MaxPool2d(y, nn.MaxPool2dOpts{KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}); err != nil {
		return nil, err
	}
	var outs []*gorgonia.Node
	for _, stage := range p.stages[:stages] {
		for _, b := range stage {
			if y, err = p.block(w, prefix, b, y, train); err != nil {
				return nil, fmt.Errorf("detection: ResNet: %s: %w", b.name, err)
			}
		}
		outs = append(outs, y)
	}
	return outs, nil
}

// block is one residual block on x: its convolutions, each followed by
// its norm and (but the last) a ReLU, plus the identity or the
// downsample, then a ReLU.
func (p *resnetPlan) block(w *Weights, prefix string, b blockPlan, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	convs := b.convs()
	main := convs
	if b.downsample {
		main = convs[:len(convs)-1]
	}
	if p.fused {
		return p.fusedBlock(w, prefix, b, convs, main, x)
	}
	y := x
	for i, c := range main {
		var err error
		if y, err = p.convNorm(w, prefix, b.name, c, y, train); err != nil {
			return nil, err
		}
		if i < len(main)-1 {
			if y, err = nn.ReLU(y); err != nil {
				return nil, err
			}
		}
	}
	identity := x
	if b.downsample {
		var err error
		if identity, err = p.convNorm(w, prefix, b.name, convs[len(convs)-1], x, train); err != nil {
			return nil, err
		}
	}
	sum, err := gorgonia.Add(y, identity)
	if err != nil {
		return nil, err
	}
	return nn.ReLU(sum)
}

// convNorm is the block's convolution c (no bias) on x, then its norm.
func (p *resnetPlan) convNorm(w *Weights, prefix, block string, c blockConv, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	opts := nn.Conv2dOpts{Stride: [2]int{c.stride, c.stride}, Padding: [2]int{c.pad, c.pad}, Groups: c.groups}
	y, err := conv2d(w, prefix, block+"."+c.name, x, opts, false)
	if err != nil {
		return nil, err
	}
	return p.norm(w, prefix, block+"."+c.norm, y, train)
}

// fusedBlock is block in the inference graph: the downsample (conv and
// norm), then each main convolution with its norm and ReLU, the last with
// the sum with the identity before its ReLU, each one fusedConv.
func (p *resnetPlan) fusedBlock(w *Weights, prefix string, b blockPlan, convs, main []blockConv, x *gorgonia.Node) (*gorgonia.Node, error) {
	identity := x
	if b.downsample {
		var err error
		if identity, err = p.fusedBlockConv(w, prefix, b.name, convs[len(convs)-1], x, nil); err != nil {
			return nil, err
		}
	}
	y := x
	for i, c := range main {
		var residual *gorgonia.Node
		if i == len(main)-1 {
			residual = identity
		}
		var err error
		if y, err = p.fusedBlockConv(w, prefix, b.name, c, y, residual); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// fusedBlockConv is the block's convolution c on x with its norm, then
// + residual and ReLU (the downsample: neither; another convolution:
// ReLU, after + residual if not nil).
func (p *resnetPlan) fusedBlockConv(w *Weights, prefix, block string, c blockConv, x, residual *gorgonia.Node) (*gorgonia.Node, error) {
	opts := nn.Conv2dOpts{Stride: [2]int{c.stride, c.stride}, Padding: [2]int{c.pad, c.pad}, Groups: c.groups}
	return p.fusedConvNorm(w, prefix, block+"."+c.name, block+"."+c.norm, opts, x, residual, c.name != "downsample.0")
}

// fusedConvNorm is the convolution conv (no bias) on x, its norm
// (FrozenBatchNorm2d, or BatchNorm2d in eval mode), + residual if not nil and ReLU if relu, as one
// fusedConv.
func (p *resnetPlan) fusedConvNorm(w *Weights, prefix, conv, norm string, opts nn.Conv2dOpts, x, residual *gorgonia.Node, relu bool) (*gorgonia.Node, error) {
	wt, err := w.Node(x.Graph(), key(prefix, conv+".weight"))
	if err != nil {
		return nil, err
	}
	affine := frozenAffine
	if p.r.NormLayer == BatchNorm2d {
		affine = batchNormEvalAffine
	}
	scale, shift, err := affine(w, key(prefix, norm), p.r.Eps, x.Graph())
	if err != nil {
		return nil, err
	}
	y, err := fusedConv(x, wt, nil, opts, scale, shift, residual, relu)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", key(prefix, conv), err)
	}
	return y, nil
}

// norm is the norm layer called name (relative to prefix) on x.
func (p *resnetPlan) norm(w *Weights, prefix, name string, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	if p.r.NormLayer == BatchNorm2d {
		return batchNormEps(w, key(prefix, name), x, train, nil, p.r.Eps)
	}
	g := x.Graph()
	var ns [4]*gorgonia.Node
	for i, s := range []string{"weight", "bias", "running_mean", "running_var"} {
		var err error
		if ns[i], err = w.Node(g, key(prefix, name+"."+s)); err != nil {
			return nil, err
		}
	}
	y, err := nn.FrozenBatchNorm2d(x, ns[0], ns[1], ns[2], ns[3], p.r.Eps)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", key(prefix, name), err)
	}
	return y, nil
}

// bnEps is torch.nn.BatchNorm2d's default eps, the FPN's and the box
// head's.
const bnEps = 1e-5

// batchNorm2d is the torch.nn.BatchNorm2d (eps 1e-5, momentum 0.1) called
// k on x: its weight and bias nodes and its running statistics' values in
// w; in training (train) with the batch's statistics, over the samples
// whose mask entry is 1 if mask is not nil (nn.BatchNormOpts.Mask).
func batchNorm2d(w *Weights, k string, x *gorgonia.Node, train bool, mask *gorgonia.Node) (*gorgonia.Node, error) {
	return batchNormEps(w, k, x, train, mask, bnEps)
}

// batchNormEps is batchNorm2d with eps.
func batchNormEps(w *Weights, k string, x *gorgonia.Node, train bool, mask *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	g := x.Graph()
	var ns [2]*gorgonia.Node
	var stats [2]*tensor.Dense
	for i, s := range []string{"weight", "bias"} {
		var err error
		if ns[i], err = w.Node(g, key(k, s)); err != nil {
			return nil, err
		}
	}
	for i, s := range []string{"running_mean", "running_var"} {
		var err error
		if stats[i], err = w.Value(key(k, s)); err != nil {
			return nil, err
		}
	}
	opts := nn.BatchNormOpts{Training: train, Eps: eps}
	if train {
		opts.Mask = mask
	}
	y, err := nn.BatchNorm(x, ns[0], ns[1], stats[0], stats[1], opts)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", k, err)
	}
	return y, nil
}

// addBatchNorm2d adds the torch.nn.BatchNorm2d of c channels called k:
// weight 1 and bias 0 (trainable if trainable), running_mean 0 and
// running_var 1 (in w.Frozen).
func addBatchNorm2d(w *Weights, k string, c int, trainable bool) error {
	for _, t := range []struct {
		suffix string
		value  float64
		param  bool
	}{{"weight", 1, true}, {"bias", 0, true}, {"running_mean", 0, false}, {"running_var", 1, false}} {
		v, err := w.Add(key(k, t.suffix), t.param && trainable, c)
		if err != nil {
			return err
		}
		if err := nn.Constant(v, t.value); err != nil {
			return err
		}
	}
	return nil
}

// conv2d is the convolution called name (relative to prefix: its
// name.weight and, with bias, name.bias) on x.
func conv2d(w *Weights, prefix, name string, x *gorgonia.Node, opts nn.Conv2dOpts, bias bool) (*gorgonia.Node, error) {
	g := x.Graph()
	wt, err := w.Node(g, key(prefix, name+".weight"))
	if err != nil {
		return nil, err
	}
	var b *gorgonia.Node
	if bias {
		if b, err = w.Node(g, key(prefix, name+".bias")); err != nil {
			return nil, err
		}
	}
	y, err := nn.Conv2d(x, wt, b, opts)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", key(prefix, name), err)
	}
	return y, nil
}

// checkImages is an error unless x is a [N ≥ 1, c, H ≥ 1, W ≥ 1] node of
// w's dtype (c < 0: any channels).
func checkImages(fn string, w *Weights, x *gorgonia.Node, c int) error {
	if w == nil {
		return fmt.Errorf("detection: %s: the weights are nil", fn)
	}
	if x == nil {
		return fmt.Errorf("detection: %s: input is nil", fn)
	}
	s := x.Shape()
	if x.IsScalar() || s.Dims() != 4 || s[0] < 1 || (c >= 0 && s[1] != c) || s[2] < 1 || s[3] < 1 {
		want := "C"
		if c >= 0 {
			want = fmt.Sprint(c)
		}
		return fmt.Errorf("detection: %s: input must be [N ≥ 1, %s, H ≥ 1, W ≥ 1], got %v", fn, want, s)
	}
	if x.Dtype() != w.Dtype() {
		return fmt.Errorf("detection: %s: input dtype %v, want the weights' %v", fn, x.Dtype(), w.Dtype())
	}
	return nil
}
