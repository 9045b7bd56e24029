package detection

import (
	"fmt"
	"math/rand/v2"

	"gorgonia.org/gorgonia"
)

// RetinaNetHead is torchvision's RetinaNetHead (retinanet.py, 0.14): a
// classification branch (RetinaNetClassificationHead) and a regression
// branch (RetinaNetRegressionHead), each a tower of NumConvs 3×3
// convolutions C → C (Conv2dNormActivation: ReLU, and GroupNorm first
// with HeadNormGroupNorm) and a 3×3 output convolution: cls_logits to
// NumAnchors·NumClasses channels, bbox_reg to NumAnchors·4. Every FPN
// level goes through the same weights.
//
// Its tensors, under prefix (say "head"), are torchvision's state_dict
// keys: prefix.classification_head.conv.{i}.0.weight (and .0.bias
// without norm; .1.weight and .1.bias, the GroupNorm, with it),
// prefix.classification_head.cls_logits.{weight,bias}, the same tower
// under prefix.regression_head, and prefix.regression_head.bbox_reg.
// {weight,bias}; all trainable. Checkpoints of torchvision before 0.8
// name the tower convolutions conv.{i}.weight (the loader's version
// upgrade, torchvision's _v1_to_v2_weights).
type RetinaNetHead struct {
	// InChannels is the FPN's channel count C (256 in torchvision's
	// models); a multiple of 32 with HeadNormGroupNorm.
	InChannels int
	// NumAnchors is A, the anchors per location (9 in torchvision's
	// models: 3 sizes × 3 aspect ratios).
	NumAnchors int
	// NumClasses is K, the classes including background's index 0 (91 for
	// COCO).
	NumClasses int
	// NumConvs is the number of tower convolutions per branch; 0 means
	// torchvision's 4 (fixed there).
	NumConvs int
	// Norm is the tower's normalisation: HeadNormNone (RetinaNet v1, the
	// zero value) or HeadNormGroupNorm (v2).
	Norm HeadNorm
	// PriorProbability sets cls_logits' initial bias to
	// −log((1 − p)/p); 0 means torchvision's 0.01.
	PriorProbability float64
}

// defaults returns h with its zero fields set to torchvision's defaults,
// checked.
func (h RetinaNetHead) defaults(name string) (RetinaNetHead, error) {
	if h.NumConvs == 0 {
		h.NumConvs = 4
	}
	if h.PriorProbability == 0 {
		h.PriorProbability = 0.01
	}
	if h.Norm != HeadNormNone && h.Norm != HeadNormGroupNorm {
		return h, fmt.Errorf("detection: %s: Norm %d is neither HeadNormNone nor HeadNormGroupNorm", name, h.Norm)
	}
	return h, checkHead(name, h.InChannels, h.NumAnchors, h.NumClasses, h.NumConvs, h.PriorProbability, h.Norm == HeadNormGroupNorm)
}

// tower is one branch's tower under branch (prefix.classification_head,
// say).
func (h RetinaNetHead) tower(branch string) []towerLayer {
	layers := make([]towerLayer, h.NumConvs)
	for i := range layers {
		block := key(branch, fmt.Sprintf("conv.%d", i))
		layers[i] = towerLayer{conv: block + ".0", bias: true}
		if h.Norm == HeadNormGroupNorm {
			layers[i] = towerLayer{conv: block + ".0", norm: block + ".1"}
		}
	}
	return layers
}

// Init adds the head's tensors to w under prefix, initialised as
// torchvision's constructor does: every convolution weight normal(0,
// 0.01) from rng, the tower's and bbox_reg's biases 0, cls_logits' bias
// −log((1 − PriorProbability)/PriorProbability), GroupNorm weights 1 and
// biases 0.
//
// Errors: a bad configuration (InChannels, NumAnchors or NumClasses
// below 1, NumConvs negative, PriorProbability outside (0, 1), an unknown
// Norm, InChannels not a multiple of 32 with GroupNorm); rng nil; as
// Weights.Add's (a key already in w).
func (h RetinaNetHead) Init(w *Weights, prefix string, rng *rand.Rand) error {
	const name = "RetinaNetHead.Init"
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
// levels), and returns per level cls_logits [N, H_l·W_l·A, K] and
// bbox_regression [N, H_l·W_l·A, 4] (HeadOutputs.Cat concatenates them
// as torchvision's forward returns them). train changes nothing (the
// head has no dropout or batch statistics); it is there for the
// convention of the model's parts. Differentiable to every order w.r.t.
// the features and every weight.
//
// Errors: a bad configuration (as Init's); w nil; no levels; a level nil,
// not 4-D, with another channel count, batch, graph or dtype than the
// weights'; a tensor missing from w or of the wrong shape (named by its
// key).
func (h RetinaNetHead) Forward(w *Weights, prefix string, features []*gorgonia.Node, train bool) (*HeadOutputs, error) {
	const name = "RetinaNetHead.Forward"
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
func (h RetinaNetHead) forward(node nodeFunc, prefix string, features []*gorgonia.Node) (*HeadOutputs, error) {
	cls, reg := key(prefix, "classification_head"), key(prefix, "regression_head")
	out := &HeadOutputs{}
	for _, x := range features {
		y, err := branch(node, x, h.tower(cls), cls+".cls_logits", h.NumAnchors, h.NumClasses)
		if err != nil {
			return nil, err
		}
		r, err := branch(node, x, h.tower(reg), reg+".bbox_reg", h.NumAnchors, 4)
		if err != nil {
			return nil, err
		}
		out.ClsLogits = append(out.ClsLogits, y)
		out.BboxRegression = append(out.BboxRegression, r)
	}
	return out, nil
}
