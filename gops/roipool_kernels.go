package gops

import (
	"fmt"
	"math"
	"sync/atomic"
)

// poolGeom fixes everything a RoIPool, PSRoIPool or PSRoIAlign kernel needs
// besides the data: the input's shape [N, C, H, W] and the options.
type poolGeom struct {
	n, c, h, w    int
	ph, pw        int
	scale         float64 // already resolved: > 0
	samplingRatio int     // PSRoIAlign only
}

func (g *poolGeom) params() string {
	return fmt.Sprintf("input=(%d,%d,%d,%d), output_size=(%d,%d), spatial_scale=%v, sampling_ratio=%d",
		g.n, g.c, g.h, g.w, g.ph, g.pw, g.scale, g.samplingRatio)
}

// poolBin is one bin of a box: rows [hs, he) and columns [ws, we) of an
// H×W plane, already clipped to it; empty when he <= hs or we <= ws.
type poolBin struct{ hs, he, ws, we int }

func (b poolBin) empty() bool { return b.he <= b.hs || b.we <= b.ws }

// area is the number of pixels of a non-empty bin.
func (b poolBin) area() int { return (b.he - b.hs) * (b.we - b.ws) }

// maxRoundedCoord bounds rounded box coordinates, in feature-map pixels.
// torchvision keeps them in a C int, which overflows beyond 2³¹; clamping at
// 2⁴⁰, far outside any feature map, keeps every later integer step exact.
const maxRoundedCoord = 1 << 40

// scaledRound is torchvision's round(coordinate * spatial_scale): the
// product in the working dtype T, rounded half away from zero (C's round;
// Go's math.Round is the same rule, math.RoundToEven is not).
func scaledRound[T float](c, scale T) int {
	v := math.Round(float64(T(c * scale)))
	return int(min(max(v, -maxRoundedCoord), maxRoundedCoord))
}

// poolBins computes the PH×PW bins, in row-major order, of one box row
// (batch_index, x1, y1, x2, y2) with torchvision's integer geometry of
// roi_pool (inclusive: roi size end - start + 1) and ps_roi_pool (not
// inclusive: end - start): rounded start and end as scaledRound, roi size at
// least 1, bin size roi size / P in T, bin (i, j) spanning
// [floor(i·bin), ceil((i+1)·bin)) after the start, clipped to [0, H] and
// [0, W]. The bins are appended to dst.
func poolBins[T float](g *poolGeom, box []T, inclusive bool, dst []poolBin) []poolBin {
	scale := T(g.scale)
	x1, y1 := scaledRound(box[1], scale), scaledRound(box[2], scale)
	x2, y2 := scaledRound(box[3], scale), scaledRound(box[4], scale)
	extra := 0
	if inclusive {
		extra = 1
	}
	binH := T(max(y2-y1+extra, 1)) / T(g.ph)
	binW := T(max(x2-x1+extra, 1)) / T(g.pw)
	edge := func(i int, bin T, ceil bool, start, limit int) int {
		p := float64(T(T(i) * bin))
		if ceil {
			p = math.Ceil(p)
		} else {
			p = math.Floor(p)
		}
		return min(max(int(p)+start, 0), limit)
	}
	for i := 0; i < g.ph; i++ {
		hs, he := edge(i, binH, false, y1, g.h), edge(i+1, binH, true, y1, g.h)
		for j := 0; j < g.pw; j++ {
			ws, we := edge(j, binW, false, x1, g.w), edge(j+1, binW, true, x1, g.w)
			dst = append(dst, poolBin{hs: hs, he: he, ws: ws, we: we})
		}
	}
	return dst
}

// roiPoolArgmax computes, for every output element (k, c, ph, pw) of
// roi_pool (K×C×PH×PW), the flat index into input ([N, C, H, W]) of the
// maximum of input[batch(k), c] over bin (ph, pw) of box k, or -1 for an
// empty bin. The first maximum in row-major order wins ties; a NaN wins over
// any number (the first NaN), so NaN propagates. Parallel over boxes; each
// box writes only its own indices.
func roiPoolArgmax[T float](g *poolGeom, input, boxes []T, idx []int) error {
	if err := checkBoxes("RoIPool", boxes, g.n); err != nil {
		return err
	}
	plane, nb := g.h*g.w, g.ph*g.pw
	parallelFor(len(boxes)/5, func(lo, hi int) {
		bins := make([]poolBin, 0, nb)
		for k := lo; k < hi; k++ {
			bins = poolBins(g, boxes[5*k:5*k+5], true, bins[:0])
			n := int(boxes[5*k])
			for c := 0; c < g.c; c++ {
				base := (n*g.c + c) * plane
				x := input[base : base+plane]
				o := idx[(k*g.c+c)*nb : (k*g.c+c+1)*nb]
				for i, b := range bins {
					if b.empty() {
						o[i] = -1
						continue
					}
					o[i] = base + binArgmax(x, g.w, b)
				}
			}
		}
	})
	return nil
}

// binArgmax is the position in plane (rows of w) of the maximum of the
// non-empty bin b: the first in row-major order, or the first NaN. The
// scan is written to compile without branches on the data (a conditional
// move for the position, max for the value), which random data would
// mispredict; NaN, whose max is sticky, is found by a second scan.
func binArgmax[T float](plane []T, w int, b poolBin) int {
	best := b.hs*w + b.ws
	m := plane[best]
	for h := b.hs; h < b.he; h++ {
		off := h*w + b.ws
		for i, v := range plane[off : h*w+b.we] {
			if v > m {
				best = off + i
			}
			m = max(m, v)
		}
	}
	if m == m {
		return best
	}
	for h := b.hs; h < b.he; h++ {
		off := h*w + b.ws
		for i, v := range plane[off : h*w+b.we] {
			if v != v {
				return off + i
			}
		}
	}
	return best // not reached: m is NaN only if some element is
}

// firstBad records the smallest position at which a parallel kernel met a
// bad index, so that its error does not depend on scheduling.
type firstBad struct{ pos atomic.Int64 }

func newFirstBad() *firstBad {
	f := &firstBad{}
	f.pos.Store(math.MaxInt64)
	return f
}

func (f *firstBad) report(i int) {
	for {
		old := f.pos.Load()
		if int64(i) >= old || f.pos.CompareAndSwap(old, int64(i)) {
			return
		}
	}
}

// at returns the position, or -1 if nothing was reported.
func (f *firstBad) at() int {
	if p := f.pos.Load(); p != math.MaxInt64 {
		return int(p)
	}
	return -1
}

// roiGather sets out[i] = input[idx[i]], or 0 where idx[i] is -1. Parallel
// over rows of nb elements (one box and channel each).
func roiGather[T float](input []T, idx []int, out []T, nb int) error {
	bad := newFirstBad()
	parallelFor(len(idx)/nb, func(lo, hi int) {
		for i := lo * nb; i < hi*nb; i++ {
			switch j := idx[i]; {
			case j >= 0 && j < len(input):
				out[i] = input[j]
			case j == -1:
				out[i] = 0
			default:
				bad.report(i)
				return
			}
		}
	})
	if i := bad.at(); i >= 0 {
		return fmt.Errorf("gops: RoIGather: index %d at %d is outside the input (%d elements)", idx[i], i, len(input))
	}
	return nil
}

// roiScatterAdd is the adjoint of roiGather in its input: it adds grad[i] to
// dst[idx[i]] ([N, C, H, W]) wherever idx[i] is not -1. idx is K×C×PH×PW as
// roiPoolArgmax makes it: row (k, c) points into one plane of channel c.
// Parallel over channels, each visiting boxes in order, so sums are bitwise
// reproducible and no two goroutines write one element; an index that
// would break this is an error, not a race.
func roiScatterAdd[T float](g *poolGeom, grad []T, idx []int, dst []T) error {
	plane, nb := g.h*g.w, g.ph*g.pw
	rows := len(idx) / nb
	bad := newFirstBad()
	parallelFor(g.c, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			for r := c; r < rows; r += g.c {
				row, gr := idx[r*nb:(r+1)*nb], grad[r*nb:(r+1)*nb]
				// The row's plane, from its first index: one division a row.
				base := -1
				for i, j := range row {
					if j >= 0 {
						if base = j - j%plane; base >= len(dst) || base/plane%g.c != c {
							bad.report(r*nb + i)
							return
						}
						break
					}
				}
				for i, j := range row {
					if j == -1 {
						continue
					}
					if j < base || j >= base+plane {
						bad.report(r*nb + i)
						return
					}
					dst[j] += gr[i]
				}
			}
		}
	})
	if i := bad.at(); i >= 0 {
		return fmt.Errorf("gops: RoIScatterAdd: index %d at %d is not in the input plane of its box and channel", idx[i], i)
	}
	return nil
}
