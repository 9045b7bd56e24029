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
	const name = "FCOSHead.Init"
	h, err := h.defaults(name)
	if err != nil {
		return err
	}
	if rng == nil {
		return fmt.Errorf("detection: %s: rng is nil", name)
	}
	c, a := h.InChannels, h.NumAnchors
	cls, reg := key(prefix, "classification_head"), key(prefix, "regression_head")
	for _, step := range []func() error{
		func() error { return initTower(w, h.tower(cls), c, rng) },
		func() error {
			return initConv3x3(w, cls+".cls_logits", c, a*h.NumClasses, true, priorBias(h.PriorProbability), rng)
		},
		func() error { return initTower(w, h.tower(reg), c, rng) },
		func() error { return initConv3x3(w, reg+".bbox_reg", c, a*4, true, 0, rng) },
		func() error { return initConv3x3(w, reg+".bbox_ctrness", c, a, true, 0, rng) },
	} {
		if err := step(); err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
	}
	return nil
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
	const name = "FCOSHead.Forward"
	h, err := h.defaults(name)
	if err != nil {
		return nil, err
	}
	node, err := headFeatures(name, w, features, h.InChannels)
	if err != nil {
		return nil, err
	}
	out, err := h.forward(node, prefix, features)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", name, err)
	}
	return out, nil
}

// forward is Forward on checked arguments, with tensors from node.
func (h FCOSHead) forward(node nodeFunc, prefix string, features []*gorgonia.Node) (*HeadOutputs, error) {
	cls, reg := key(prefix, "classification_head"), key(prefix, "regression_head")
	out := &HeadOutputs{}
	for _, x := range features {
		y, err := branch(node, x, h.tower(cls), cls+".cls_logits", h.NumAnchors, h.NumClasses)
		if err != nil {
			return nil, err
		}
		t, err := tower(node, x, h.tower(reg))
		if err != nil {
			return nil, err
		}
		r, err := output(node, t, reg+".bbox_reg", h.NumAnchors, 4, true)
		if err != nil {
			return nil, err
		}
		c, err := output(node, t, reg+".bbox_ctrness", h.NumAnchors, 1, false)
		if err != nil {
			return nil, err
		}
		out.ClsLogits = append(out.ClsLogits, y)
		out.BboxRegression = append(out.BboxRegression, r)
		out.BboxCtrness = append(out.BboxCtrness, c)
	}
	return out, nil
}
