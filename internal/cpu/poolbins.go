package cpu

import (
	"fmt"
	"math"
)

// PoolGeom fixes everything a RoIPool, PSRoIPool or PSRoIAlign kernel needs
// besides the data: the input's shape [N, C, H, W] and the options.
type PoolGeom struct {
	N, C, H, W    int
	PH, PW        int
	Scale         float64 // already resolved: > 0
	SamplingRatio int     // PSRoIAlign only
}

// Params describes the geometry for op hashes and printouts.
func (g *PoolGeom) Params() string {
	return fmt.Sprintf("input=(%d,%d,%d,%d), output_size=(%d,%d), spatial_scale=%v, sampling_ratio=%d",
		g.N, g.C, g.H, g.W, g.PH, g.PW, g.Scale, g.SamplingRatio)
}

// PoolBin is one bin of a box: rows [hs, he) and columns [ws, we) of an
// H×W plane, already clipped to it; empty when he <= hs or we <= ws.
type PoolBin struct{ HS, HE, WS, WE int }

func (b PoolBin) empty() bool { return b.HE <= b.HS || b.WE <= b.WS }

// area is the number of pixels of a non-empty bin.
func (b PoolBin) area() int { return (b.HE - b.HS) * (b.WE - b.WS) }

// maxRoundedCoord bounds rounded box coordinates, in feature-map pixels.
// torchvision keeps them in a C int, which overflows beyond 2³¹; clamping at
// 2⁴⁰, far outside any feature map, keeps every later integer step exact.
const maxRoundedCoord = 1 << 40

// scaledRound is torchvision's round(coordinate * spatial_scale): the
// product in the working dtype T, rounded half away from zero (C's round;
// Go's math.Round is the same rule, math.RoundToEven is not).
func scaledRound[T Float](c, scale T) int {
	v := math.Round(float64(T(c * scale)))
	return int(min(max(v, -maxRoundedCoord), maxRoundedCoord))
}

// PoolBins computes the PH×PW bins, in row-major order, of one box row
// (batch_index, x1, y1, x2, y2) with torchvision's integer geometry of
// roi_pool (inclusive: roi size end - start + 1) and ps_roi_pool (not
// inclusive: end - start): rounded start and end as scaledRound, roi size at
// least 1, bin size roi size / P in T, bin (i, j) spanning
// [floor(i·bin), ceil((i+1)·bin)) after the start, clipped to [0, H] and
// [0, W]. The bins are appended to dst.
func PoolBins[T Float](g *PoolGeom, box []T, inclusive bool, dst []PoolBin) []PoolBin {
	scale := T(g.Scale)
	x1, y1 := scaledRound(box[1], scale), scaledRound(box[2], scale)
	x2, y2 := scaledRound(box[3], scale), scaledRound(box[4], scale)
	extra := 0
	if inclusive {
		extra = 1
	}
	binH := T(max(y2-y1+extra, 1)) / T(g.PH)
	binW := T(max(x2-x1+extra, 1)) / T(g.PW)
	edge := func(i int, bin T, ceil bool, start, limit int) int {
		p := float64(T(T(i) * bin))
		if ceil {
			p = math.Ceil(p)
		} else {
			p = math.Floor(p)
		}
		return min(max(int(p)+start, 0), limit)
	}
	for i := 0; i < g.PH; i++ {
		hs, he := edge(i, binH, false, y1, g.H), edge(i+1, binH, true, y1, g.H)
		for j := 0; j < g.PW; j++ {
			ws, we := edge(j, binW, false, x1, g.W), edge(j+1, binW, true, x1, g.W)
			dst = append(dst, PoolBin{HS: hs, HE: he, WS: ws, WE: we})
		}
	}
	return dst
}
