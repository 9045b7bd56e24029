package detection

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// What RetinaNet's and FCOS's heads share (retinanet.py and fcos.py of
// torchvision 0.14): a tower of 3×3 convolutions (each optionally
// followed by GroupNorm(32), then ReLU) per branch, a 3×3 output
// convolution, and the permute of its [N, A·K, H, W] result to
// [N, H·W·A, K], applied to each FPN level with one set of weights.

// HeadNorm is the normalisation after each tower convolution of a
// RetinaNet head (torchvision's norm_layer argument).
type HeadNorm int

const (
	// HeadNormNone is RetinaNet v1's tower (norm_layer None): each
	// convolution has a bias and is followed by ReLU alone.
	HeadNormNone HeadNorm = iota
	// HeadNormGroupNorm is RetinaNet v2's tower (norm_layer
	// partial(nn.GroupNorm, 32)): each convolution has no bias (torchvision's
	// Conv2dNormActivation drops it before a norm layer) and is followed
	// by GroupNorm with 32 groups, eps 1e-5, then ReLU.
	HeadNormGroupNorm
)

// headGroups and headEps are the heads' GroupNorm: nn.GroupNorm(32, C)
// with torch's default eps.
const (
	headGroups = 32
	headEps    = 1e-5
)

// HeadOutputs are a head's outputs per FPN level l, in torchvision's
// layout after its view/permute/reshape: anchor i of level l is row
// (h·W_l + w)·A + a of that level's tensors. The levels are in the order
// of the features given to Forward.
type HeadOutputs struct {
	// ClsLogits are the classification logits, [N, H_l·W_l·A, K] per level
	// (torchvision's "cls_logits" before torch.cat).
	ClsLogits []*gorgonia.Node
	// BboxRegression are the box regression outputs, [N, H_l·W_l·A, 4]
	// per level ("bbox_regression"): RetinaNet's BoxCoder deltas (dx, dy,
	// dw, dh), FCOS's BoxLinearCoder distances (left, top, right, bottom)
	// after ReLU.
	BboxRegression []*gorgonia.Node
	// BboxCtrness are FCOS's centerness logits, [N, H_l·W_l·A, 1] per level
	// ("bbox_ctrness"); nil for RetinaNet.
	BboxCtrness []*gorgonia.Node
}

// Cat returns the outputs concatenated over the levels along dim 1, as
// torchvision's heads return them (torch.cat(..., dim=1)): cls_logits
// [N, Σ H_l·W_l·A, K], bbox_regression [N, Σ H_l·W_l·A, 4] and
// bbox_ctrness [N, Σ H_l·W_l·A, 1] (nil without BboxCtrness). The
// training losses take these; the postprocessing takes the levels.
// Differentiable to every order (nn.Concat). With one level the nodes are
// the level's own.
//
// Errors: o is nil or has no levels; the three lists differ in length;
// as nn.Concat's.
func (o *HeadOutputs) Cat() (clsLogits, bboxRegression, bboxCtrness *gorgonia.Node, err error) {
	if o == nil || len(o.ClsLogits) == 0 {
		return nil, nil, nil, fmt.Errorf("detection: HeadOutputs.Cat: no levels")
	}
	n := len(o.ClsLogits)
	if len(o.BboxRegression) != n || o.BboxCtrness != nil && len(o.BboxCtrness) != n {
		return nil, nil, nil, fmt.Errorf("detection: HeadOutputs.Cat: %d cls_logits levels, %d bbox_regression, %d bbox_ctrness",
			n, len(o.BboxRegression), len(o.BboxCtrness))
	}
	out := make([]*gorgonia.Node, 3)
	for i, levels := range [][]*gorgonia.Node{o.ClsLogits, o.BboxRegression, o.BboxCtrness} {
		switch {
		case levels == nil:
		case len(levels) == 1:
			out[i] = levels[0]
		default:
			if out[i], err = nn.Concat(1, levels...); err != nil {
				return nil, nil, nil, fmt.Errorf("detection: HeadOutputs.Cat: %s: %w", []string{"cls_logits", "bbox_regression", "bbox_ctrness"}[i], err)
			}
		}
	}
	return out[0], out[1], out[2], nil
}

// nodeFunc returns the node of the tensor called key in the graph being
// built (Weights.Node, or a test's stand-in).
type nodeFunc func(key string) (*gorgonia.Node, error)

// towerLayer is one 3×3 convolution of a head's tower, C → C with padding
// 1: its weight key conv+".weight" (and conv+".bias" with bias), then
// GroupNorm with weight and bias under norm (none if empty), then ReLU.
type towerLayer struct {
	conv string
	bias bool
	norm string
}

// initTower adds the tower's tensors to w for c channels, initialised as
// torchvision's heads do: conv weights normal(0, 0.01), conv biases 0,
// GroupNorm weights 1 and biases 0 (torch's defaults).
func initTower(w *Weights, layers []towerLayer, c int, rng *rand.Rand) error {
	for _, l := range layers {
		if err := initConv3x3(w, l.conv, c, c, l.bias, 0, rng); err != nil {
			return err
		}
		if l.norm == "" {
			continue
		}
		t, err := w.Add(l.norm+".weight", true, c)
		if err != nil {
			return err
		}
		if err := nn.Ones(t); err != nil {
			return err
		}
		if _, err := w.Add(l.norm+".bias", true, c); err != nil {
			return err
		}
	}
	return nil
}

// initConv3x3 adds a 3×3 convolution cin → cout under key: weight
// normal(0, 0.01) drawn from rng, bias (if any) the constant bias.
func initConv3x3(w *Weights, key string, cin, cout int, hasBias bool, bias float64, rng *rand.Rand) error {
	t, err := w.Add(key+".weight", true, cout, cin, 3, 3)
	if err != nil {
		return err
	}
	if err := nn.Normal(t, 0, 0.01, rng); err != nil {
		return err
	}
	if !hasBias {
		return nil
	}
	b, err := w.Add(key+".bias", true, cout)
	if err != nil {
		return err
	}
	return nn.Constant(b, bias)
}

// tower applies layers to x; fused: the inference graph, each
// convolution without a norm and its ReLU one fusedConv, each GroupNorm
// and its ReLU one groupNormReLU.
func tower(node nodeFunc, x *gorgonia.Node, layers []towerLayer, fused bool) (*gorgonia.Node, error) {
	for _, l := range layers {
		var err error
		if x, err = conv3x3(node, x, l.conv, l.bias, x.Shape()[1], fused && l.norm == ""); err != nil {
			return nil, err
		}
		if l.norm != "" {
			gw, err := node(l.norm + ".weight")
			if err != nil {
				return nil, err
			}
			gb, err := node(l.norm + ".bias")
			if err != nil {
				return nil, err
			}
			if fused {
				if x, err = groupNormReLU(x, gw, gb, headGroups, headEps); err != nil {
					return nil, fmt.Errorf("%s: %w", l.norm, err)
				}
				continue
			}
			if x, err = nn.GroupNorm(x, headGroups, gw, gb, headEps); err != nil {
				return nil, fmt.Errorf("%s: %w", l.norm, err)
			}
		} else if fused {
			continue // the convolution's ReLU
		}
		if x, err = nn.ReLU(x); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// conv3x3 is the 3×3 convolution with padding 1 under key (its bias if
// bias) from x's channels to cout, and if relu its ReLU with it (one
// fusedConv, for the inference graph); a weight of another shape is an
// error naming it.
func conv3x3(node nodeFunc, x *gorgonia.Node, key string, bias bool, cout int, relu bool) (*gorgonia.Node, error) {
	wt, err := node(key + ".weight")
	if err != nil {
		return nil, err
	}
	if want := (tensor.Shape{cout, x.Shape()[1], 3, 3}); !wt.Shape().Eq(want) {
		return nil, fmt.Errorf("%s.weight has shape %v, want %v", key, wt.Shape(), want)
	}
	var b *gorgonia.Node
	if bias {
		if b, err = node(key + ".bias"); err != nil {
			return nil, err
		}
	}
	opts := nn.Conv2dOpts{Padding: [2]int{1, 1}}
	var y *gorgonia.Node
	if relu {
		y, err = fusedConv(x, wt, b, opts, nil, nil, nil, true)
	} else {
		y, err = nn.Conv2d(x, wt, b, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return y, nil
}

// perAnchor is torchvision's view(N, -1, k, H, W).permute(0, 3, 4, 1, 2)
// .reshape(N, -1, k): y [N, A·k, H, W] to [N, H·W·A, k].
func perAnchor(y *gorgonia.Node, k int) (*gorgonia.Node, error) {
	s := y.Shape()
	p, err := nn.Permute(y, 0, 2, 3, 1)
	if err != nil {
		return nil, err
	}
	return nn.Reshape(p, s[0], s[1]/k*s[2]*s[3], k)
}

// checkHead checks a head's configuration: InChannels, NumAnchors and
// NumClasses positive, numConvs not negative, the prior probability in
// (0, 1), channels divisible by 32 for GroupNorm.
func checkHead(name string, inChannels, numAnchors, numClasses, numConvs int, prior float64, groupNorm bool) error {
	switch {
	case inChannels < 1:
		return fmt.Errorf("detection: %s: InChannels %d, want at least 1", name, inChannels)
	case numAnchors < 1:
		return fmt.Errorf("detection: %s: NumAnchors %d, want at least 1", name, numAnchors)
	case numClasses < 1:
		return fmt.Errorf("detection: %s: NumClasses %d, want at least 1", name, numClasses)
	case numConvs < 0:
		return fmt.Errorf("detection: %s: NumConvs %d is negative", name, numConvs)
	case !(prior > 0 && prior < 1):
		return fmt.Errorf("detection: %s: PriorProbability %g, want it in (0, 1)", name, prior)
	case groupNorm && inChannels%headGroups != 0:
		return fmt.Errorf("detection: %s: InChannels %d not divisible into GroupNorm's %d groups", name, inChannels, headGroups)
	}
	return nil
}

// priorBias is the classification logits' initial bias,
// −log((1 − prior)/prior): every class starts at probability prior.
func priorBias(prior float64) float64 { return -math.Log((1 - prior) / prior) }

// headFeatures checks a head's input levels and returns their graph and a
// nodeFunc over w in it: at least one level; each a 4-D node [N, C, H, W]
// of w's dtype with C = inChannels, one N and one graph for all.
func headFeatures(name string, w *Weights, features []*gorgonia.Node, inChannels int) (nodeFunc, error) {
	if w == nil || w.Params == nil || w.Frozen == nil {
		return nil, fmt.Errorf("detection: %s: the weights are nil or not made by NewWeights", name)
	}
	if len(features) == 0 {
		return nil, fmt.Errorf("detection: %s: no feature levels", name)
	}
	var g *gorgonia.ExprGraph
	for l, x := range features {
		if x == nil {
			return nil, fmt.Errorf("detection: %s: feature level %d is nil", name, l)
		}
		s := x.Shape()
		switch {
		case x.IsScalar() || s.Dims() != 4:
			return nil, fmt.Errorf("detection: %s: feature level %d has shape %v, want [N, %d, H, W]", name, l, s, inChannels)
		case s[1] != inChannels:
			return nil, fmt.Errorf("detection: %s: feature level %d has %d channels (shape %v), the head's InChannels is %d", name, l, s[1], s, inChannels)
		case x.Dtype() != w.Dtype():
			return nil, fmt.Errorf("detection: %s: feature level %d is %v, the weights %v", name, l, x.Dtype(), w.Dtype())
		case l > 0 && s[0] != features[0].Shape()[0]:
			return nil, fmt.Errorf("detection: %s: feature level %d has batch %d, level 0 %d", name, l, s[0], features[0].Shape()[0])
		case l > 0 && x.Graph() != g:
			return nil, fmt.Errorf("detection: %s: feature level %d is in another graph than level 0", name, l)
		}
		g = x.Graph()
	}
	if g == nil {
		return nil, fmt.Errorf("detection: %s: feature level 0 is in no graph", name)
	}
	return func(key string) (*gorgonia.Node, error) { return w.Node(g, key) }, nil
}

// key is prefix + "." + name, or name for an empty prefix.
func key(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// output is the output convolution under key on the tower's result t to
// a·k channels, with ReLU after it if relu (FCOS's bbox_reg; fused with
// the convolution if fused), per anchor (a of them) in k columns.
func output(node nodeFunc, t *gorgonia.Node, key string, a, k int, relu, fused bool) (*gorgonia.Node, error) {
	y, err := conv3x3(node, t, key, true, a*k, relu && fused)
	if err != nil {
		return nil, err
	}
	if relu && !fused {
		if y, err = nn.ReLU(y); err != nil {
			return nil, err
		}
	}
	return perAnchor(y, k)
}

// headSpec is a head as its layers under their keys: the classification
// and regression towers on inChannels channels, cls_logits on the first
// and the regression outputs (bbox_reg, then FCOS's bbox_ctrness) on the
// second, each for numAnchors anchors. name ("RetinaNetHead.Init", say)
// leads its errors.
type headSpec struct {
	name                   string
	inChannels, numAnchors int
	clsTower, regTower     []towerLayer
	cls                    headOutput
	reg                    []headOutput
	// fused builds the inference graph (tower's fused ops).
	fused bool
}

// headOutput is an output convolution: its key, k columns per anchor, its
// initial bias, and ReLU after it if relu.
type headOutput struct {
	key  string
	k    int
	bias float64
	relu bool
}

// init adds the head's tensors to w in torchvision's state_dict order,
// initialised as its constructors do (initTower, initConv3x3).
func (s headSpec) init(w *Weights, rng *rand.Rand) error {
	if rng == nil {
		return fmt.Errorf("detection: %s: rng is nil", s.name)
	}
	c, a := s.inChannels, s.numAnchors
	if err := initTower(w, s.clsTower, c, rng); err != nil {
		return fmt.Errorf("detection: %s: %w", s.name, err)
	}
	if err := initConv3x3(w, s.cls.key, c, a*s.cls.k, true, s.cls.bias, rng); err != nil {
		return fmt.Errorf("detection: %s: %w", s.name, err)
	}
	if err := initTower(w, s.regTower, c, rng); err != nil {
		return fmt.Errorf("detection: %s: %w", s.name, err)
	}
	for _, o := range s.reg {
		if err := initConv3x3(w, o.key, c, a*o.k, true, o.bias, rng); err != nil {
			return fmt.Errorf("detection: %s: %w", s.name, err)
		}
	}
	return nil
}

// forward checks w and the features (headFeatures) and builds the head.
func (s headSpec) forward(w *Weights, features []*gorgonia.Node) (*HeadOutputs, error) {
	node, err := headFeatures(s.name, w, features, s.inChannels)
	if err != nil {
		return nil, err
	}
	out, err := s.build(node, features)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", s.name, err)
	}
	return out, nil
}

// build is forward on checked features, with tensors from node: per
// level, the classification tower and cls_logits, the regression tower
// and its outputs.
func (s headSpec) build(node nodeFunc, features []*gorgonia.Node) (*HeadOutputs, error) {
	out := &HeadOutputs{}
	lists := []*[]*gorgonia.Node{&out.BboxRegression, &out.BboxCtrness}
	for _, x := range features {
		t, err := tower(node, x, s.clsTower, s.fused)
		if err != nil {
			return nil, err
		}
		y, err := output(node, t, s.cls.key, s.numAnchors, s.cls.k, s.cls.relu, s.fused)
		if err != nil {
			return nil, err
		}
		out.ClsLogits = append(out.ClsLogits, y)
		if t, err = tower(node, x, s.regTower, s.fused); err != nil {
			return nil, err
		}
		for i, o := range s.reg {
			y, err := output(node, t, o.key, s.numAnchors, o.k, o.relu, s.fused)
			if err != nil {
				return nil, err
			}
			*lists[i] = append(*lists[i], y)
		}
	}
	return out, nil
}
