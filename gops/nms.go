package gops

import (
	"cmp"
	"fmt"
	"math"
	"slices"

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
		return nms(denseData[float32](boxes), denseData[float32](scores), iouThreshold), nil
	}
	return nms(denseData[float64](boxes), denseData[float64](scores), iouThreshold), nil
}

// scoreOrder is the indices of scores by decreasing score, NaN first,
// equal scores by increasing index (torch's stable descending sort).
func scoreOrder[T float32 | float64](scores []T) []int32 {
	order := make([]int32, len(scores))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		sa, sb := scores[a], scores[b]
		switch na, nb := sa != sa, sb != sb; {
		case na && nb:
		case na:
			return -1
		case nb:
			return 1
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return cmp.Compare(a, b)
	})
	return order
}

// nms is NMS on K > 0 boxes. The boxes are copied in score order into
// separate coordinate arrays with their areas, and the candidates still in
// play are kept in a list that each kept box filters, so that suppressed
// boxes are never visited again; pairs that do not overlap skip the
// division (their IoU is 0, or NaN for a zero union, neither above a
// threshold >= 0). The arithmetic is torchvision's nms_kernel:
// std::max/std::min as written there (a NaN coordinate of the candidate is
// ignored by them), w = max(0, xx2 − xx1), ovr = inter / (area_i + area_j −
// inter) in T, compared in float64 with the threshold.
func nms[T float32 | float64](boxes, scores []T, thr float64) []int {
	k := len(scores)
	order := scoreOrder(scores)
	x1, y1, x2, y2, area := make([]T, k), make([]T, k), make([]T, k), make([]T, k), make([]T, k)
	for p, i := range order {
		b := boxes[4*int(i) : 4*int(i)+4]
		x1[p], y1[p], x2[p], y2[p] = b[0], b[1], b[2], b[3]
		area[p] = T(T(b[2]-b[0]) * T(b[3]-b[1]))
	}
	live := make([]int32, k) // positions in score order still in play
	for p := range live {
		live[p] = int32(p)
	}
	keep := make([]int, 0, 64)
	for len(live) > 0 {
		i := live[0]
		keep = append(keep, int(order[i]))
		ix1, iy1, ix2, iy2, ia := x1[i], y1[i], x2[i], y2[i], area[i]
		rest := live[1:]
		n := 0
		for _, j := range rest {
			// A side <= 0 (max(0, ·) = 0): no overlap, box j stays; the
			// height is not computed then.
			suppress := false
			if w := overlapSide(ix1, ix2, x1[j], x2[j]); 0 < w {
				if h := overlapSide(iy1, iy2, y1[j], y2[j]); 0 < h {
					inter := T(w * h)
					ovr := inter / T(T(ia+area[j])-inter)
					suppress = float64(ovr) > thr
				}
			}
			if !suppress {
				rest[n] = j
				n++
			}
		}
		live = rest[:n]
	}
	return keep
}

// overlapSide is the side of the overlap of the intervals [lo1, hi1] (the
// kept box) and [lo2, hi2] (a candidate) before nms_kernel's max(0, ·):
// std::min(hi1, hi2) − std::max(lo1, lo2), with std::max(lo1, lo2) as
// written there, (lo1 < lo2) ? lo2 : lo1, and std::min(hi1, hi2) =
// (hi2 < hi1) ? hi2 : hi1, so that a NaN of the candidate is ignored.
func overlapSide[T float32 | float64](lo1, hi1, lo2, hi2 T) T {
	lo, hi := lo1, hi1
	if lo1 < lo2 {
		lo = lo2
	}
	if hi2 < hi1 {
		hi = hi2
	}
	return hi - lo
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
		return batchedNMS(denseData[float32](boxes), denseData[float32](scores), idxs, iouThreshold), nil
	}
	return batchedNMS(denseData[float64](boxes), denseData[float64](scores), idxs, iouThreshold), nil
}

// batchedNMSVanillaAbove is the box count above which torchvision's CPU
// batched_nms runs one NMS per category (boxes.numel() > 4000).
const batchedNMSVanillaAbove = 1000

func batchedNMS[T float32 | float64](boxes, scores []T, idxs []int, thr float64) []int {
	k := len(scores)
	if k > batchedNMSVanillaAbove {
		byClass := map[int][]int{}
		for i, c := range idxs {
			byClass[c] = append(byClass[c], i)
		}
		var kept []int
		for _, members := range byClass {
			b, s := make([]T, 0, 4*len(members)), make([]T, 0, len(members))
			for _, i := range members {
				b = append(b, boxes[4*i:4*i+4]...)
				s = append(s, scores[i])
			}
			for _, p := range nms(b, s, thr) {
				kept = append(kept, members[p])
			}
		}
		ks := make([]T, len(kept))
		slices.Sort(kept)
		for i, j := range kept {
			ks[i] = scores[j]
		}
		out := make([]int, len(kept))
		for i, p := range scoreOrder(ks) {
			out[i] = kept[p]
		}
		return out
	}
	// The coordinate trick, in T as torchvision: boxes.max() (NaN if any
	// coordinate is NaN), offsets = idx·(max + 1).
	mx := boxes[0]
	for _, v := range boxes {
		if v != v || mx != mx {
			mx = T(math.NaN())
		} else if v > mx {
			mx = v
		}
	}
	shifted := make([]T, len(boxes))
	for i, c := range idxs {
		off := T(T(c) * (mx + 1))
		for e := 4 * i; e < 4*i+4; e++ {
			shifted[e] = boxes[e] + off
		}
	}
	return nms(shifted, scores, thr)
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
		return removeSmall(denseData[float32](boxes), float32(minSize)), nil
	}
	return removeSmall(denseData[float64](boxes), minSize), nil
}

func removeSmall[T float32 | float64](b []T, min T) []int {
	keep := []int{}
	for i := 0; 4*i < len(b); i++ {
		if b[4*i+2]-b[4*i] >= min && b[4*i+3]-b[4*i+1] >= min {
			keep = append(keep, i)
		}
	}
	return keep
}
