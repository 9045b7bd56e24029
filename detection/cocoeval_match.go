package detection

import (
	"cmp"
	"math"
	"slices"
)

// cocoEvalImg is COCOeval.evaluateImg's result for one image, category
// and area range (nil where the image has neither detections nor ground
// truth of the category): the D detections' scores in decreasing order
// (stable, at most MaxDets' last), whether each is matched and ignored
// at each IoU threshold (t·D + d), and the number of ground-truth boxes
// not ignored (gtIgnore == 0).
type cocoEvalImg struct {
	scores           []float64
	matched, ignored []bool
	npig             int
}

// cocoCategory is one image's detections or ground truth of one evaluated
// category (all categories when UseCats is false): indices into the
// image's boxes, in COCO's order (by category in CatIDs' order, then as
// given).
type cocoCategory []int

// evaluateImages is COCOeval.evaluate: evalImgs[k][a][i] for category k,
// area range a and image i.
func evaluateImages(p *COCOParams, dets, gts []cocoImage) [][][]*cocoEvalImg {
	k := len(p.CatIDs)
	if !p.UseCats {
		k = 1
	}
	ev := make([][][]*cocoEvalImg, k)
	for c := range ev {
		ev[c] = make([][]*cocoEvalImg, len(p.AreaRng))
		for a := range ev[c] {
			ev[c][a] = make([]*cocoEvalImg, len(dets))
		}
	}
	index := make(map[int]int, len(p.CatIDs))
	for c, id := range p.CatIDs {
		index[id] = c
	}
	var m cocoMatcher
	for i := range dets {
		dc, gc := byCategory(p, index, dets[i].labels), byCategory(p, index, gts[i].labels)
		for c := range ev {
			if len(dc[c]) == 0 && len(gc[c]) == 0 {
				continue
			}
			m.prepare(p, &dets[i], &gts[i], dc[c], gc[c])
			for a, rng := range p.AreaRng {
				ev[c][a][i] = m.evaluate(p, rng)
			}
		}
	}
	return ev
}

// byCategory groups the boxes of labels by evaluated category (one group
// of every evaluated label when UseCats is false), dropping other labels.
func byCategory(p *COCOParams, index map[int]int, labels []int) []cocoCategory {
	groups := make([]cocoCategory, len(p.CatIDs))
	for j, l := range labels {
		if c, ok := index[l]; ok {
			groups[c] = append(groups[c], j)
		}
	}
	if !p.UseCats {
		return []cocoCategory{slices.Concat(groups...)}
	}
	return groups
}

// cocoMatcher holds one image and category between area ranges: the
// detections sorted by score and cut to MaxDets' last, the ground truth,
// and their IoUs (computeIoU), with scratch space reused across calls.
type cocoMatcher struct {
	det, gt *cocoImage
	dIdx    []int     // detections, by decreasing score (stable)
	gIdx    []int     // ground truth as given
	ious    []float64 // [D, G]: ious[d·G + g]
	order   []int     // ground truth, not ignored first (stable)
	gtIg    []bool    // by order
	gtm     []bool    // [T, G] by order
}

// prepare is computeIoU for the detections dIdx and ground truth gIdx of
// det and gt.
func (m *cocoMatcher) prepare(p *COCOParams, det, gt *cocoImage, dIdx, gIdx []int) {
	m.det, m.gt = det, gt
	m.dIdx = append(m.dIdx[:0], dIdx...)
	slices.SortStableFunc(m.dIdx, func(a, b int) int { return cmp.Compare(det.scores[b], det.scores[a]) })
	if maxDet := p.MaxDets[len(p.MaxDets)-1]; len(m.dIdx) > maxDet {
		m.dIdx = m.dIdx[:maxDet]
	}
	m.gIdx = gIdx
	nd, ng := len(m.dIdx), len(gIdx)
	m.ious = slices.Grow(m.ious[:0], nd*ng)[:nd*ng]
	for d, dj := range m.dIdx {
		for g, gj := range gIdx {
			m.ious[d*ng+g] = bbIoU(det.xywh[4*dj:4*dj+4], gt.xywh[4*gj:4*gj+4], gt.crowd[gj])
		}
	}
}

// bbIoU is maskUtils.iou of one x, y, w, h detection and ground-truth box
// (maskApi.c's bbIou): intersection over union, or over the detection's
// area for a crowd region; 0 when they do not overlap.
func bbIoU(d, g []float64, crowd bool) float64 {
	w := math.Min(d[2]+d[0], g[2]+g[0]) - math.Max(d[0], g[0])
	if w <= 0 {
		return 0
	}
	h := math.Min(d[3]+d[1], g[3]+g[1]) - math.Max(d[1], g[1])
	if h <= 0 {
		return 0
	}
	i := float64(w * h)
	da := float64(d[2] * d[3])
	if crowd {
		return i / da
	}
	return i / (da + float64(g[2]*g[3]) - i)
}

// evaluate is evaluateImg for the prepared image and category and the
// area range rng, with maxDet MaxDets' last.
func (m *cocoMatcher) evaluate(p *COCOParams, rng [2]float64) *cocoEvalImg {
	outside := func(area float64) bool { return area < rng[0] || area > rng[1] }
	ng, nd, nt := len(m.gIdx), len(m.dIdx), len(p.IoUThrs)
	// Ground truth ignored (crowd, or area outside rng) goes last.
	m.order = m.order[:0]
	for pass := 0; pass < 2; pass++ {
		for g, gj := range m.gIdx {
			if ig := m.gt.crowd[gj] || outside(m.gt.area[gj]); ig == (pass == 1) {
				m.order = append(m.order, g)
			}
		}
	}
	r := &cocoEvalImg{scores: make([]float64, nd), matched: make([]bool, nt*nd), ignored: make([]bool, nt*nd)}
	m.gtIg = m.gtIg[:0]
	for _, g := range m.order {
		ig := m.gt.crowd[m.gIdx[g]] || outside(m.gt.area[m.gIdx[g]])
		m.gtIg = append(m.gtIg, ig)
		if !ig {
			r.npig++
		}
	}
	for d, dj := range m.dIdx {
		r.scores[d] = m.det.scores[dj]
	}
	if nd > 0 && ng > 0 {
		m.gtm = slices.Grow(m.gtm[:0], nt*ng)[:nt*ng]
		clear(m.gtm)
		for t, thr := range p.IoUThrs {
			gtm := m.gtm[t*ng : (t+1)*ng]
			for d := 0; d < nd; d++ {
				best, match := math.Min(thr, maxIoUThr()), -1
				for o, g := range m.order {
					crowd := m.gt.crowd[m.gIdx[g]]
					if gtm[o] && !crowd {
						continue
					}
					// Matched to a regular box and only ignored ones left.
					if match > -1 && !m.gtIg[match] && m.gtIg[o] {
						break
					}
					if iou := m.ious[d*ng+g]; iou >= best {
						best, match = iou, o
					}
				}
				if match == -1 {
					continue
				}
				r.ignored[t*nd+d] = m.gtIg[match]
				r.matched[t*nd+d] = true
				gtm[match] = true
			}
		}
	}
	// Unmatched detections outside the area range are ignored.
	for d, dj := range m.dIdx {
		if outside(m.det.area[dj]) {
			for t := 0; t < nt; t++ {
				if !r.matched[t*nd+d] {
					r.ignored[t*nd+d] = true
				}
			}
		}
	}
	return r
}

// maxIoUThr is evaluateImg's cap on a threshold, 1 − 1e−10 in float64.
func maxIoUThr() float64 {
	eps := 1e-10
	return 1 - eps
}
