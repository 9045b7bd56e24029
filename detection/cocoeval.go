package detection

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"
)

// COCO's box evaluation, pycocotools' COCOeval(cocoGt, cocoDt, "bbox"):
// evaluate (per image and category: IoUs, greedy matching at each IoU
// threshold and area range), accumulate (precision at 101 recall points,
// recall, per category, area range and maximum number of detections) and
// summarize (the 12 numbers). Images are matched by index: detections[i]
// and groundTruth[i] are one image, whose COCO image id is i.

// GroundTruth is one image's annotations for Evaluate, COCO's "bbox",
// "category_id", "iscrowd" and "area": Boxes [G, 4] (x1, y1, x2, y2 in
// the detections' pixels: the original images' for Forward's, not those
// of the transformed batch that Trainer.Step's targets use; float32 or
// float64), the G category ids (Labels, >= 0), whether each is a crowd
// region (IsCrowd: nil for none; a detection matched to a crowd region
// is neither a true nor a false positive, and a crowd region may absorb
// any number of detections) and each one's area in pixels² that places
// it in an area range (Area: nil for the box areas (x2−x1)·(y2−y1);
// COCO's files hold the segmentation mask's area).
// Boxes may be nil when Labels is empty.
type GroundTruth struct {
	Boxes   *tensor.Dense
	Labels  []int
	IsCrowd []bool
	Area    []float64
}

// COCOParams is pycocotools' Params(iouType="bbox") for Evaluate.
// IoUThrs (T values), RecThrs (R), MaxDets (M: at least 3, distinct;
// evaluation sorts them; the last one caps each image's detections per
// category) and AreaRng (A ranges [min, max] of areas in pixels²,
// inclusive, with distinct labels AreaRngLbl: summarize looks up "all",
// "small", "medium" and "large") as COCOeval.params has them. CatIDs is
// the K evaluated category ids (params.catIds; evaluation sorts them and
// drops repeats, or with UseCats false keeps their order, which orders
// the pooled boxes, and fails on repeats); nil: the labels that occur in the ground truth (pycocotools
// takes the ground-truth file's category list: a category without
// ground truth only adds precision entries of −1, which summarize skips,
// so the numbers are the same). Detections and ground truth of other
// labels are left out. UseCats false pools the categories (params.useCats
// = 0: K = 1, category labels ignored, as in proposal scoring).
type COCOParams struct {
	IoUThrs    []float64
	RecThrs    []float64
	MaxDets    []int
	AreaRng    [][2]float64
	AreaRngLbl []string
	CatIDs     []int
	UseCats    bool
}

// DefaultCOCOParams is pycocotools' defaults for iouType "bbox": IoUThrs
// np.linspace(.5, .95, 10), RecThrs np.linspace(0, 1, 101), MaxDets
// [1, 10, 100], AreaRng all [0, 1e10], small [0, 32²], medium [32², 96²]
// and large [96², 1e10], CatIDs nil (the ground truth's labels), UseCats.
func DefaultCOCOParams() COCOParams {
	return COCOParams{
		IoUThrs:    linspace(0.5, 0.95, 10),
		RecThrs:    linspace(0, 1, 101),
		MaxDets:    []int{1, 10, 100},
		AreaRng:    [][2]float64{{0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}},
		AreaRngLbl: []string{"all", "small", "medium", "large"},
		UseCats:    true,
	}
}

// COCOOption changes the COCOParams that Evaluate starts from
// (DefaultCOCOParams); any func(*COCOParams) is one; nil changes nothing.
type COCOOption func(*COCOParams)

// WithCatIDs sets the evaluated category ids (params.catIds), instead of
// the labels that occur in the ground truth; with no ids, no category is
// evaluated (every number −1, as params.catIds = []).
func WithCatIDs(ids ...int) COCOOption {
	return func(p *COCOParams) { p.CatIDs = append([]int{}, ids...) }
}

// WithUseCats sets params.useCats: false evaluates every category as one.
func WithUseCats(use bool) COCOOption {
	return func(p *COCOParams) { p.UseCats = use }
}

// COCOEval is what COCOeval's evaluate, accumulate and summarize give.
// Stats is summarize's 12 numbers, in its order: AP (IoU .50:.95, area
// all, maxDets 100), AP50, AP75 and APs, APm, APl (at MaxDets[2]), AR1,
// AR10, AR100 (at MaxDets[0], [1], [2]) and ARs, ARm, ARl (at MaxDets[2]);
// −1 where there is nothing to average (no ground truth in the range).
// Precision and Scores (the score of the detection where each recall
// threshold is reached) are eval["precision"] and eval["scores"], row-major
// [T, R, K, A, M] (Shape; element [t, r, k, a, m] at
// (((t·R + r)·K + k)·A + a)·M + m), Recall eval["recall"], [T, K, A, M];
// −1 where category k has no ground truth in area range a. Params is the
// parameters evaluated (CatIDs and MaxDets sorted).
type COCOEval struct {
	Params    COCOParams
	Stats     [12]float64
	Precision []float64
	Recall    []float64
	Scores    []float64
}

// Shape is [T, R, K, A, M]: the numbers of IoU thresholds, recall
// thresholds, categories (1 when UseCats is false), area ranges and
// MaxDets, the axes of Precision and Scores (Recall's without R).
func (e *COCOEval) Shape() [5]int {
	p := &e.Params
	k := len(p.CatIDs)
	if !p.UseCats {
		k = 1
	}
	return [5]int{len(p.IoUThrs), len(p.RecThrs), k, len(p.AreaRng), len(p.MaxDets)}
}

// Evaluate is pycocotools' COCOeval(cocoGt, cocoDt, "bbox") with
// evaluate(), accumulate() and summarize(), for detections[i] and
// groundTruth[i] the detections (Boxes [D, 4] x1, y1, x2, y2 in pixels,
// Scores [D], Labels: the category ids) and annotations of image i; a
// detection's area is its box's. opts change DefaultCOCOParams. Boxes
// are turned into COCO's x, y, w, h and compared as maskUtils.iou does
// (IoU of a crowd region: intersection over the detection's area).
// Errors: slices of different lengths, boxes not [D, 4] or [G, 4],
// Scores not [D], Labels, IsCrowd or Area of the wrong length, NaN or
// infinite boxes, scores or areas, x2 < x1 or y2 < y1, negative labels,
// and unusable parameters. Empty inputs give Stats of −1. The categories
// are COCOParams.CatIDs, by default the labels in groundTruth. As in
// COCOeval, precision is tp/(tp + fp + 2⁻⁵²): a category whose only
// ground-truth box is found first has AP 1 − 2⁻⁵², not 1.
func Evaluate(detections []Detections, groundTruth []GroundTruth, opts ...COCOOption) (*COCOEval, error) {
	p := DefaultCOCOParams()
	for _, o := range opts {
		if o != nil {
			o(&p)
		}
	}
	p.IoUThrs, p.RecThrs, p.AreaRng = slices.Clone(p.IoUThrs), slices.Clone(p.RecThrs), slices.Clone(p.AreaRng)
	p.AreaRngLbl = slices.Clone(p.AreaRngLbl)
	if len(detections) != len(groundTruth) {
		return nil, fmt.Errorf("detection: Evaluate: %d images of detections and %d of groundTruth", len(detections), len(groundTruth))
	}
	dets := make([]cocoImage, len(detections))
	gts := make([]cocoImage, len(groundTruth))
	for i := range detections {
		var err error
		if dets[i], err = cocoDetections(i, detections[i]); err != nil {
			return nil, err
		}
		if gts[i], err = cocoGroundTruth(i, groundTruth[i]); err != nil {
			return nil, err
		}
	}
	catIDsDefault := p.CatIDs == nil
	if catIDsDefault {
		for _, g := range gts {
			p.CatIDs = append(p.CatIDs, g.labels...)
		}
	}
	if p.UseCats || catIDsDefault {
		p.CatIDs = slices.Compact(slices.Sorted(slices.Values(p.CatIDs)))
	} else {
		p.CatIDs = slices.Clone(p.CatIDs)
	}
	p.MaxDets = slices.Sorted(slices.Values(p.MaxDets)) // a copy
	if err := p.check(); err != nil {
		return nil, err
	}
	e := &COCOEval{Params: p}
	e.accumulate(evaluateImages(&p, dets, gts))
	e.summarize()
	return e, nil
}

// cocoImage is one image's boxes as COCO holds them: x, y, w, h per box,
// with its label, score (detections), crowd flag and area.
type cocoImage struct {
	xywh   []float64
	labels []int
	scores []float64
	crowd  []bool
	area   []float64
}

// cocoDetections checks image i's detections and converts them.
func cocoDetections(i int, d Detections) (cocoImage, error) {
	what := fmt.Sprintf("detections[%d]", i)
	c, err := cocoBoxes(what, d.Boxes, d.Labels, "D")
	if err != nil {
		return c, err
	}
	if c.scores, err = cocoValues(what+".Scores", "[D]", d.Scores, len(d.Labels)); err != nil {
		return c, err
	}
	for j, s := range c.scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return c, fmt.Errorf("detection: Evaluate: %s.Scores[%d] is %v", what, j, s)
		}
	}
	c.area = boxAreas(c.xywh)
	return c, nil
}

// cocoGroundTruth checks image i's annotations and converts them.
func cocoGroundTruth(i int, g GroundTruth) (cocoImage, error) {
	what := fmt.Sprintf("groundTruth[%d]", i)
	c, err := cocoBoxes(what, g.Boxes, g.Labels, "G")
	if err != nil {
		return c, err
	}
	n := len(g.Labels)
	c.crowd = make([]bool, n)
	if g.IsCrowd != nil {
		if len(g.IsCrowd) != n {
			return c, fmt.Errorf("detection: Evaluate: %s.IsCrowd has %d values for %d labels", what, len(g.IsCrowd), n)
		}
		copy(c.crowd, g.IsCrowd)
	}
	if g.Area == nil {
		c.area = boxAreas(c.xywh)
		return c, nil
	}
	if len(g.Area) != n {
		return c, fmt.Errorf("detection: Evaluate: %s.Area has %d values for %d labels", what, len(g.Area), n)
	}
	for j, a := range g.Area {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return c, fmt.Errorf("detection: Evaluate: %s.Area[%d] is %v", what, j, a)
		}
	}
	c.area = slices.Clone(g.Area)
	return c, nil
}

// cocoBoxes checks boxes [n, 4] (x1, y1, x2, y2; nil when there are no
// labels) and labels, and returns the boxes as x, y, w, h.
func cocoBoxes(what string, boxes *tensor.Dense, labels []int, n string) (cocoImage, error) {
	var c cocoImage
	b, err := cocoValues(what+".Boxes", "["+n+", 4]", boxes, len(labels), 4)
	if err != nil {
		return c, err
	}
	c.xywh = make([]float64, len(b))
	for j := 0; j < len(b); j += 4 {
		x1, y1, x2, y2 := b[j], b[j+1], b[j+2], b[j+3]
		for _, v := range b[j : j+4] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return c, fmt.Errorf("detection: Evaluate: %s.Boxes[%d] = %v is not finite", what, j/4, b[j:j+4])
			}
		}
		if x2 < x1 || y2 < y1 {
			return c, fmt.Errorf("detection: Evaluate: %s.Boxes[%d] = %v has x2 < x1 or y2 < y1", what, j/4, b[j:j+4])
		}
		c.xywh[j], c.xywh[j+1], c.xywh[j+2], c.xywh[j+3] = x1, y1, x2-x1, y2-y1
	}
	for j, l := range labels {
		if l < 0 {
			return c, fmt.Errorf("detection: Evaluate: %s.Labels[%d] = %d is negative", what, j, l)
		}
	}
	c.labels = labels
	return c, nil
}

// cocoValues is t's elements as float64, t a float32 or float64 tensor of
// shape [n] or [n, cols]; nil when t is nil and n is 0.
func cocoValues(what, want string, t *tensor.Dense, n int, cols ...int) ([]float64, error) {
	if t == nil && n == 0 {
		return nil, nil
	}
	if _, err := checkValue("Evaluate", what, want, t, append([]int{n}, cols...)...); err != nil {
		return nil, err
	}
	if t.Dtype() == tensor.Float32 {
		return convertValues[float64](valueData[float32](t)), nil
	}
	return slices.Clone(valueData[float64](t)), nil
}

// boxAreas is w·h of each x, y, w, h box (loadRes' area of a bbox).
func boxAreas(xywh []float64) []float64 {
	a := make([]float64, len(xywh)/4)
	for j := range a {
		a[j] = float64(xywh[4*j+2] * xywh[4*j+3])
	}
	return a
}

// check reports parameters that evaluate or summarize cannot use; CatIDs
// and MaxDets are sorted already.
func (p *COCOParams) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("detection: Evaluate: params: "+format, args...)
	}
	if len(p.IoUThrs) == 0 || len(p.RecThrs) == 0 {
		return bad("%d IoUThrs and %d RecThrs, want at least one of each", len(p.IoUThrs), len(p.RecThrs))
	}
	for _, t := range append(slices.Clone(p.IoUThrs), p.RecThrs...) {
		if !(t >= 0 && t <= 1) {
			return bad("threshold %v outside [0, 1]", t)
		}
	}
	if len(p.MaxDets) < 3 || p.MaxDets[0] < 0 {
		return bad("MaxDets %v, want at least 3 values >= 0 (summarize reads 3)", p.MaxDets)
	}
	if len(slices.Compact(slices.Clone(p.MaxDets))) != len(p.MaxDets) {
		return bad("MaxDets %v repeats a value", p.MaxDets)
	}
	for i, id := range p.CatIDs {
		if slices.Index(p.CatIDs, id) != i {
			return bad("CatIDs %v repeats %d (UseCats false keeps their order)", p.CatIDs, id)
		}
	}
	if len(p.AreaRng) == 0 || len(p.AreaRngLbl) != len(p.AreaRng) {
		return bad("%d AreaRng and %d AreaRngLbl, want the same number > 0", len(p.AreaRng), len(p.AreaRngLbl))
	}
	for i, r := range p.AreaRng {
		if math.IsNaN(r[0]) || math.IsNaN(r[1]) {
			return bad("AreaRng[%d] = %v is NaN", i, r)
		}
		if slices.Index(p.AreaRngLbl, p.AreaRngLbl[i]) != i {
			return bad("AreaRngLbl %q repeats", p.AreaRngLbl[i])
		}
	}
	return nil
}

// linspace is np.linspace(start, stop, num) for num >= 2: i·step + start
// with step = (stop − start)/(num − 1), each product rounded, and stop as
// the last value.
func linspace(start, stop float64, num int) []float64 {
	step := (stop - start) / float64(num-1)
	y := make([]float64, num)
	for i := range y {
		y[i] = float64(float64(i)*step) + start
	}
	y[num-1] = stop
	return y
}
