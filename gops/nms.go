package gops

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/tensor"
)

// Box selection on values, between graph runs, as torchvision's detectors
// use it between stages: NMS, BatchedNMS and RemoveSmallBoxes return a
// data-dependent number of indices, which a node's shape (fixed when the
// graph is built) cannot hold. Feed the indices to the next graph with
// IndexSelect. Boxes are *tensor.Dense [K, 4] (x1, y1, x2, y2), float32 or
// float64, with scores [K] of the same dtype; IoUs are computed in that
// dtype with torchvision's CPU arithmetic, so decisions at the threshold are
// torchvision's.

// boxValues checks boxes [K, 4] and, when scores is not nil, scores [K] of
// the same float dtype, and returns K.
func boxValues(opName string, boxes, scores *tensor.Dense) (int, error) {
	if boxes == nil {
		return 0, fmt.Errorf("gops: %s: boxes is nil", opName)
	}
	if dt := boxes.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return 0, fmt.Errorf("gops: %s: boxes dtype %v, want float32 or float64", opName, dt)
	}
	s := boxes.Shape()
	if s.Dims() != 2 || s[1] != 4 {
		return 0, fmt.Errorf("gops: %s: boxes must be [K, 4] (x1, y1, x2, y2), got %v", opName, s)
	}
	if scores == nil {
		return s[0], nil
	}
	if scores.Dtype() != boxes.Dtype() {
		return 0, fmt.Errorf("gops: %s: scores dtype %v differs from boxes dtype %v", opName, scores.Dtype(), boxes.Dtype())
	}
	if ss := scores.Shape(); ss.Dims() != 1 || ss[0] != s[0] {
		return 0, fmt.Errorf("gops: %s: scores must be [K] = [%d] for boxes %v, got %v", opName, s[0], s, ss)
	}
	return s[0], nil
}

// denseData is t's elements in row-major order (a view is copied); none
// for an empty tensor.
func denseData[T float32 | float64](t *tensor.Dense) []T {
	if t.Shape().TotalSize() == 0 {
		return nil
	}
	if t.IsMaterializable() || t.IsView() || !t.DataOrder().IsRowMajor() {
		t = t.Materialize().(*tensor.Dense)
	}
	return t.Data().([]T)
}

// checkThreshold checks an IoU threshold: not NaN, not negative.
func checkThreshold(opName string, thr float64) error {
	if !(thr >= 0) {
		return fmt.Errorf("gops: %s: iouThreshold %v must be >= 0 (and not NaN)", opName, thr)
	}
	return nil
}

// NMS is torchvision.ops.nms(boxes, scores, iou_threshold): non-maximum
// suppression of boxes [K, 4] (x1, y1, x2, y2) with scores [K]. It returns
// the indices of the kept boxes in decreasing order of score: boxes are
// visited by score (equal scores in increasing index order, NaN scores
// first, as torchvision's stable descending sort), and each kept box
// suppresses every later box whose IoU with it is greater than
// iouThreshold (an IoU exactly at the threshold is kept, as torchvision's
// ovr > iou_threshold; a NaN IoU suppresses nothing). The IoU is computed
// in the boxes' dtype as torchvision's CPU kernel does. An empty K gives
// no indices. Errors: nil tensors, boxes not [K, 4], scores not [K],
// dtypes other than one of float32 and float64, a negative or NaN
// iouThreshold (torchvision would then suppress every box that does not
// overlap; a threshold above 1 suppresses nothing).
func NMS(boxes, scores *tensor.Dense, iouThreshold float64) ([]int, error) {
	if scores == nil {
		return nil, fmt.Errorf("gops: NMS: scores is nil")
	}
	k, err := boxValues("NMS", boxes, scores)
	if err != nil {
		return nil, err
	}
	if err := checkThreshold("NMS", iouThreshold); err != nil {
		return nil, err
	}
	if k == 0 {
		return []int{}, nil
	}
	if boxes.Dtype() == tensor.Float32 {
		return cpu.NMS(denseData[float32](boxes), denseData[float32](scores), iouThreshold), nil
	}
	return cpu.NMS(denseData[float64](boxes), denseData[float64](scores), iouThreshold), nil
}

// BatchedNMS is torchvision.ops.batched_nms(boxes, scores, idxs,
// iou_threshold): NMS within each category, boxes of different categories
// never suppressing each other. boxes [K, 4], scores [K], idxs the K
// category indices. It returns the kept indices in decreasing order of
// score. As torchvision on the CPU, up to 1000 boxes it runs one NMS on
// boxes shifted by idx·(max coordinate + 1) (the same shifted coordinates,
// so the same decisions), and above 1000 one NMS per category, the kept
// indices then sorted by decreasing score: there torchvision's unstable
// sort may order kept boxes of equal score differently; here they are in
// increasing index order (NaN scores first). Errors: as NMS's, and idxs
// not of length K.
func BatchedNMS(boxes, scores *tensor.Dense, idxs []int, iouThreshold float64) ([]int, error) {
	if scores == nil {
		return nil, fmt.Errorf("gops: BatchedNMS: scores is nil")
	}
	k, err := boxValues("BatchedNMS", boxes, scores)
	if err != nil {
		return nil, err
	}
	if len(idxs) != k {
		return nil, fmt.Errorf("gops: BatchedNMS: idxs has %d entries for %d boxes", len(idxs), k)
	}
	if err := checkThreshold("BatchedNMS", iouThreshold); err != nil {
		return nil, err
	}
	if k == 0 {
		return []int{}, nil
	}
	if boxes.Dtype() == tensor.Float32 {
		return cpu.BatchedNMS(denseData[float32](boxes), denseData[float32](scores), idxs, iouThreshold), nil
	}
	return cpu.BatchedNMS(denseData[float64](boxes), denseData[float64](scores), idxs, iouThreshold), nil
}

// RemoveSmallBoxes is torchvision.ops.remove_small_boxes(boxes, min_size):
// the indices, increasing, of the boxes [K, 4] (x1, y1, x2, y2) whose width
// x2 − x1 and height y2 − y1 are both >= minSize (pixels; compared in the
// boxes' dtype, as torch). Boxes with a NaN side are removed. Errors: nil
// boxes, boxes not [K, 4] float32 or float64, a NaN minSize.
func RemoveSmallBoxes(boxes *tensor.Dense, minSize float64) ([]int, error) {
	k, err := boxValues("RemoveSmallBoxes", boxes, nil)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(minSize) {
		return nil, fmt.Errorf("gops: RemoveSmallBoxes: minSize is NaN")
	}
	if k == 0 {
		return []int{}, nil
	}
	if boxes.Dtype() == tensor.Float32 {
		return cpu.RemoveSmallBoxes(denseData[float32](boxes), float32(minSize)), nil
	}
	return cpu.RemoveSmallBoxes(denseData[float64](boxes), minSize), nil
}
