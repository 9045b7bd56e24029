package detection

import (
	"fmt"
	"math/rand/v2"

	"gorgonia.org/gorgonia"
)

// FCOSHead is torchvision's FCOSHead (fcos.py, 0.14): a classification
// branch (FCOSClassificationHead: a tower of NumConvs × [3×3 conv C → C
// with bias, GroupNorm(32, C), ReLU], then cls_logits, 3×3 to
// NumAnchors·NumClasses) and a regression branch (FCOSRegressionHead: the
// same tower, then bbox_reg, 3×3 to NumAnchors·4 followed by ReLU, and
// bbox_ctrness, 3×3 to NumAnchors, both on the tower's result). Every
// FPN level goes through the same weights.
//
// Its tensors, under prefix (say "head"), are torchvision's state_dict
// keys: prefix.classification_head.conv.{3i}.{weight,bias} (the
// convolutions) and conv.{3i+1}.{weight,bias} (the GroupNorms; conv.{3i+2}
// is the ReLU, without tensors), prefix.classification_head.cls_logits.
// {weight,bias}, the same tower under prefix.regression_head, and
// prefix.regression_head.bbox_reg and .bbox_ctrness.{weight,bias}; all
// trainable.
type FCOSHead struct {
	// InChannels is the FPN's channel count C (256 in torchvision's
	// model), a multiple of 32 (GroupNorm's groups).
	InChannels int
	// NumAnchors is A, the anchors per location; 0 means FCOS's 1.
	NumAnchors int
	// NumClasses is K, the classes including background's index 0 (91 for
	// COCO).
	NumClasses int
	// NumConvs is the number of tower convolutions per branch; 0 means
	// torchvision's default 4.
	NumConvs int
	// PriorProbability sets cls_logits' initial bias to
	// −log((1 − p)/p); 0 means torchvision's 0.01.
	PriorProbability float64
}

// defaults returns h with its zero fields set to torchvision's defaults,
// checked.
func (h FCOSHead) defaults(name string) (FCOSHead, error) {
	if h.NumAnchors == 0 {
		h.NumAnchors = 1
	}
	if h.NumConvs == 0 {
		h.NumConvs = 4
	}
	if h.PriorProbability == 0 {
		h.PriorProbability = 0.01
	}
	return h, checkHead(name, h.InChannels, h.NumAnchors, h.NumClasses, h.NumConvs, h.PriorProbability, true)
}

// spec is the head's layers under prefix, for the method name (the
// configuration checked, defaults applied).
func (h FCOSHead) spec(name, prefix string) (headSpec, error) {
	h, err := h.defaults(name)
	if err != nil {
		return headSpec{}, err
	}
	cls, reg := key(prefix, "classification_head"), key(prefix, "regression_head")
	return headSpec{
		name: name, inChannels: h.InChannels, numAnchors: h.NumAnchors,
		clsTower: h.tower(cls), regTower: h.tower(reg),
		cls: headOutput{key: cls + ".cls_logits", k: h.NumClasses, bias: priorBias(h.PriorProbability)},
		reg: []headOutput{{key: reg + ".bbox_reg", k: 4, relu: true}, {key: reg + ".bbox_ctrness", k: 1}},
	}, nil
}

// tower is one branch's tower under branch (prefix.classification_head,
// say): nn.Sequential indices 3i (conv), 3i+1 (GroupNorm), 3i+2 (ReLU).
func (h FCOSHead) tower(branch string) []towerLayer {
	layers := make([]towerLayer, h.NumConvs)
	for i := range layers {
		layers[i] = towerLayer{conv: key(branch, fmt.Sprintf("conv.%d", 3*i)), bias: true, norm: key(branch, fmt.Sprintf("conv.%d", 3*i+1))}
	}
	return layers
}

// Init adds the head's tensors to w under prefix, initialised as
// torchvision's constructor does: every convolution weight normal(0,
// 0.01) from rng, the biases 0 except cls_logits',
// −log((1 − PriorProbability)/PriorProbability), GroupNorm weights 1 and
// biases 0.
//
// Errors: a bad configuration (InChannels not a positive multiple of 32,
// NumAnchors or NumConvs negative, NumClasses below 1, PriorProbability
// outside (0, 1)); rng nil; as Weights.Add's (a key already in w).
func (h FCOSHead) Init(w *Weights, prefix string, rng *rand.Rand) error {
	s, err := h.spec("FCOSHead.Init", prefix)
	if err != nil {
		return err
	}
	return s.init(w, rng)
}

// Forward builds the head on features, the FPN levels [N, InChannels,
// H_l, W_l] (one graph, one N, w's dtype), taking every tensor from w
// under prefix (Weights.Node: one node per tensor, shared by the
// levels), and returns per level cls_logits [N, H_l·W_l·A, K],
// bbox_regression [N, H_l·W_l·A, 4] (after ReLU: distances to the box's
// sides, in units of the level's anchor size) and bbox_ctrness
// [N, H_l·W_l·A, 1] (HeadOutputs.Cat concatenates them as torchvision's
// forward returns them). train changes nothing (GroupNorm has no batch
// statistics); it is there for the convention of the model's parts.
// Differentiable to every order w.r.t. the features and every weight.
//
// Errors: a bad configuration (as Init's); w nil; no levels; a level nil,
// not 4-D, with another channel count, batch, graph or dtype than the
// weights'; a tensor missing from w or of the wrong shape (named by its
// key).
func (h FCOSHead) Forward(w *Weights, prefix string, features []*gorgonia.Node, train bool) (*HeadOutputs, error) {
	return h.forward(w, prefix, features, false)
}

// forward is Forward, in the inference graph (fused ops, bitwise the
// same outputs, no gradient) if fused.
func (h FCOSHead) forward(w *Weights, prefix string, features []*gorgonia.Node, fused bool) (*HeadOutputs, error) {
	s, err := h.spec("FCOSHead.Forward", prefix)
	if err != nil {
		return nil, err
	}
	s.fused = fused
	return s.forward(w, features)
}
