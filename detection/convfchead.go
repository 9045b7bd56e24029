package detection

import (
	"fmt"
	"math/rand/v2"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
)

// FastRCNNConvFCHead is torchvision's FastRCNNConvFCHead
// (models/detection/faster_rcnn.py), the box head of
// fasterrcnn_resnet50_fpn_v2: on the pooled RoI features [R, C, H, W]
// (InputSize (C, H, W)), per entry of ConvLayers a 3×3 convolution
// (padding 1) to that many channels, with a bias, or without one and
// followed by its BatchNorm2d (BatchNorm: torchvision's
// norm_layer=nn.BatchNorm2d), then ReLU; the result flattened; per entry of
// FCLayers an nn.Linear to that width, then ReLU. Its tensors live under
// prefix ("roi_heads.box_head") as torchvision's nn.Sequential numbers
// them: convolution i at "i.0" and its norm at "i.1"; the flattening at
// len(ConvLayers); linear layer j at len(ConvLayers)+1+2j.
type FastRCNNConvFCHead struct {
	// InputSize is (C, H, W) of the pooled features: (256, 7, 7) in
	// fasterrcnn_resnet50_fpn_v2, the backbone's channels and the RoI
	// pooling's output size.
	InputSize [3]int
	// ConvLayers are the convolutions' output channels ([256, 256, 256,
	// 256] in v2); may be empty.
	ConvLayers []int
	// FCLayers are the linear layers' widths ([1024] in v2); may be empty
	// (the head's output is then the flattened features).
	FCLayers []int
	// BatchNorm puts a torch.nn.BatchNorm2d (eps 1e-5, momentum 0.1)
	// after each convolution.
	BatchNorm bool
}

// check validates the sizes.
func (h FastRCNNConvFCHead) check(name string) error {
	per := int64(1) // C·H·W, the flattened row
	for i, v := range h.InputSize {
		if v < 1 {
			return fmt.Errorf("detection: %s: InputSize %v, want positive sizes (entry %d)", name, h.InputSize, i)
		}
		if per > (1<<30)/int64(v) {
			return fmt.Errorf("detection: %s: InputSize %v is over 2^30 values a row", name, h.InputSize)
		}
		per *= int64(v)
	}
	for _, l := range []struct {
		what string
		ls   []int
	}{{"ConvLayers", h.ConvLayers}, {"FCLayers", h.FCLayers}} { // (in this order: a map's would vary)
		for i, v := range l.ls {
			if v < 1 {
				return fmt.Errorf("detection: %s: %s[%d] = %d, want at least 1", name, l.what, i, v)
			}
		}
	}
	return nil
}

// checkInput checks h (check) and that x is [R, C, H, W] of InputSize.
func (h FastRCNNConvFCHead) checkInput(x *gorgonia.Node) error {
	const name = "FastRCNNConvFCHead"
	if err := h.check(name); err != nil {
		return err
	}
	if x == nil || x.Shape().Dims() != 4 || x.Shape()[1] != h.InputSize[0] || x.Shape()[2] != h.InputSize[1] || x.Shape()[3] != h.InputSize[2] {
		return fmt.Errorf("detection: %s: x must be [R, %d, %d, %d]", name, h.InputSize[0], h.InputSize[1], h.InputSize[2])
	}
	return nil
}

// outChannels is the width of the head's result rows.
func (h FastRCNNConvFCHead) outChannels() int {
	if n := len(h.FCLayers); n > 0 {
		return h.FCLayers[n-1]
	}
	c := h.InputSize[0]
	if n := len(h.ConvLayers); n > 0 {
		c = h.ConvLayers[n-1]
	}
	return c * h.InputSize[1] * h.InputSize[2]
}

// Init adds the head's tensors to w under prefix, all trainable,
// initialised as torchvision's: the convolutions kaiming_normal_
// (mode="fan_out", nonlinearity="relu"), their biases 0, the norms'
// weight 1 and bias 0 (running_mean 0, running_var 1), the linear layers
// as torch.nn.Linear. Errors: sizes below 1, rng nil, a key already in w.
func (h FastRCNNConvFCHead) Init(w *Weights, prefix string, rng *rand.Rand) error {
	const name = "FastRCNNConvFCHead.Init"
	if err := h.check(name); err != nil {
		return err
	}
	if rng == nil {
		return fmt.Errorf("detection: %s: rng is nil", name)
	}
	in := h.InputSize[0]
	for i, out := range h.ConvLayers {
		k := key(prefix, fmt.Sprint(i))
		if err := addKaimingNormal(w, k+".0.weight", true, rng, out, in, 3, 3); err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
		var err error
		if h.BatchNorm {
			err = addBatchNorm2d(w, k+".1", out, true)
		} else {
			_, err = w.Add(k+".0.bias", true, out)
		}
		if err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
		in = out
	}
	in *= h.InputSize[1] * h.InputSize[2]
	for j, out := range h.FCLayers {
		if err := initLinear(w, key(prefix, fmt.Sprint(len(h.ConvLayers)+1+2*j)), in, out, rng); err != nil {
			return fmt.Errorf("detection: %s: %w", name, err)
		}
		in = out
	}
	return nil
}

// Forward builds the head on x [R, C, H, W] (InputSize, w's dtype) with
// w's tensors under prefix: [R, the last FCLayers entry] (or the
// flattened features without FCLayers). train: the norms normalise with
// the batch's statistics (the R rows) and update the running ones
// (torch's train mode), else with the running ones. Differentiable to
// every order.
//
// Errors: x nil or not [R, C, H, W]; a tensor missing from w or of
// another shape; x of another dtype than w; in training with BatchNorm,
// one value per channel (R·H·W = 1: torch refuses that batch too).
func (h FastRCNNConvFCHead) Forward(w *Weights, prefix string, x *gorgonia.Node, train bool) (*gorgonia.Node, error) {
	return h.forward(w, prefix, x, train, nil)
}

// forward is Forward; with mask ([R] of 0s and 1s, not nil) the training
// norms' statistics are those of the rows with 1 (nn.BatchNormOpts.Mask):
// the sampled rows of a padded batch.
func (h FastRCNNConvFCHead) forward(w *Weights, prefix string, x *gorgonia.Node, train bool, mask *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "FastRCNNConvFCHead"
	if err := h.checkInput(x); err != nil {
		return nil, err
	}
	y := x
	for i, out := range h.ConvLayers {
		k := fmt.Sprint(i)
		var err error
		if y, err = conv2d(w, prefix, k+".0", y, nn.Conv2dOpts{Padding: [2]int{1, 1}}, !h.BatchNorm); err != nil {
			return nil, fmt.Errorf("detection: %s: %w", name, err)
		}
		if c := y.Shape()[1]; c != out { // (a weight of other out-channels than ConvLayers[i])
			return nil, fmt.Errorf("detection: %s: %s.weight has %d output channels, want ConvLayers[%d] = %d", name, key(prefix, k+".0"), c, i, out)
		}
		if h.BatchNorm {
			if y, err = batchNorm2d(w, key(prefix, k+".1"), y, train, mask); err != nil {
				return nil, fmt.Errorf("detection: %s: %w", name, err)
			}
		}
		if y, err = nn.ReLU(y); err != nil {
			return nil, err
		}
	}
	return h.forwardFC(w, prefix, y)
}

// forwardFC is the head after its convolutions: y [R, C, H, W]
// flattened, then the linear layers, each with its ReLU.
func (h FastRCNNConvFCHead) forwardFC(w *Weights, prefix string, y *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "FastRCNNConvFCHead"
	y, err := nn.Flatten(y, 1)
	if err != nil {
		return nil, fmt.Errorf("detection: %s: %w", name, err)
	}
	for j, out := range h.FCLayers {
		if y, err = linear(w, y, key(prefix, fmt.Sprint(len(h.ConvLayers)+1+2*j)), out); err != nil {
			return nil, fmt.Errorf("detection: %s: %w", name, err)
		}
		if y, err = nn.ReLU(y); err != nil {
			return nil, err
		}
	}
	return y, nil
}

// forwardFused is forward in eval mode in the inference graph (no
// derivative): each convolution with its bias or norm and its ReLU one
// fusedConv (the norm its per-channel affine step), bitwise forward's.
func (h FastRCNNConvFCHead) forwardFused(w *Weights, prefix string, x *gorgonia.Node) (*gorgonia.Node, error) {
	const name = "FastRCNNConvFCHead"
	if err := h.checkInput(x); err != nil {
		return nil, err
	}
	g := x.Graph()
	y := x
	for i, out := range h.ConvLayers {
		k := key(prefix, fmt.Sprint(i))
		wt, err := w.Node(g, k+".0.weight")
		if err != nil {
			return nil, fmt.Errorf("detection: %s: %w", name, err)
		}
		if wt.Shape()[0] != out {
			return nil, fmt.Errorf("detection: %s: %s.0.weight has %d output channels, want ConvLayers[%d] = %d", name, k, wt.Shape()[0], i, out)
		}
		var b, scale, shift *gorgonia.Node
		if h.BatchNorm {
			scale, shift, err = batchNormEvalAffine(w, k+".1", bnEps, g)
		} else {
			b, err = w.Node(g, k+".0.bias")
		}
		if err != nil {
			return nil, fmt.Errorf("detection: %s: %w", name, err)
		}
		if y, err = fusedConv(y, wt, b, nn.Conv2dOpts{Padding: [2]int{1, 1}}, scale, shift, nil, true); err != nil {
			return nil, fmt.Errorf("detection: %s: %s.0: %w", name, k, err)
		}
	}
	return h.forwardFC(w, prefix, y)
}

// boxHead is a Faster R-CNN box head: TwoMLPHead or FastRCNNConvFCHead.
type boxHead interface {
	Init(w *Weights, prefix string, rng *rand.Rand) error
	forward(w *Weights, prefix string, x *gorgonia.Node, train bool, mask *gorgonia.Node) (*gorgonia.Node, error)
	// forwardFused is forward in eval mode as the inference graph's fused
	// ops (no derivative).
	forwardFused(w *Weights, prefix string, x *gorgonia.Node) (*gorgonia.Node, error)
	outChannels() int
	// hasNorm says whether the head has norm layers (train mode matters).
	hasNorm() bool
}

func (h FastRCNNConvFCHead) hasNorm() bool { return h.BatchNorm && len(h.ConvLayers) > 0 }

func (TwoMLPHead) hasNorm() bool { return false }

func (h TwoMLPHead) forward(w *Weights, prefix string, x *gorgonia.Node, _ bool, _ *gorgonia.Node) (*gorgonia.Node, error) {
	return h.Forward(w, prefix, x)
}

func (h TwoMLPHead) forwardFused(w *Weights, prefix string, x *gorgonia.Node) (*gorgonia.Node, error) {
	return h.Forward(w, prefix, x)
}

func (h TwoMLPHead) outChannels() int { return h.Representation }
