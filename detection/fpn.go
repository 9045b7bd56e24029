package detection

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
)

// FeaturePyramidNetwork is torchvision.ops.FeaturePyramidNetwork (0.14),
// without a norm layer or with BatchNorm2d: for each input map i, an inner
// 1×1 convolution (InChannelsList[i] → OutChannels; key
// "inner_blocks.i.0.weight", torchvision's Conv2dNormActivation layout)
// and a layer 3×3 convolution (padding 1; "layer_blocks.i.0"), each with
// a bias, or without one and followed by its BatchNorm2d
// ("inner_blocks.i.1", "layer_blocks.i.1"); top-down, last_inner =
// inner(x_i) + nearest(last_inner, to x_i's lateral size), result_i =
// layer(last_inner); then the extra blocks.
type FeaturePyramidNetwork struct {
	// InChannelsList is each input map's channels, finest first; every
	// entry positive.
	InChannelsList []int
	// OutChannels is every output map's channels; 0 means 256.
	OutChannels int
	// ExtraBlocks adds maps after the last: LastLevelMaxPool,
	// LastLevelP6P7, or nil for none (torchvision's FPN default; its
	// BackboneWithFPN's default is LastLevelMaxPool).
	ExtraBlocks ExtraFPNBlock
	// BatchNorm puts a torch.nn.BatchNorm2d (eps 1e-5, momentum 0.1)
	// after each convolution, which then has no bias: torchvision's
	// norm_layer=nn.BatchNorm2d (fasterrcnn_resnet50_fpn_v2). false: no
	// norm layer (norm_layer=None).
	BatchNorm bool
}

// ExtraFPNBlock is torchvision's ExtraFPNBlock: maps a
// FeaturePyramidNetwork appends after its last output, with their names.
// Its implementations are LastLevelMaxPool and LastLevelP6P7.
type ExtraFPNBlock interface {
	// initExtra adds the block's tensors under prefix
	// ("….fpn.extra_blocks").
	initExtra(w *Weights, prefix string, outChannels int, rng *rand.Rand) error
	// forwardExtra appends the block's maps to results (the FPN's
	// outputs) from them or the FPN's inputs x, and their names to
	// names.
	forwardExtra(w *Weights, prefix string, results, x []*gorgonia.Node, names []string) ([]*gorgonia.Node, []string, error)
	// extraMaps is the number of maps the block appends.
	extraMaps() int
}

// LastLevelMaxPool is torchvision's LastLevelMaxPool: one more map, "pool",
// max_pool2d(kernel 1, stride 2) of the last FPN output; no tensors.
type LastLevelMaxPool struct{}

func (LastLevelMaxPool) extraMaps() int { return 1 }

func (LastLevelMaxPool) initExtra(*Weights, string, int, *rand.Rand) error { return nil }

func (LastLevelMaxPool) forwardExtra(_ *Weights, _ string, results, _ []*gorgonia.Node, names []string) ([]*gorgonia.Node, []string, error) {
	p, err := nn.MaxPool2d(results[len(results)-1], nn.MaxPool2dOpts{KernelSize: [2]int{1, 1}, Stride: [2]int{2, 2}})
	if err != nil {
		return nil, nil, fmt.Errorf("detection: LastLevelMaxPool: %w", err)
	}
	return append(results, p), append(names, "pool"), nil
}

// LastLevelP6P7 is torchvision's LastLevelP6P7(in_channels, out_channels)
// (RetinaNet, FCOS): p6 = conv 3×3 stride 2 padding 1 (InChannels →
// OutChannels, bias) of P5, the last FPN output, when InChannels equals
// OutChannels (use_P5: RetinaNet v1, FCOS), else of C5, the last FPN
// input (RetinaNet v2: LastLevelP6P7(2048, 256)); p7 = the same conv
// (OutChannels → OutChannels) of relu(p6). Names "p6" and "p7"; keys
// "p6.weight", "p6.bias", "p7.weight", "p7.bias" under
// "fpn.extra_blocks". OutChannels must equal the FPN's.
type LastLevelP6P7 struct {
	InChannels, OutChannels int
}

func (LastLevelP6P7) extraMaps() int { return 2 }

func (e LastLevelP6P7) initExtra(w *Weights, prefix string, outChannels int, rng *rand.Rand) error {
	if e.InChannels < 1 || e.OutChannels != outChannels {
		return fmt.Errorf("detection: LastLevelP6P7: InChannels %d must be positive and OutChannels %d the FPN's %d", e.InChannels, e.OutChannels, outChannels)
	}
	if err := addFPNConv(w, key(prefix, "p6"), e.OutChannels, e.InChannels, 3, rng); err != nil {
		return err
	}
	return addFPNConv(w, key(prefix, "p7"), e.OutChannels, e.OutChannels, 3, rng)
}

func (e LastLevelP6P7) forwardExtra(w *Weights, prefix string, results, x []*gorgonia.Node, names []string) ([]*gorgonia.Node, []string, error) {
	src := x[len(x)-1]
	if e.InChannels == e.OutChannels {
		src = results[len(results)-1]
	}
	if c := src.Shape()[1]; c != e.InChannels {
		return nil, nil, fmt.Errorf("detection: LastLevelP6P7: its input has %d channels, InChannels is %d", c, e.InChannels)
	}
	opts := nn.Conv2dOpts{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}
	p6, err := conv2d(w, prefix, "p6", src, opts, true)
	if err != nil {
		return nil, nil, err
	}
	r, err := nn.ReLU(p6)
	if err != nil {
		return nil, nil, err
	}
	p7, err := conv2d(w, prefix, "p7", r, opts, true)
	if err != nil {
		return nil, nil, err
	}
	return append(results, p6, p7), append(names, "p6", "p7"), nil
}

// addFPNConv adds a conv's weight [out, in, k, k] and bias [out] under
// k.weight and k.bias, trainable, initialised as torchvision's FPN and
// LastLevelP6P7: kaiming_uniform_(a=1) (U(−√(3/fan_in), √(3/fan_in))),
// bias 0.
func addFPNConv(w *Weights, k string, out, in, size int, rng *rand.Rand) error {
	v, err := w.Add(k+".weight", true, out, in, size, size)
	if err != nil {
		return err
	}
	if err := nn.KaimingUniform(v, 1, "fan_in", "leaky_relu", rng); err != nil {
		return fmt.Errorf("detection: %s.weight: %w", k, err)
	}
	_, err = w.Add(k+".bias", true, out)
	return err
}

// check validates f and returns its output channels.
func (f FeaturePyramidNetwork) check() (int, error) {
	if len(f.InChannelsList) == 0 {
		return 0, fmt.Errorf("detection: FeaturePyramidNetwork: InChannelsList is empty")
	}
	for i, c := range f.InChannelsList {
		if c < 1 {
			return 0, fmt.Errorf("detection: FeaturePyramidNetwork: InChannelsList[%d] = %d must be positive", i, c)
		}
	}
	out := orDefault(f.OutChannels, 256)
	if out < 1 {
		return 0, fmt.Errorf("detection: FeaturePyramidNetwork: OutChannels %d must be positive", f.OutChannels)
	}
	return out, nil
}

// Init adds the FPN's tensors under prefix ("backbone.fpn" in a
// detector): inner_blocks.i.0 and layer_blocks.i.0 weights and biases
// (with BatchNorm: weights, and the norms' weight 1 and bias 0, trainable,
// running_mean 0 and running_var 1 under inner_blocks.i.1 and
// layer_blocks.i.1), then the extra blocks' under extra_blocks, all
// trainable, initialised as torchvision's: kaiming_uniform_(a=1), bias 0.
//
// Errors: an empty InChannelsList, a channel count below 1,
// LastLevelP6P7's OutChannels not the FPN's; a key already in w.
func (f FeaturePyramidNetwork) Init(w *Weights, prefix string, rng *rand.Rand) error {
	out, err := f.check()
	if err != nil {
		return err
	}
	for i, c := range f.InChannelsList {
		for _, b := range []struct {
			block    string
			in, size int
		}{{"inner_blocks", c, 1}, {"layer_blocks", out, 3}} {
			k := key(prefix, fmt.Sprintf("%s.%d", b.block, i))
			if !f.BatchNorm {
				if err := addFPNConv(w, k+".0", out, b.in, b.size, rng); err != nil {
					return err
				}
				continue
			}
			v, err := w.Add(k+".0.weight", true, out, b.in, b.size, b.size)
			if err != nil {
				return err
			}
			if err := nn.KaimingUniform(v, 1, "fan_in", "leaky_relu", rng); err != nil {
				return fmt.Errorf("detection: %s.0.weight: %w", k, err)
			}
			if err := addBatchNorm2d(w, k+".1", out, true); err != nil {
				return err
			}
		}
	}
	if f.ExtraBlocks == nil {
		return nil
	}
	return f.ExtraBlocks.initExtra(w, key(prefix, "extra_blocks"), out, rng)
}

// Forward builds the FPN on the maps x (finest first, x[i]
// [N, InChannelsList[i], H_i, W_i], the weights' dtype, one graph) named
// names, and returns its maps [N, OutChannels, H_i, W_i] and their names,
// the extra blocks' last. train: with BatchNorm, the norms normalise with
// the batch's statistics and update the running ones (torch's train
// mode), else with the running ones.
//
// Errors: f not valid (as Init's); len(x) or len(names) not
// len(InChannelsList); a map nil, of another rank, batch, channel count,
// dtype or graph; a tensor missing from w.
func (f FeaturePyramidNetwork) Forward(w *Weights, prefix string, x []*gorgonia.Node, names []string, train bool) ([]*gorgonia.Node, []string, error) {
	return f.forward(w, prefix, x, names, train, false)
}

// forward is Forward, in the inference graph if fused (not train): each
// lateral convolution, its norm and its sum with the top-down map one
// fusedConv.
func (f FeaturePyramidNetwork) forward(w *Weights, prefix string, x []*gorgonia.Node, names []string, train, fused bool) ([]*gorgonia.Node, []string, error) {
	if _, err := f.check(); err != nil {
		return nil, nil, err
	}
	if len(x) != len(f.InChannelsList) || len(names) != len(x) {
		return nil, nil, fmt.Errorf("detection: FeaturePyramidNetwork.Forward: %d maps and %d names for %d InChannelsList entries", len(x), len(names), len(f.InChannelsList))
	}
	for i, m := range x {
		if err := checkImages(fmt.Sprintf("FeaturePyramidNetwork.Forward: map %d", i), w, m, f.InChannelsList[i]); err != nil {
			return nil, nil, err
		}
		if m.Shape()[0] != x[0].Shape()[0] || m.Graph() != x[0].Graph() {
			return nil, nil, fmt.Errorf("detection: FeaturePyramidNetwork.Forward: map %d %v is not of map 0's batch %v and graph", i, m.Shape(), x[0].Shape())
		}
	}
	last := len(x) - 1
	lastInner, err := f.conv(w, prefix, fmt.Sprintf("inner_blocks.%d", last), x[last], nn.Conv2dOpts{}, train)
	if err != nil {
		return nil, nil, err
	}
	layer := func(i int, y *gorgonia.Node) (*gorgonia.Node, error) {
		return f.conv(w, prefix, fmt.Sprintf("layer_blocks.%d", i), y, nn.Conv2dOpts{Padding: [2]int{1, 1}}, train)
	}
	results := make([]*gorgonia.Node, len(x))
	if results[last], err = layer(last, lastInner); err != nil {
		return nil, nil, err
	}
	for i := last - 1; i >= 0; i-- {
		inner := fmt.Sprintf("inner_blocks.%d", i)
		var err error
		if fused && !train {
			lastInner, err = f.fusedLateral(w, prefix, inner, x[i], lastInner)
		} else {
			lastInner, err = f.lateral(w, prefix, inner, x[i], lastInner, train)
		}
		if err != nil {
			return nil, nil, err
		}
		if results[i], err = layer(i, lastInner); err != nil {
			return nil, nil, err
		}
	}
	names = append([]string(nil), names...)
	if f.ExtraBlocks == nil {
		return results, names, nil
	}
	return f.ExtraBlocks.forwardExtra(w, key(prefix, "extra_blocks"), results, x, names)
}

// BackboneWithFPN is torchvision's BackboneWithFPN over a ResNet as
// _resnet_fpn_extractor / resnet_fpn_backbone build it: the body (keys
// "body.*": the ResNet up to its last returned stage, as
// IntermediateLayerGetter keeps it) and a FeaturePyramidNetwork ("fpn.*")
// on the returned stages' maps, named "0", "1", …, with the extra blocks.
type BackboneWithFPN struct {
	// Body is the ResNet.
	Body ResNet
	// TrainableLayers is how many of layer4, layer3, layer2, layer1 and
	// conv1 (in that order; and bn1's weight and bias with 5 and
	// BatchNorm2d) have their parameters in Weights.Params, 0 to 5, as
	// torchvision's requires_grad_ loop; the rest of the body's tensors go
	// to Weights.Frozen. No default: 0 freezes the whole body
	// (torchvision's resnet_fpn_backbone default is 3; its detector
	// builders take 3 with pretrained weights, 5 without). The FPN is
	// always trainable.
	TrainableLayers int
	// ReturnedLayers are the stages (1-based, increasing, at most
	// len(Body.Layers)) fed to the FPN; nil means all of torchvision's
	// [1, 2, 3, 4] (the body's stages). FCOS and RetinaNet use [2, 3, 4].
	ReturnedLayers []int
	// OutChannels is the FPN's channels; 0 means 256.
	OutChannels int
	// ExtraBlocks are the FPN's extra blocks; nil means LastLevelMaxPool
	// (torchvision's default). FCOS and RetinaNet v1 use
	// LastLevelP6P7{256, 256}, RetinaNet v2 LastLevelP6P7{2048, 256}.
	ExtraBlocks ExtraFPNBlock
	// FPNBatchNorm is the FPN's BatchNorm (_resnet_fpn_extractor's
	// norm_layer=nn.BatchNorm2d: fasterrcnn_resnet50_fpn_v2).
	FPNBatchNorm bool
}

// backbonePlan is a checked BackboneWithFPN: the ResNet's plan, the
// returned stages (1-based) and the FPN.
type backbonePlan struct {
	body     *resnetPlan
	returned []int
	fpn      FeaturePyramidNetwork
}

// plan checks b and derives its FPN (in_channels_list from the returned
// stages' widths).
func (b BackboneWithFPN) plan() (*backbonePlan, error) {
	body, err := b.Body.plan()
	if err != nil {
		return nil, err
	}
	if b.TrainableLayers < 0 || b.TrainableLayers > 5 {
		return nil, fmt.Errorf("detection: BackboneWithFPN: TrainableLayers %d must be in [0, 5]", b.TrainableLayers)
	}
	returned := b.ReturnedLayers
	if returned == nil {
		for i := range body.stages {
			returned = append(returned, i+1)
		}
	}
	if len(returned) == 0 {
		return nil, fmt.Errorf("detection: BackboneWithFPN: ReturnedLayers is empty")
	}
	p := &backbonePlan{body: body, returned: returned}
	var in []int
	for i, l := range returned {
		if l < 1 || l > len(body.stages) || (i > 0 && l <= returned[i-1]) {
			return nil, fmt.Errorf("detection: BackboneWithFPN: ReturnedLayers %v must increase within [1, %d] (the body's stages)", returned, len(body.stages))
		}
		in = append(in, body.channels[l-1])
	}
	extra := b.ExtraBlocks
	if extra == nil {
		extra = LastLevelMaxPool{}
	}
	p.fpn = FeaturePyramidNetwork{InChannelsList: in, OutChannels: b.OutChannels, ExtraBlocks: extra, BatchNorm: b.FPNBatchNorm}
	return p, nil
}

// FPN returns the backbone's FeaturePyramidNetwork: InChannelsList the
// returned stages' channels, OutChannels and the extra blocks (nil made
// LastLevelMaxPool). Errors: b is not a valid configuration.
func (b BackboneWithFPN) FPN() (FeaturePyramidNetwork, error) {
	p, err := b.plan()
	if err != nil {
		return FeaturePyramidNetwork{}, err
	}
	return p.fpn, nil
}

// numLevels is the number of maps Forward returns: one per returned
// stage and the extra blocks'. Errors: b is not a valid configuration.
func (b BackboneWithFPN) numLevels() (int, error) {
	p, err := b.plan()
	if err != nil {
		return 0, err
	}
	return len(p.returned) + p.fpn.ExtraBlocks.extraMaps(), nil
}

// bodyTrainable is torchvision's rule: a body parameter is trainable when
// its name starts with one of the first TrainableLayers of layer4,
// layer3, layer2, layer1, conv1, or with bn1 when TrainableLayers is 5.
func bodyTrainable(trainableLayers int) func(string) bool {
	layers := []string{"layer4", "layer3", "layer2", "layer1", "conv1"}[:trainableLayers]
	if trainableLayers == 5 {
		layers = append(layers, "bn1")
	}
	return func(name string) bool {
		for _, l := range layers {
			if len(name) >= len(l) && name[:len(l)] == l {
				return true
			}
		}
		return false
	}
}

// Init adds the backbone's tensors under prefix ("backbone" in a
// detector): the body's under prefix.body (stages up to the last returned
// one; parameters trainable as TrainableLayers says, initialised as
// ResNet.Init), the FPN's under prefix.fpn (FeaturePyramidNetwork.Init).
//
// Errors: b is not a valid configuration (a ResNet error,
// TrainableLayers outside [0, 5], ReturnedLayers not increasing within
// the body's stages, a bad extra block); a key already in w.
func (b BackboneWithFPN) Init(w *Weights, prefix string, rng *rand.Rand) error {
	p, err := b.plan()
	if err != nil {
		return err
	}
	last := p.returned[len(p.returned)-1]
	if err := p.body.init(w, key(prefix, "body"), rng, last, bodyTrainable(b.TrainableLayers)); err != nil {
		return err
	}
	return p.fpn.Init(w, key(prefix, "fpn"), rng)
}

// Forward builds the backbone on images x [N ≥ 1, 3, H ≥ 1, W ≥ 1] (the
// weights' dtype) in x's graph and returns the FPN's maps, finest first,
// each [N, OutChannels, H_i, W_i], and their names: "0", "1", … for the
// returned stages, then "pool" (LastLevelMaxPool) or "p6", "p7"
// (LastLevelP6P7). train: as ResNet.Forward's, for the FPN's norms too
// (FPNBatchNorm).
//
// Errors: b not valid (as Init's); x as ResNet.Forward's; a tensor
// missing from w or of the wrong shape.
func (b BackboneWithFPN) Forward(w *Weights, prefix string, x *gorgonia.Node, train bool) ([]*gorgonia.Node, []string, error) {
	p, err := b.plan()
	if err != nil {
		return nil, nil, err
	}
	return p.forward(w, prefix, x, train, false)
}

// forward is Forward, in the inference graph (fused ops) if fused.
func (p *backbonePlan) forward(w *Weights, prefix string, x *gorgonia.Node, train, fused bool) ([]*gorgonia.Node, []string, error) {
	p.body.fused = fused
	stages, err := p.body.forward(w, key(prefix, "body"), x, train, p.returned[len(p.returned)-1])
	if err != nil {
		return nil, nil, err
	}
	maps := make([]*gorgonia.Node, len(p.returned))
	names := make([]string, len(p.returned))
	for i, l := range p.returned {
		maps[i], names[i] = stages[l-1], fmt.Sprint(i)
	}
	return p.fpn.forward(w, key(prefix, "fpn"), maps, names, train, fused)
}

// forwardFused is Forward's inference graph (the runner's): bitwise the
// same maps, of fused ops without a gradient.
func (b BackboneWithFPN) forwardFused(w *Weights, prefix string, x *gorgonia.Node) ([]*gorgonia.Node, []string, error) {
	p, err := b.plan()
	if err != nil {
		return nil, nil, err
	}
	return p.forward(w, prefix, x, false, true)
}

// conv is the FPN's convolution block (its block.0 on x, with bias, or
// without and then its norm block.1).
func (f FeaturePyramidNetwork) conv(w *Weights, prefix, block string, x *gorgonia.Node, opts nn.Conv2dOpts, train bool) (*gorgonia.Node, error) {
	y, err := conv2d(w, prefix, block+".0", x, opts, !f.BatchNorm)
	if err != nil || !f.BatchNorm {
		return y, err
	}
	return batchNorm2d(w, key(prefix, block+".1"), y, train, nil)
}

// lateral is the FPN's top-down step: the lateral convolution block
// inner (1×1) on x plus the nearest upsampling of lastInner to its size.
func (f FeaturePyramidNetwork) lateral(w *Weights, prefix, inner string, x, lastInner *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	lateral, err := f.conv(w, prefix, inner, x, nn.Conv2dOpts{}, train)
	if err != nil {
		return nil, err
	}
	topDown, err := upsampleTo(lastInner, lateral)
	if err != nil {
		return nil, err
	}
	return gorgonia.Add(lateral, topDown)
}

// upsampleTo is nearest interpolation of y to x's size.
func upsampleTo(y, x *gorgonia.Node) (*gorgonia.Node, error) {
	s := x.Shape()
	return nn.Interpolate(y, nn.InterpolateOpts{Size: [2]int{s[2], s[3]}, Mode: "nearest"})
}

// fusedLateral is lateral in eval mode as one fusedConv (the norm its
// per-channel affine step) with the upsampled map as its residual:
// bitwise lateral's sum.
func (f FeaturePyramidNetwork) fusedLateral(w *Weights, prefix, inner string, x, lastInner *gorgonia.Node) (*gorgonia.Node, error) {
	topDown, err := upsampleTo(lastInner, x) // a 1×1 convolution keeps x's size
	if err != nil {
		return nil, err
	}
	g := x.Graph()
	wt, err := w.Node(g, key(prefix, inner+".0.weight"))
	if err != nil {
		return nil, err
	}
	var b, scale, shift *gorgonia.Node
	if f.BatchNorm {
		scale, shift, err = batchNormEvalAffine(w, key(prefix, inner+".1"), bnEps, g)
	} else {
		b, err = w.Node(g, key(prefix, inner+".0.bias"))
	}
	if err != nil {
		return nil, err
	}
	y, err := fusedConv(x, wt, b, nn.Conv2dOpts{}, scale, shift, topDown, false)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", key(prefix, inner+".0"), err)
	}
	return y, nil
}
