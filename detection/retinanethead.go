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

// spec is the head's layers under prefix, for the method name (the
// configuration checked, defaults applied).
func (h RetinaNetHead) spec(name, prefix string) (headSpec, error) {
	h, err := h.defaults(name)
	if err != nil {
		return headSpec{}, err
	}
	cls, reg := key(prefix, "classification_head"), key(prefix, "regression_head")
	return headSpec{
		name: name, inChannels: h.InChannels, numAnchors: h.NumAnchors,
		clsTower: h.tower(cls), regTower: h.tower(reg),
		cls: headOutput{key: cls + ".cls_logits", k: h.NumClasses, bias: priorBias(h.PriorProbability)},
		reg: []headOutput{{key: reg + ".bbox_reg", k: 4}},
	}, nil
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
	s, err := h.spec("RetinaNetHead.Init", prefix)
	if err != nil {
		return err
	}
	return s.init(w, rng)
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
	return h.forward(w, prefix, features, false)
}

// forward is Forward, in the inference graph (fused ops, bitwise the
// same outputs, no gradient) if fused.
func (h RetinaNetHead) forward(w *Weights, prefix string, features []*gorgonia.Node, fused bool) (*HeadOutputs, error) {
	s, err := h.spec("RetinaNetHead.Forward", prefix)
	if err != nil {
		return nil, err
	}
	s.fused = fused
	return s.forward(w, features)
}
