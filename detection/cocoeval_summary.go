package detection

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// accumulate is COCOeval.accumulate: for each category k, area range a
// and maximum number of detections per image MaxDets[m], the images'
// first MaxDets[m] detections merged by decreasing score (stable: image
// order breaks ties), cumulative true and false positives at each IoU
// threshold, precision made non-increasing from the right and read at
// the first detection whose recall reaches each recall threshold
// (np.searchsorted, side "left"; 0 past the last).
func (e *COCOEval) accumulate(ev [][][]*cocoEvalImg) {
	p := &e.Params
	nt, nr, nk, na, nm := len(p.IoUThrs), len(p.RecThrs), len(ev), len(p.AreaRng), len(p.MaxDets)
	precision := filled(nt*nr*nk*na*nm, -1)
	scores := filled(len(precision), -1)
	recall := filled(nt*nk*na*nm, -1)
	type entry struct {
		img    *cocoEvalImg
		d, seq int // detection d of img, seq-th in the images' concatenation
		score  float64
	}
	var (
		all, dets []entry
		rc, pr    []float64
	)
	for k := range ev {
		for a := range ev[k] {
			// Sorted once for the largest MaxDets: a smaller one's
			// detections keep their order in it (score, then seq: a stable
			// sort of the concatenation).
			all = all[:0]
			npig, images := 0, 0
			for _, img := range ev[k][a] {
				if img == nil {
					continue
				}
				images++
				npig += img.npig
				for d, s := range img.scores {
					all = append(all, entry{img, d, len(all), s})
				}
			}
			if images == 0 || npig == 0 {
				continue
			}
			slices.SortFunc(all, func(x, y entry) int {
				return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.seq, y.seq))
			})
			for m, maxDet := range p.MaxDets {
				dets = dets[:0]
				for _, x := range all {
					if x.d < maxDet {
						dets = append(dets, x)
					}
				}
				nd := len(dets)
				rc, pr = slices.Grow(rc[:0], nd)[:nd], slices.Grow(pr[:0], nd)[:nd]
				for t := 0; t < nt; t++ {
					tp, fp := 0.0, 0.0
					for j, x := range dets {
						if i := t*len(x.img.scores) + x.d; !x.img.ignored[i] {
							if x.img.matched[i] {
								tp++
							} else {
								fp++
							}
						}
						rc[j] = tp / float64(npig)
						pr[j] = tp / (fp + tp + 0x1p-52) // np.spacing(1)
					}
					at := func(r int) int { return (((t*nr+r)*nk+k)*na+a)*nm + m }
					recall[((t*nk+k)*na+a)*nm+m] = 0
					if nd > 0 {
						recall[((t*nk+k)*na+a)*nm+m] = rc[nd-1]
					}
					for i := nd - 1; i > 0; i-- {
						pr[i-1] = max(pr[i-1], pr[i])
					}
					for r := 0; r < nr; r++ {
						precision[at(r)], scores[at(r)] = 0, 0
					}
					for r, thr := range p.RecThrs {
						i := sort.Search(nd, func(i int) bool { return rc[i] >= thr })
						if i == nd {
							break
						}
						precision[at(r)], scores[at(r)] = pr[i], dets[i].score
					}
				}
			}
		}
	}
	e.Precision, e.Scores, e.Recall = precision, scores, recall
}

// filled is n copies of v.
func filled(n int, v float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// cocoStat is one of summarize's numbers: average precision (ap) or
// recall at the IoU threshold iouThr (all thresholds when allIoU), the
// area range labelled area and maxDets detections per image.
type cocoStat struct {
	ap      bool
	allIoU  bool
	iouThr  float64
	area    string
	maxDets int
}

// cocoStats is summarize's 12 numbers for p (_summarizeDets); the first
// reads maxDets 100 whatever MaxDets holds, as pycocotools does.
func cocoStats(p *COCOParams) [12]cocoStat {
	m0, m1, m2 := p.MaxDets[0], p.MaxDets[1], p.MaxDets[2]
	return [12]cocoStat{
		{true, true, 0, "all", 100}, {true, false, .5, "all", m2}, {true, false, .75, "all", m2},
		{true, true, 0, "small", m2}, {true, true, 0, "medium", m2}, {true, true, 0, "large", m2},
		{false, true, 0, "all", m0}, {false, true, 0, "all", m1}, {false, true, 0, "all", m2},
		{false, true, 0, "small", m2}, {false, true, 0, "medium", m2}, {false, true, 0, "large", m2},
	}
}

// summarize is COCOeval.summarize for iouType "bbox".
func (e *COCOEval) summarize() {
	for i, s := range cocoStats(&e.Params) {
		e.Stats[i] = e.stat(s)
	}
}

// stat is _summarize: the mean of the precision (or recall) entries
// above −1 at s's thresholds, area range and maxDets, in the array's
// order, summed as numpy does; −1 when there are none.
func (e *COCOEval) stat(s cocoStat) float64 {
	p := &e.Params
	a, m := slices.Index(p.AreaRngLbl, s.area), slices.Index(p.MaxDets, s.maxDets)
	if a < 0 || m < 0 {
		return -1
	}
	sh := e.Shape()
	nr, nk, na, nm := sh[1], sh[2], sh[3], sh[4]
	src := e.Precision
	if !s.ap {
		nr, src = 1, e.Recall
	}
	var vals []float64
	for t, thr := range p.IoUThrs {
		if !s.allIoU && thr != s.iouThr {
			continue
		}
		for r := 0; r < nr; r++ {
			for k := 0; k < nk; k++ {
				if v := src[(((t*nr+r)*nk+k)*na+a)*nm+m]; v > -1 {
					vals = append(vals, v)
				}
			}
		}
	}
	return npMean(vals)
}

// CategoryAP is each category's AP at IoU .50:.95 (the k-th for
// Params.CatIDs[k]; one value when UseCats is false): the mean of
// Precision[:, :, k, 0, M−1] over its entries above −1 (area range 0,
// the largest MaxDets), as detectron2's COCOEvaluator reports per-category
// AP; −1 for a category without ground truth.
func (e *COCOEval) CategoryAP() []float64 {
	s := e.Shape()
	nt, nr, nk, na, nm := s[0], s[1], s[2], s[3], s[4]
	src := e.Precision
	ap := make([]float64, nk)
	var vals []float64
	for k := range ap {
		vals = vals[:0]
		for tr := 0; tr < nt*nr; tr++ {
			if v := src[((tr*nk+k)*na)*nm+nm-1]; v > -1 {
				vals = append(vals, v)
			}
		}
		ap[k] = npMean(vals)
	}
	return ap
}

// String is the 12 lines that summarize prints, e.g.
// " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.361".
func (e *COCOEval) String() string {
	var b strings.Builder
	p := &e.Params
	for i, s := range cocoStats(p) {
		title, kind := "Average Precision", "(AP)"
		if !s.ap {
			title, kind = "Average Recall", "(AR)"
		}
		iou := fmt.Sprintf("%0.2f", s.iouThr)
		if s.allIoU {
			iou = fmt.Sprintf("%0.2f:%0.2f", p.IoUThrs[0], p.IoUThrs[len(p.IoUThrs)-1])
		}
		fmt.Fprintf(&b, " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3d ] = %0.3f\n", title, kind, iou, s.area, s.maxDets, e.Stats[i])
	}
	return b.String()
}

// npMean is np.mean of x, −1 for none (summarize's convention): numpy's
// sum (pairwise within blocks of 8192 values, the blocks added in
// order) over len(x).
func npMean(x []float64) float64 {
	if len(x) == 0 {
		return -1
	}
	sum := 0.0
	for lo := 0; lo < len(x); lo += 8192 {
		sum += pairwiseSum(x[lo:min(lo+8192, len(x))])
	}
	return sum / float64(len(x))
}

// pairwiseSum is numpy's pairwise_sum: fewer than 8 values added in
// order; up to 128 in 8 running sums combined as
// ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) then the rest in order; more split
// at half rounded down to a multiple of 8.
func pairwiseSum(x []float64) float64 {
	n := len(x)
	switch {
	case n < 8:
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], x)
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += x[i+j]
			}
		}
		s := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += x[i]
		}
		return s
	}
	h := n / 2
	h -= h % 8
	return pairwiseSum(x[:h]) + pairwiseSum(x[h:])
}
