package detection

import (
	"fmt"
	"math"
)

// Target assignment on values: which ground-truth box each anchor of an
// image learns from (torchvision computes it on detached tensors). A
// match is a gt index >= 0, or BelowLowThreshold / BetweenThresholds.

const (
	// BelowLowThreshold is Matcher.BELOW_LOW_THRESHOLD (−1): an anchor
	// matched to no box, a background anchor.
	BelowLowThreshold = -1
	// BetweenThresholds is Matcher.BETWEEN_THRESHOLDS (−2): an anchor
	// whose best quality lies in [LowThreshold, HighThreshold), ignored by
	// RetinaNet's classification loss.
	BetweenThresholds = -2
)

// Matcher is torchvision's det_utils.Matcher: each of N predictions gets
// the ground-truth box of highest quality (the first of equal ones), or
// BelowLowThreshold when that quality is < LowThreshold and
// BetweenThresholds when it is in [LowThreshold, HighThreshold). With
// AllowLowQualityMatches, every prediction of highest quality for some box
// (ties included) keeps its best box even below the thresholds
// (set_low_quality_matches_). RetinaNet's: 0.5, 0.4, true.
type Matcher struct {
	HighThreshold, LowThreshold float64
	AllowLowQualityMatches      bool
}

// Match is Matcher.__call__ on quality [M·N] (row m: ground-truth box m,
// column n: prediction n, row-major), returning the N matches. Errors:
// LowThreshold > HighThreshold, m or n < 1 (torchvision: "No ground-truth
// boxes available" / "No proposal boxes available"), len(quality) ≠ m·n,
// a NaN quality.
func (mt Matcher) Match(quality []float64, m, n int) ([]int, error) {
	for i, v := range quality {
		if math.IsNaN(v) {
			return nil, fmt.Errorf("detection: Matcher: quality[%d] (box %d, prediction %d) is NaN", i, i/max(n, 1), i%max(n, 1))
		}
	}
	return match(mt, quality, m, n)
}

// match is Match in T, the quality's dtype; the thresholds are rounded to
// T as torch compares a tensor with a Python float.
func match[T floatType](mt Matcher, q []T, m, n int) ([]int, error) {
	if !(mt.LowThreshold <= mt.HighThreshold) {
		return nil, fmt.Errorf("detection: Matcher: LowThreshold %v above HighThreshold %v", mt.LowThreshold, mt.HighThreshold)
	}
	if m < 1 || n < 1 || len(q)%n != 0 || len(q)/n != m { // not len(q) != m·n: it may overflow
		return nil, fmt.Errorf("detection: Matcher: quality of %d values for %d boxes and %d predictions, want both >= 1", len(q), m, n)
	}
	matches := make([]int, n)
	best := make([]T, n)
	copy(best, q[:n])
	for g := 1; g < m; g++ {
		for i, v := range q[g*n : (g+1)*n] {
			if v > best[i] {
				best[i], matches[i] = v, g
			}
		}
	}
	all := append([]int(nil), matches...)
	for i, v := range best {
		switch {
		case v < T(mt.LowThreshold):
			matches[i] = BelowLowThreshold
		case v < T(mt.HighThreshold):
			matches[i] = BetweenThresholds
		}
	}
	if mt.AllowLowQualityMatches {
		for g := 0; g < m; g++ {
			row := q[g*n : (g+1)*n]
			top := row[0]
			for _, v := range row[1:] {
				if v > top {
					top = v
				}
			}
			for i, v := range row {
				if v == top {
					matches[i] = all[i]
				}
			}
		}
	}
	return matches, nil
}

// boxIoU is torchvision.ops.box_iou of boxes1 [M·4] and boxes2 [N·4] in T
// with its operation order: [M·N], row m for boxes1[m].
func boxIoU[T floatType](boxes1, boxes2 []T) []T {
	m, n := len(boxes1)/4, len(boxes2)/4
	out := make([]T, m*n)
	area := func(b []T) T { return (b[2] - b[0]) * (b[3] - b[1]) }
	for i := 0; i < m; i++ {
		a := boxes1[4*i : 4*i+4]
		areaA := area(a)
		for j := 0; j < n; j++ {
			b := boxes2[4*j : 4*j+4]
			w := max(min(a[2], b[2])-max(a[0], b[0]), 0)
			h := max(min(a[3], b[3])-max(a[1], b[1]), 0)
			inter := w * h
			out[i*n+j] = inter / (areaA + area(b) - inter)
		}
	}
	return out
}

// retinaNetMatcher is RetinaNet's proposal_matcher: fg_iou_thresh 0.5,
// bg_iou_thresh 0.4, allow_low_quality_matches.
var retinaNetMatcher = Matcher{HighThreshold: 0.5, LowThreshold: 0.4, AllowLowQualityMatches: true}

// retinaNetMatch is RetinaNet.compute_loss's matching of one image:
// anchors [N·4] against the gt boxes [G·4] by box_iou; all
// BelowLowThreshold without boxes.
func retinaNetMatch[T floatType](anchors, gt []T) ([]int, error) {
	n, g := len(anchors)/4, len(gt)/4
	if g == 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = BelowLowThreshold
		}
		return out, nil
	}
	return match(retinaNetMatcher, boxIoU(gt, anchors), g, n)
}

// FCOSCenterSamplingRadius is torchvision FCOS's center_sampling_radius.
const FCOSCenterSamplingRadius = 1.5

// fcosMatch is FCOS.compute_loss's matching of one image (torchvision
// 0.14): anchor i (anchors [N·4], perLevel[l] of them on level l) may take
// gt box j (gt [G·4]) when its centre is within radius·anchor size of the
// box's centre (Chebyshev distance), strictly inside the box, and the
// largest of its distances to the four sides lies in (4·size, 8·size)
// (the first level from 0, the last to ∞); of the boxes it may take, the
// one of least area wins (the largest 1e8 − area in T, the first of
// equal ones), and an anchor with none, or whose 1e8 − area is below
// 1e-5, is BelowLowThreshold.
func fcosMatch[T floatType](anchors, gt []T, perLevel []int, radius float64) []int {
	n, g := len(anchors)/4, len(gt)/4
	out := make([]int, n)
	first, last := perLevel[0], n-perLevel[len(perLevel)-1]
	half := T(2)
	for i := range out {
		out[i] = BelowLowThreshold
		if g == 0 {
			continue
		}
		a := anchors[4*i : 4*i+4]
		ax, ay := (a[0]+a[2])/half, (a[1]+a[3])/half
		size := a[2] - a[0]
		lower, upper := size*4, size*8
		if i < first {
			lower = 0
		}
		if i >= last {
			upper = T(math.Inf(1))
		}
		var best T
		bestJ := 0
		for j := 0; j < g; j++ {
			b := gt[4*j : 4*j+4]
			cx, cy := (b[0]+b[2])/half, (b[1]+b[3])/half
			ok := max(abs(ax-cx), abs(ay-cy)) < T(radius)*size
			d := [4]T{ax - b[0], ay - b[1], b[2] - ax, b[3] - ay}
			lo, hi := min(d[0], d[1], d[2], d[3]), max(d[0], d[1], d[2], d[3])
			ok = ok && lo > 0 && hi > lower && hi < upper
			var v T
			if ok {
				v = T(1e8) - (b[2]-b[0])*(b[3]-b[1])
			}
			if j == 0 || v > best {
				best, bestJ = v, j
			}
		}
		if !(best < 1e-5) {
			out[i] = bestJ
		}
	}
	return out
}

// abs is |x| in T.
func abs[T floatType](x T) T {
	if x < 0 {
		return -x
	}
	return x
}
