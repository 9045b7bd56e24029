package detection

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// Targets is one image's ground truth for the training losses, the
// targets[i] dict of torchvision's model(images, targets): boxes (x1, y1,
// x2, y2) in the pixels of the transformed image (GeneralizedRCNNTransform
// rescales boxes with the image: give them after that, or use a transform
// that does not resize) and their class labels.
type Targets struct {
	// Boxes is [G, 4], float32 or float64, G >= 0 (nil: no boxes).
	Boxes *tensor.Dense
	// Labels are the G class indices, each in [0, NumClasses): the
	// column of the class in the classification logits (torchvision
	// indexes them directly; FCOS and RetinaNet have no background
	// class of their own). Faster R-CNN's class 0 is the background: its
	// labels must be in [1, NumClasses) (torchvision would train a box
	// labelled 0 as background; here it is an error).
	Labels []int
}

// TargetBatch is a batch's ground truth padded to a fixed maximum of
// boxes per image, the form a static graph's batches take: image b holds
// Counts[b] boxes, rows 0 … Counts[b]−1 of Boxes[b] and Labels[b·MaxBoxes:];
// the rest is padding (boxes 0, labels −1), never read.
type TargetBatch struct {
	// Boxes is [B, MaxBoxes, 4], float64 (x1, y1, x2, y2).
	Boxes *tensor.Dense
	// Labels is [B·MaxBoxes], row-major as Boxes' first two axes.
	Labels []int
	// Counts is the number of real boxes of each of the B images.
	Counts []int
	// MaxBoxes is the padded maximum, Gmax.
	MaxBoxes int
}

// MaxPadBoxes is the most boxes, padding included, of a TargetBatch
// (images × maxBoxes): 2²⁴ (COCO's images have at most a few hundred).
const MaxPadBoxes = 1 << 24

// PadTargets checks every image's targets and pads them to maxBoxes boxes
// per image (TargetBatch).
//
// Errors (naming the image and box): maxBoxes < 0; no images; more than
// MaxPadBoxes boxes in all (len(targets)·maxBoxes); Boxes not [G, 4]
// float32 or float64; a number of labels other than G; more than
// maxBoxes boxes; a NaN or infinite coordinate; a box with x2 <= x1 or
// y2 <= y1 (torchvision's "All bounding boxes should have positive height
// and width"); a negative label (labels above the model's classes are
// the loss's check).
func PadTargets(targets []Targets, maxBoxes int) (TargetBatch, error) {
	const op = "PadTargets"
	if maxBoxes < 0 {
		return TargetBatch{}, fmt.Errorf("detection: %s: maxBoxes %d is negative", op, maxBoxes)
	}
	if len(targets) == 0 {
		return TargetBatch{}, fmt.Errorf("detection: %s: no images", op)
	}
	if maxBoxes > MaxPadBoxes/len(targets) {
		return TargetBatch{}, fmt.Errorf("detection: %s: %d images of maxBoxes %d is above %d boxes (MaxPadBoxes)", op, len(targets), maxBoxes, MaxPadBoxes)
	}
	n := len(targets)
	boxes := make([]float64, n*maxBoxes*4)
	labels := make([]int, n*maxBoxes)
	for i := range labels {
		labels[i] = -1
	}
	counts := make([]int, n)
	for b, t := range targets {
		xs, err := targetBoxes(op, b, t)
		if err != nil {
			return TargetBatch{}, err
		}
		g := len(xs) / 4
		if g > maxBoxes {
			return TargetBatch{}, fmt.Errorf("detection: %s: targets[%d] has %d boxes, more than the padded maximum %d", op, b, g, maxBoxes)
		}
		copy(boxes[b*maxBoxes*4:], xs)
		copy(labels[b*maxBoxes:], t.Labels)
		counts[b] = g
	}
	return TargetBatch{Boxes: newValue(boxes, n, maxBoxes, 4), Labels: labels, Counts: counts, MaxBoxes: maxBoxes}, nil
}

// targetBoxes checks image b's targets and returns its boxes as float64.
func targetBoxes(op string, b int, t Targets) ([]float64, error) {
	var xs []float64
	if t.Boxes != nil {
		what := fmt.Sprintf("targets[%d].Boxes", b)
		if _, err := checkValue(op, what, "[G, 4]", t.Boxes, -1, 4); err != nil {
			return nil, err
		}
		if t.Boxes.Dtype() == tensor.Float32 {
			xs = convertValues[float64](valueData[float32](t.Boxes))
		} else {
			xs = valueData[float64](t.Boxes)
		}
	}
	g := len(xs) / 4
	if len(t.Labels) != g {
		return nil, fmt.Errorf("detection: %s: targets[%d] has %d boxes and %d labels", op, b, g, len(t.Labels))
	}
	for i := 0; i < g; i++ {
		x := xs[4*i : 4*i+4]
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("detection: %s: targets[%d].Boxes[%d] = %v is not finite", op, b, i, x)
			}
		}
		if !(x[2] > x[0]) || !(x[3] > x[1]) {
			return nil, fmt.Errorf("detection: %s: targets[%d].Boxes[%d] = %v has x2 <= x1 or y2 <= y1 (boxes need a positive width and height)", op, b, i, x)
		}
		if t.Labels[i] < 0 {
			return nil, fmt.Errorf("detection: %s: targets[%d].Labels[%d] = %d is negative", op, b, i, t.Labels[i])
		}
	}
	return xs, nil
}

// image returns image b's boxes as flat [G·4] float64 (a view of Boxes'
// data) and its labels.
func (tb TargetBatch) image(b int) ([]float64, []int) {
	g := tb.Counts[b]
	data := valueData[float64](tb.Boxes)
	return data[b*tb.MaxBoxes*4 : (b*tb.MaxBoxes+g)*4], tb.Labels[b*tb.MaxBoxes : b*tb.MaxBoxes+g]
}

// checkFloat32 checks that every box stays finite with x2 > x1 and
// y2 > y1 when rounded to a float32 model's dtype, in which the targets
// are matched (Boxes is float64 whatever the Targets' dtype).
func (tb TargetBatch) checkFloat32(op string) error {
	for b := range tb.Counts {
		xs, _ := tb.image(b)
		x := convertValues[float32](xs)
		for i := 0; i < len(x); i += 4 {
			v := x[i : i+4]
			for _, c := range v {
				if math.IsInf(float64(c), 0) {
					return fmt.Errorf("detection: %s: targets[%d].Boxes[%d] = %v in float32 is not finite", op, b, i/4, v)
				}
			}
			if !(v[2] > v[0]) || !(v[3] > v[1]) {
				return fmt.Errorf("detection: %s: targets[%d].Boxes[%d] = %v in float32 has x2 <= x1 or y2 <= y1 (boxes need a positive width and height in the model's dtype)", op, b, i/4, v)
			}
		}
	}
	return nil
}

// check checks a batch for images of a model of numClasses classes.
func (tb TargetBatch) check(op string, images, numClasses int) error {
	if tb.Boxes == nil || len(tb.Counts) != images || len(tb.Labels) != images*tb.MaxBoxes {
		return fmt.Errorf("detection: %s: targets for %d images, want %d (a TargetBatch of PadTargets)", op, len(tb.Counts), images)
	}
	if _, err := checkValue(op, "TargetBatch.Boxes", "[B, MaxBoxes, 4] float64", tb.Boxes, images, tb.MaxBoxes, 4); err != nil || tb.Boxes.Dtype() != tensor.Float64 {
		return fmt.Errorf("detection: %s: TargetBatch.Boxes %v %v, want [%d, %d, 4] float64", op, tb.Boxes.Dtype(), tb.Boxes.Shape(), images, tb.MaxBoxes)
	}
	for b := 0; b < images; b++ {
		if tb.Counts[b] < 0 || tb.Counts[b] > tb.MaxBoxes {
			return fmt.Errorf("detection: %s: TargetBatch.Counts[%d] = %d outside [0, %d]", op, b, tb.Counts[b], tb.MaxBoxes)
		}
		xs, labels := tb.image(b)
		if _, err := targetBoxes(op, b, Targets{Boxes: newValue(append([]float64(nil), xs...), len(labels), 4), Labels: labels}); err != nil {
			return err
		}
		for i, l := range labels {
			if l >= numClasses {
				return fmt.Errorf("detection: %s: targets[%d].Labels[%d] = %d, the model has %d classes", op, b, i, l, numClasses)
			}
		}
	}
	return nil
}
