package detection

import (
	"fmt"
	"math"
	"slices"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/tensor"
)

// Detections is one image's detections, torchvision's {"boxes",
// "scores", "labels"}: Boxes [D, 4] (x1, y1, x2, y2, pixels of the image
// the heads saw until GeneralizedRCNNTransform.Postprocess maps them
// back), Scores [D] in the model's dtype, in decreasing order, and the D
// class indices.
type Detections struct {
	Boxes  *tensor.Dense
	Scores *tensor.Dense
	Labels []int
}

// PostprocessConfig is the selection settings of RetinaNet's and FCOS's
// postprocess_detections: per level, the scores above ScoreThresh, of
// those the TopkCandidates best, then batched NMS over all levels at
// NMSThresh (IoU), keeping at most DetectionsPerImg.
type PostprocessConfig struct {
	ScoreThresh      float64
	NMSThresh        float64
	DetectionsPerImg int
	TopkCandidates   int
}

// RetinaNetPostprocessConfig is torchvision's RetinaNet defaults:
// score_thresh 0.05, nms_thresh 0.5, detections_per_img 300,
// topk_candidates 1000.
func RetinaNetPostprocessConfig() PostprocessConfig {
	return PostprocessConfig{ScoreThresh: 0.05, NMSThresh: 0.5, DetectionsPerImg: 300, TopkCandidates: 1000}
}

// FCOSPostprocessConfig is torchvision's FCOS defaults: score_thresh
// 0.2, nms_thresh 0.6, detections_per_img 100, topk_candidates 1000.
func FCOSPostprocessConfig() PostprocessConfig {
	return PostprocessConfig{ScoreThresh: 0.2, NMSThresh: 0.6, DetectionsPerImg: 100, TopkCandidates: 1000}
}

// check checks the settings.
func (c PostprocessConfig) check(opName string) error {
	switch {
	case math.IsNaN(c.ScoreThresh):
		return fmt.Errorf("detection: %s: ScoreThresh is NaN", opName)
	case !(c.NMSThresh >= 0):
		return fmt.Errorf("detection: %s: NMSThresh %v, want >= 0", opName, c.NMSThresh)
	case c.DetectionsPerImg < 0 || c.TopkCandidates < 0:
		return fmt.Errorf("detection: %s: DetectionsPerImg %d and TopkCandidates %d, want >= 0", opName, c.DetectionsPerImg, c.TopkCandidates)
	}
	return nil
}

// headLevels checks the per-level head outputs: first[l] [N, HWA_l, K_l]
// (K_l = firstCols unless it is -1), each of others[j][l] [N, HWA_l,
// cols[j]] and anchors[l] [HWA_l, 4], one dtype, N = len(imageSizes) >=
// 1, sizes >= 0; errors call first firstName ("clsLogits").
func headLevels(opName string, imageSizes [][2]int, firstName string, firstCols int, clsLogits, anchors []*tensor.Dense, names []string, cols []int, others ...[]*tensor.Dense) error {
	n := len(imageSizes)
	if n == 0 {
		return fmt.Errorf("detection: %s: no images (imageSizes is empty)", opName)
	}
	for i, s := range imageSizes {
		if s[0] < 0 || s[1] < 0 {
			return fmt.Errorf("detection: %s: imageSizes[%d] = %v has a negative side", opName, i, s)
		}
	}
	levels := len(clsLogits)
	if levels == 0 || len(anchors) != levels {
		return fmt.Errorf("detection: %s: %d levels of %s and %d of anchors, want the same number > 0", opName, levels, firstName, len(anchors))
	}
	for j, o := range others {
		if len(o) != levels {
			return fmt.Errorf("detection: %s: %d levels of %s for %d of %s", opName, len(o), names[j], levels, firstName)
		}
	}
	dt := tensor.Dtype{}
	for l := 0; l < levels; l++ {
		want := "[N, HWA, K]"
		if firstCols >= 0 {
			want = fmt.Sprintf("[N, HWA, %d]", firstCols)
		}
		s, err := checkValue(opName, fmt.Sprintf("%s[%d]", firstName, l), want, clsLogits[l], n, -1, firstCols)
		if err != nil {
			return err
		}
		if l == 0 {
			dt = clsLogits[0].Dtype()
		}
		ts := []*tensor.Dense{clsLogits[l], anchors[l]}
		if _, err := checkValue(opName, fmt.Sprintf("anchors[%d]", l), "[HWA, 4]", anchors[l], s[1], 4); err != nil {
			return err
		}
		for j, o := range others {
			if _, err := checkValue(opName, fmt.Sprintf("%s[%d]", names[j], l), fmt.Sprintf("[N, HWA, %d]", cols[j]), o[l], n, s[1], cols[j]); err != nil {
				return err
			}
			ts = append(ts, o[l])
		}
		for _, t := range ts {
			if t.Dtype() != dt {
				return fmt.Errorf("detection: %s: level %d holds dtype %v, %s[0] %v", opName, l, t.Dtype(), firstName, dt)
			}
		}
	}
	return nil
}

// RetinaNetPostprocessDetections is RetinaNet.postprocess_detections: per
// image i and level l, scores sigmoid(clsLogits[l][i]) flattened
// (anchor-major: index a·K + k), those > ScoreThresh (compared in the
// dtype) kept, the TopkCandidates best by torch.topk (torch's CPU order
// among equal scores: see topk.go), anchor a and label k of each, its box
// coder.DecodeSingle(bboxRegression[l][i][a], anchors[l][a]) clipped to
// imageSizes[i] (height, width); then over the levels gops.BatchedNMS by
// label at NMSThresh and the first DetectionsPerImg kept. clsLogits[l] is
// [N, HWA_l, K], bboxRegression[l] [N, HWA_l, 4] and anchors[l] [HWA_l, 4]
// (the same for every image, as AnchorGenerator.Anchors' levels), one
// dtype; N = len(imageSizes). Errors name the argument: no images,
// negative sizes, level counts differing, shapes or dtypes other than
// these, bad settings (NaN thresholds, negative counts, bad weights).
func RetinaNetPostprocessDetections(cfg PostprocessConfig, coder BoxCoder, clsLogits, bboxRegression, anchors []*tensor.Dense, imageSizes [][2]int) ([]Detections, error) {
	const op = "RetinaNetPostprocessDetections"
	if err := cfg.check(op); err != nil {
		return nil, err
	}
	if err := coder.checkWeights(op); err != nil {
		return nil, err
	}
	if err := headLevels(op, imageSizes, "clsLogits", -1, clsLogits, anchors, []string{"bboxRegression"}, []int{4}, bboxRegression); err != nil {
		return nil, err
	}
	if clsLogits[0].Dtype() == tensor.Float32 {
		return postprocess[float32](cfg, retinaLevel[float32](coder), clsLogits, bboxRegression, nil, anchors, imageSizes)
	}
	return postprocess[float64](cfg, retinaLevel[float64](coder), clsLogits, bboxRegression, nil, anchors, imageSizes)
}

// FCOSPostprocessDetections is FCOS.postprocess_detections: as
// RetinaNetPostprocessDetections with scores
// √(sigmoid(clsLogits)·sigmoid(bboxCtrness)) (bboxCtrness[l] [N, HWA_l, 1]
// shared by the K classes) and boxes coder.Decode (BoxLinearCoder). Errors
// as RetinaNetPostprocessDetections', and bboxCtrness's.
func FCOSPostprocessDetections(cfg PostprocessConfig, coder BoxLinearCoder, clsLogits, bboxRegression, bboxCtrness, anchors []*tensor.Dense, imageSizes [][2]int) ([]Detections, error) {
	const op = "FCOSPostprocessDetections"
	if err := cfg.check(op); err != nil {
		return nil, err
	}
	if err := headLevels(op, imageSizes, "clsLogits", -1, clsLogits, anchors, []string{"bboxRegression", "bboxCtrness"}, []int{4, 1}, bboxRegression, bboxCtrness); err != nil {
		return nil, err
	}
	if clsLogits[0].Dtype() == tensor.Float32 {
		return postprocess[float32](cfg, fcosLevel[float32](coder), clsLogits, bboxRegression, bboxCtrness, anchors, imageSizes)
	}
	return postprocess[float64](cfg, fcosLevel[float64](coder), clsLogits, bboxRegression, bboxCtrness, anchors, imageSizes)
}

// levelRule is a model's part of the per-level selection: scores of the
// flat logits [HWA·K] (ctr [HWA] for FCOS, else nil) into scores, and the
// decoded boxes [n, 4] of the gathered codes and anchors [n, 4]. scores may
// write 0 instead of a score that cannot exceed thr (a score threshold
// >= 0), so the selection (score > thr) is the same.
type levelRule[T floatType] struct {
	scores func(scores, logits, ctr []T, k int, thr float64)
	decode func(codes, anchors []T) []T
}

// retinaLevel is RetinaNet's: sigmoid scores, BoxCoder decoding.
func retinaLevel[T floatType](c BoxCoder) levelRule[T] {
	return levelRule[T]{
		scores: func(s, logits, _ []T, _ int, thr float64) {
			cut := T(logitCut(thr))
			for i, v := range logits {
				if v < cut {
					s[i] = 0
					continue
				}
				s[i] = sigmoid(v)
			}
		},
		decode: func(codes, anchors []T) []T { return decodeBoxes(c, codes, anchors, len(codes)/4, 4) },
	}
}

// fcosLevel is FCOS's: √(sigmoid(logit)·sigmoid(centerness)) scores,
// BoxLinearCoder decoding.
func fcosLevel[T floatType](c BoxLinearCoder) levelRule[T] {
	return levelRule[T]{
		scores: func(s, logits, ctr []T, k int, thr float64) {
			// √(σ(v)·σ(c)) <= √σ(v): below thr wherever σ(v) <= thr².
			cut := T(logitCut(thr * thr))
			if thr <= 0 {
				cut = T(math.Inf(-1))
			}
			for i, v := range logits {
				if v < cut {
					s[i] = 0
					continue
				}
				s[i] = T(math.Sqrt(float64(sigmoid(v) * sigmoid(ctr[i/k]))))
			}
		},
		decode: func(codes, anchors []T) []T { return linearDecode(c, codes, anchors, len(codes)/4) },
	}
}

// logitCut is a logit below which the sigmoid, as sigmoid computes it,
// is at most p (0 < p < 0.99), −Inf for no cut: log(p/(1 − p)), the exact
// bound, less 0.01, far more than the sigmoid's rounding moves it
// (~1e-7 relative in float32: under 1e-4 in the logit for p <= 0.99);
// the computed sigmoid is monotone, so every logit below the cut scores
// at most p. It spares the postprocessing a sigmoid per class and anchor
// (RetinaNet: ~4.5M a 512×512 image) where all but a few are below the
// threshold.
func logitCut(p float64) float64 {
	if !(p > 0 && p < 0.99) {
		return math.Inf(-1)
	}
	return math.Log(p/(1-p)) - 0.01
}

// sigmoid is torch's CPU sigmoid in T: 1/(1 + exp(−x)).
func sigmoid[T floatType](x T) T { return 1 / (1 + exp(-x)) }

// postprocess is the per-image selection of checked inputs.
func postprocess[T floatType](cfg PostprocessConfig, rule levelRule[T], clsLogits, bboxRegression, bboxCtrness, anchors []*tensor.Dense, imageSizes [][2]int) ([]Detections, error) {
	levels := len(clsLogits)
	logits, regs, ctrs, anch := make([][]T, levels), make([][]T, levels), make([][]T, levels), make([][]T, levels)
	for l := range clsLogits {
		logits[l], regs[l], anch[l] = valueData[T](clsLogits[l]), valueData[T](bboxRegression[l]), valueData[T](anchors[l])
		if bboxCtrness != nil {
			ctrs[l] = valueData[T](bboxCtrness[l])
		}
	}
	n := len(imageSizes)
	out := make([]Detections, n)
	thr := T(cfg.ScoreThresh)
	var buf []T // the scores of one level and image, reused
	for i, size := range imageSizes {
		var boxes, scores []T
		var labels []int
		for l := range clsLogits {
			s := clsLogits[l].Shape()
			hwa, k := s[1], s[2]
			lg := logits[l][i*hwa*k:][:hwa*k]
			var ctr []T
			if ctrs[l] != nil {
				ctr = ctrs[l][i*hwa:][:hwa]
			}
			if cap(buf) < len(lg) {
				buf = make([]T, len(lg))
			}
			all := buf[:len(lg)] // every element written by scores
			rule.scores(all, lg, ctr, k, cfg.ScoreThresh)
			var kept []int
			var keptScores []T
			for j, v := range all {
				if v > thr {
					kept, keptScores = append(kept, j), append(keptScores, v)
				}
			}
			best := topk(keptScores, min(cfg.TopkCandidates, len(kept)))
			codes, anchorRows := make([]T, 0, 4*len(best)), make([]T, 0, 4*len(best))
			for _, b := range best {
				j := kept[b]
				a := j / k
				scores, labels = append(scores, keptScores[b]), append(labels, j%k)
				codes = append(codes, regs[l][(i*hwa+a)*4:][:4]...)
				anchorRows = append(anchorRows, anch[l][a*4:][:4]...)
			}
			boxes = append(boxes, clipBoxes(rule.decode(codes, anchorRows), size)...)
		}
		d := len(scores)
		keep, err := gops.BatchedNMS(newValue(boxes, d, 4), newValue(scores, d), labels, cfg.NMSThresh)
		if err != nil {
			return nil, fmt.Errorf("detection: image %d: %w", i, err)
		}
		if d > 1000 {
			keep = vanillaOrder(keep, scores)
		}
		out[i] = keptDetections(keep[:min(len(keep), cfg.DetectionsPerImg)], boxes, scores, labels)
	}
	return out, nil
}

// keptDetections are the detections keep (indices) of the flat boxes
// [K, 4], scores [K] and labels [K], in keep's order.
func keptDetections[T floatType](keep []int, boxes, scores []T, labels []int) Detections {
	kb, ks, kl := make([]T, 4*len(keep)), make([]T, len(keep)), make([]int, len(keep))
	for j, x := range keep {
		copy(kb[4*j:4*j+4], boxes[4*x:4*x+4])
		ks[j], kl[j] = scores[x], labels[x]
	}
	return Detections{Boxes: newValue(kb, len(keep), 4), Scores: newValue(ks, len(keep)), Labels: kl}
}

// vanillaOrder puts the indices kept by batched NMS of more than 1000
// boxes in torchvision's order there (_batched_nms_vanilla: the kept
// indices increasing, then torch's CPU sort by descending score, libstdc++'s
// unstable std::sort), which gops.BatchedNMS does not promise among equal
// scores.
func vanillaOrder[T floatType](keep []int, scores []T) []int {
	q := make([]topkElem, len(keep))
	sorted := append([]int(nil), keep...)
	slices.Sort(sorted)
	for j, x := range sorted {
		q[j] = topkElem{float64(scores[x]), x}
	}
	stlSort(q)
	for j := range q {
		sorted[j] = q[j].i
	}
	return sorted
}

// clipBoxes is torchvision's clip_boxes_to_image on flat boxes [K, 4] in
// place: x clamped to [0, width], y to [0, height] (size is (height,
// width)); a NaN coordinate stays NaN.
func clipBoxes[T floatType](b []T, size [2]int) []T {
	h, w := T(size[0]), T(size[1])
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+2] = min(max(b[i], 0), w), min(max(b[i+2], 0), w)
		b[i+1], b[i+3] = min(max(b[i+1], 0), h), min(max(b[i+3], 0), h)
	}
	return b
}
