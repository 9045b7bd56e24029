package cpu

import (
	"cmp"
	"math"
	"slices"
)

// Box selection on values (gops' NMS, BatchedNMS, RemoveSmallBoxes, which
// check their tensors and call these): IoUs in the boxes' element type
// with torchvision's CPU arithmetic, so decisions at the threshold are
// torchvision's.

// NMS is gops.NMS (torchvision.ops.nms) on K > 0 boxes [K, 4] (x1, y1,
// x2, y2) with scores [K] and a threshold >= 0, checked by the caller:
// the indices of the kept boxes in decreasing order of score. The boxes
// are copied in score order into separate coordinate arrays with their
// areas, and the candidates still in play are kept in a list that each
// kept box filters, so that suppressed boxes are never visited again; pairs that do not overlap skip the
// division (their IoU is 0, or NaN for a zero union, neither above a
// threshold >= 0). The arithmetic is torchvision's nms_kernel:
// std::max/std::min as written there (a NaN coordinate of the candidate is
// ignored by them), w = max(0, xx2 − xx1), ovr = inter / (area_i + area_j −
// inter) in T, compared in float64 with the threshold.
func NMS[T Float](boxes, scores []T, thr float64) []int {
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

// scoreOrder is the indices of scores by decreasing score, NaN first,
// equal scores by increasing index (torch's stable descending sort).
func scoreOrder[T Float](scores []T) []int32 {
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

// overlapSide is the side of the overlap of the intervals [lo1, hi1] (the
// kept box) and [lo2, hi2] (a candidate) before nms_kernel's max(0, ·):
// std::min(hi1, hi2) − std::max(lo1, lo2), with std::max(lo1, lo2) as
// written there, (lo1 < lo2) ? lo2 : lo1, and std::min(hi1, hi2) =
// (hi2 < hi1) ? hi2 : hi1, so that a NaN of the candidate is ignored.
func overlapSide[T Float](lo1, hi1, lo2, hi2 T) T {
	lo, hi := lo1, hi1
	if lo1 < lo2 {
		lo = lo2
	}
	if hi2 < hi1 {
		hi = hi2
	}
	return hi - lo
}

// batchedNMSVanillaAbove is the box count above which torchvision's CPU
// batched_nms runs one NMS per category (boxes.numel() > 4000).
const batchedNMSVanillaAbove = 1000

// BatchedNMS is gops.BatchedNMS (torchvision.ops.batched_nms) on K > 0
// boxes with scores [K], category indices idxs [K] and a threshold >= 0,
// checked by the caller: NMS on boxes shifted by idx·(max coordinate + 1)
// up to batchedNMSVanillaAbove boxes, one NMS per category above, the
// kept indices then by decreasing score (equal scores by increasing
// index, NaN first).
func BatchedNMS[T Float](boxes, scores []T, idxs []int, thr float64) []int {
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
			for _, p := range NMS(b, s, thr) {
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
	return NMS(shifted, scores, thr)
}

// RemoveSmallBoxes is gops.RemoveSmallBoxes
// (torchvision.ops.remove_small_boxes) on boxes [K, 4]: the indices,
// increasing, of the boxes whose width and height are both >= min,
// compared in T (a NaN side removes the box).
func RemoveSmallBoxes[T Float](b []T, min T) []int {
	keep := []int{}
	for i := 0; 4*i < len(b); i++ {
		if b[4*i+2]-b[4*i] >= min && b[4*i+3]-b[4*i+1] >= min {
			keep = append(keep, i)
		}
	}
	return keep
}
