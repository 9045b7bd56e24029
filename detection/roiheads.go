package detection

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TwoMLPHead is torchvision's TwoMLPHead (models/detection/faster_rcnn.py):
// the pooled RoI features [R, C, 7, 7] flattened to [R, InChannels], then
// fc6 (InChannels → Representation) and fc7 (Representation →
// Representation), each nn.Linear with bias followed by ReLU. Its tensors
// live under prefix ("roi_heads.box_head") as fc6.weight [Representation,
// InChannels], fc6.bias, fc7.weight, fc7.bias.
type TwoMLPHead struct {
	// InChannels is C·7·7 (256·7·7 in fasterrcnn_resnet50_fpn).
	InChannels int
	// Representation is the layers' width (1024).
	Representation int
}

// Init adds the head's tensors to w under prefix, initialised as
// torch.nn.Linear (nn.LinearInit). Errors: sizes below 1, rng nil, a key
// already in w.
func (h TwoMLPHead) Init(w *Weights, prefix string, rng *rand.Rand) error {
	if h.InChannels < 1 || h.Representation < 1 {
		return fmt.Errorf("detection: TwoMLPHead.Init: InChannels %d and Representation %d, want at least 1", h.InChannels, h.Representation)
	}
	if err := initLinear(w, key(prefix, "fc6"), h.InChannels, h.Representation, rng); err != nil {
		return fmt.Errorf("detection: TwoMLPHead.Init: %w", err)
	}
	if err := initLinear(w, key(prefix, "fc7"), h.Representation, h.Representation, rng); err != nil {
		return fmt.Errorf("detection: TwoMLPHead.Init: %w", err)
	}
	return nil
}

// Forward builds the head on x [R, ...] (flattened from axis 1 to
// InChannels columns) with w's tensors under prefix: [R,
// Representation]. Differentiable to every order.
//
// Errors: x nil, a scalar, or not InChannels elements per row; a tensor
// missing from w or of another shape; x of another dtype than w.
func (h TwoMLPHead) Forward(w *Weights, prefix string, x *gorgonia.Node) (*gorgonia.Node, error) {
	if x == nil || x.IsScalar() {
		return nil, fmt.Errorf("detection: TwoMLPHead: x is nil or a scalar")
	}
	s := x.Shape()
	if s.TotalSize() != s[0]*h.InChannels {
		return nil, fmt.Errorf("detection: TwoMLPHead: x %v does not flatten to [%d, InChannels %d]", s, s[0], h.InChannels)
	}
	y, err := nn.Reshape(x, s[0], h.InChannels)
	if err != nil {
		return nil, fmt.Errorf("detection: TwoMLPHead: %w", err)
	}
	for _, fc := range []string{"fc6", "fc7"} {
		if y, err = linear(w, y, key(prefix, fc), h.Representation); err != nil {
			return nil, fmt.Errorf("detection: TwoMLPHead: %w", err)
		}
		if y, err = nn.ReLU(y); err != nil {
			return nil, fmt.Errorf("detection: TwoMLPHead: %w", err)
		}
	}
	return y, nil
}

// FastRCNNPredictor is torchvision's FastRCNNPredictor: cls_score, an
// nn.Linear InChannels → NumClasses (the background class 0 included), and
// bbox_pred, an nn.Linear InChannels → 4·NumClasses, under prefix
// ("roi_heads.box_predictor").
type FastRCNNPredictor struct {
	InChannels, NumClasses int
}

// Init adds the predictor's tensors to w under prefix, initialised as
// torch.nn.Linear. Errors: sizes below 1, rng nil, a key already in w.
func (p FastRCNNPredictor) Init(w *Weights, prefix string, rng *rand.Rand) error {
	if p.InChannels < 1 || p.NumClasses < 1 {
		return fmt.Errorf("detection: FastRCNNPredictor.Init: InChannels %d and NumClasses %d, want at least 1", p.InChannels, p.NumClasses)
	}
	if err := initLinear(w, key(prefix, "cls_score"), p.InChannels, p.NumClasses, rng); err != nil {
		return fmt.Errorf("detection: FastRCNNPredictor.Init: %w", err)
	}
	if err := initLinear(w, key(prefix, "bbox_pred"), p.InChannels, 4*p.NumClasses, rng); err != nil {
		return fmt.Errorf("detection: FastRCNNPredictor.Init: %w", err)
	}
	return nil
}

// Forward builds the predictor on x [R, InChannels]: the class logits [R,
// NumClasses] and the box regression [R, 4·NumClasses] (per class the
// deltas of BoxCoder(10, 10, 5, 5)). Differentiable to every order.
//
// Errors: x nil or not [R, InChannels]; a tensor missing from w or of
// another shape; x of another dtype than w.
func (p FastRCNNPredictor) Forward(w *Weights, prefix string, x *gorgonia.Node) (classLogits, boxRegression *gorgonia.Node, err error) {
	if x == nil || x.Shape().Dims() != 2 || x.Shape()[1] != p.InChannels {
		return nil, nil, fmt.Errorf("detection: FastRCNNPredictor: x must be [R, %d]", p.InChannels)
	}
	if classLogits, err = linear(w, x, key(prefix, "cls_score"), p.NumClasses); err != nil {
		return nil, nil, fmt.Errorf("detection: FastRCNNPredictor: %w", err)
	}
	if boxRegression, err = linear(w, x, key(prefix, "bbox_pred"), 4*p.NumClasses); err != nil {
		return nil, nil, fmt.Errorf("detection: FastRCNNPredictor: %w", err)
	}
	return classLogits, boxRegression, nil
}

// initLinear adds an nn.Linear(in, out) with bias under k, drawn as torch
// draws it.
func initLinear(w *Weights, k string, in, out int, rng *rand.Rand) error {
	if rng == nil {
		return fmt.Errorf("rng is nil")
	}
	wt, b, err := nn.LinearInit(in, out, true, w.Dtype(), rng)
	if err != nil {
		return err
	}
	for _, t := range []struct {
		name  string
		v     tensor.Tensor
		shape []int
	}{{".weight", wt, []int{out, in}}, {".bias", b, []int{out}}} {
		d, err := w.Add(k+t.name, true, t.shape...)
		if err != nil {
			return err
		}
		switch dst := d.Data().(type) {
		case []float32:
			copy(dst, t.v.Data().([]float32))
		case []float64:
			copy(dst, t.v.Data().([]float64))
		}
	}
	return nil
}

// linear is nn.Linear(x, weight, bias) with the tensors under k, weight
// [out, x's columns].
func linear(w *Weights, x *gorgonia.Node, k string, out int) (*gorgonia.Node, error) {
	g := x.Graph()
	wt, err := w.Node(g, k+".weight")
	if err != nil {
		return nil, err
	}
	if want := (tensor.Shape{out, x.Shape()[1]}); !wt.Shape().Eq(want) {
		return nil, fmt.Errorf("%s.weight has shape %v, want %v", k, wt.Shape(), want)
	}
	b, err := w.Node(g, k+".bias")
	if err != nil {
		return nil, err
	}
	y, err := nn.Linear(x, wt, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	return y, nil
}

// RoIHeadsConfig is the detection settings of torchvision's RoIHeads
// (postprocess_detections): the box coder's weights, and per image the
// class probabilities above ScoreThresh, boxes at least 0.01 pixels wide
// and high, batched NMS per class at NMSThresh, the first
// DetectionsPerImg kept.
type RoIHeadsConfig struct {
	// BoxWeights are the box coder's (10, 10, 5, 5).
	BoxWeights [4]float64
	// ScoreThresh (0.05), NMSThresh (0.5), DetectionsPerImg (100):
	// torchvision's box_score_thresh, box_nms_thresh,
	// box_detections_per_img.
	ScoreThresh      float64
	NMSThresh        float64
	DetectionsPerImg int
	// Training: proposals (and ground-truth boxes) of IoU >= FgIoUThresh
	// (0.5) with a box take its class, those below BgIoUThresh (0.5) the
	// background; BatchSizePerImage (512) of them sampled per image, at
	// most PositiveFraction (0.25) of another class than the background.
	FgIoUThresh, BgIoUThresh float64
	BatchSizePerImage        int
	PositiveFraction         float64
}

// DefaultRoIHeadsConfig is fasterrcnn_resnet50_fpn's: weights (10, 10, 5,
// 5), score threshold 0.05, NMS at 0.5, 100 detections per image; for
// training, IoU thresholds 0.5 and 0.5, 512 samples per image, a quarter
// of them positives at most.
func DefaultRoIHeadsConfig() RoIHeadsConfig {
	return RoIHeadsConfig{BoxWeights: [4]float64{10, 10, 5, 5}, ScoreThresh: 0.05, NMSThresh: 0.5, DetectionsPerImg: 100,
		FgIoUThresh: 0.5, BgIoUThresh: 0.5, BatchSizePerImage: 512, PositiveFraction: 0.25}
}

// FastRCNNPostprocessDetections is RoIHeads.postprocess_detections:
// classLogits [R, K] and boxRegression [R, 4·K] of the proposals (R =
// Σ P_i rows, image 0's first, proposals[i] [P_i, 4] each) to each image's
// detections: the boxes decoded per class by BoxCoder(cfg.BoxWeights)
// against their proposal and clipped to imageSizes[i] (height, width),
// softmax probabilities, the background class 0 dropped, then (class
// after class within a proposal, proposal after proposal) those of
// probability > ScoreThresh, then boxes of sides >= 0.01, batched NMS by
// class, the first DetectionsPerImg. Labels are class indices 1..K−1.
//
// Errors name the argument: no images, negative sizes, shapes or dtypes
// other than these, bad settings.
func FastRCNNPostprocessDetections(cfg RoIHeadsConfig, classLogits, boxRegression *tensor.Dense, proposals []*tensor.Dense, imageSizes [][2]int) ([]Detections, error) {
	const op = "FastRCNNPostprocessDetections"
	if err := cfg.check(op); err != nil {
		return nil, err
	}
	n := len(imageSizes)
	if n == 0 || len(proposals) != n {
		return nil, fmt.Errorf("detection: %s: %d proposal lists for %d image sizes, want the same number > 0", op, len(proposals), n)
	}
	r := 0
	for i, p := range proposals {
		s, err := checkValue(op, fmt.Sprintf("proposals[%d]", i), "[P, 4]", p, -1, 4)
		if err != nil {
			return nil, err
		}
		if imageSizes[i][0] < 0 || imageSizes[i][1] < 0 {
			return nil, fmt.Errorf("detection: %s: imageSizes[%d] = %v has a negative side", op, i, imageSizes[i])
		}
		r += s[0]
	}
	s, err := checkValue(op, "classLogits", "[R, K]", classLogits, r, -1)
	if err != nil {
		return nil, err
	}
	if _, err := checkValue(op, "boxRegression", "[R, 4·K]", boxRegression, r, 4*s[1]); err != nil {
		return nil, err
	}
	dt := classLogits.Dtype()
	if boxRegression.Dtype() != dt {
		return nil, fmt.Errorf("detection: %s: boxRegression is %v, classLogits %v", op, boxRegression.Dtype(), dt)
	}
	for i, p := range proposals {
		if p.Dtype() != dt {
			return nil, fmt.Errorf("detection: %s: proposals[%d] is %v, classLogits %v", op, i, p.Dtype(), dt)
		}
	}
	counts := make([]int, n)
	for i, p := range proposals {
		counts[i] = p.Shape()[0]
	}
	if dt == tensor.Float32 {
		return fastRCNNDetections(cfg, valueData[float32](classLogits), valueData[float32](boxRegression), levelData[float32](proposals), counts, s[1], imageSizes), nil
	}
	return fastRCNNDetections(cfg, valueData[float64](classLogits), valueData[float64](boxRegression), levelData[float64](proposals), counts, s[1], imageSizes), nil
}

// check checks the detection settings.
func (c RoIHeadsConfig) check(opName string) error {
	for i, w := range c.BoxWeights {
		if w == 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("detection: %s: RoIHeadsConfig.BoxWeights[%d] = %v, want a finite non-zero weight", opName, i, w)
		}
	}
	switch {
	case math.IsNaN(c.ScoreThresh):
		return fmt.Errorf("detection: %s: RoIHeadsConfig.ScoreThresh is NaN", opName)
	case !(c.NMSThresh >= 0):
		return fmt.Errorf("detection: %s: RoIHeadsConfig.NMSThresh %v, want >= 0", opName, c.NMSThresh)
	case c.DetectionsPerImg < 0:
		return fmt.Errorf("detection: %s: RoIHeadsConfig.DetectionsPerImg %d, want >= 0", opName, c.DetectionsPerImg)
	}
	return nil
}

// fastRCNNDetections is FastRCNNPostprocessDetections on checked data:
// logits [R, k], regression [R, 4k], proposals[i] [counts[i], 4] (rows of
// image i start at Σ_{j<i} counts[j] in logits and regression).
func fastRCNNDetections[T floatType](cfg RoIHeadsConfig, logits, regression []T, proposals [][]T, counts []int, k int, imageSizes [][2]int) []Detections {
	coder := NewBoxCoder(cfg.BoxWeights)
	out := make([]Detections, len(imageSizes))
	row := 0
	probs := make([]T, k)
	thr, minSize := T(cfg.ScoreThresh), T(1e-2)
	for i, size := range imageSizes {
		p := counts[i]
		boxes := clipBoxes(decodeBoxes(coder, regression[row*4*k:(row+p)*4*k], proposals[i], p, 4*k), size)
		var kb, ks []T
		var kl []int
		for r := 0; r < p; r++ {
			softmax(probs, logits[(row+r)*k:][:k])
			for c := 1; c < k; c++ {
				b := boxes[(r*k+c)*4:][:4]
				if !(probs[c] > thr) || !(b[2]-b[0] >= minSize && b[3]-b[1] >= minSize) {
					continue
				}
				kb, ks, kl = append(kb, b...), append(ks, probs[c]), append(kl, c)
			}
		}
		row += p
		keep := batchedNMS(kb, ks, kl, cfg.NMSThresh)
		out[i] = keptDetections(keep[:min(len(keep), cfg.DetectionsPerImg)], kb, ks, kl)
	}
	return out
}

// softmax writes torch's CPU softmax of x into p: exp(x − max(x)), each
// times 1/Σ (the reciprocal, as ATen's vectorised kernel).
func softmax[T floatType](p, x []T) {
	m := T(math.Inf(-1))
	for _, v := range x {
		if v > m || math.IsNaN(float64(v)) {
			m = v
		}
	}
	var sum T
	for j, v := range x {
		p[j] = exp(v - m)
		sum += p[j]
	}
	inv := 1 / sum
	for j := range p {
		p[j] *= inv
	}
}
