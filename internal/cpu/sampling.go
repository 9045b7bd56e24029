package cpu

import (
	"fmt"
	"math"
)

// MaxSamplesPerBox bounds the sampling grid of one box (pooled bins times
// samples per bin), so that an enormous box with adaptive sampling gives an
// error instead of an allocation of any size.
const MaxSamplesPerBox = 1 << 24

// bilinearTap is one sample point: the four neighbouring pixels (offsets in
// an H×W plane) and their bilinear weights.
type bilinearTap[T Float] struct {
	pos [4]int
	w   [4]T
}

// RoIAlignBox is the sampling grid of one box: bins of binH×binW starting at
// (startY, startX), gh×gw samples per bin, averaged over count.
type RoIAlignBox[T Float] struct {
	StartY, StartX T
	BinH, BinW     T
	GH, GW         int
	Count          T
}

// roiAlignBoxGrid computes torchvision's roi_align geometry for one box row
// (batch_index, x1, y1, x2, y2): coordinates times spatial_scale, minus 0.5
// when aligned; roi size clamped to >= 1 only when not aligned; sampling
// ratio or, adaptively, ceil(roi size / output size) samples per bin side;
// averaging count max(gh·gw, 1). An inverted aligned box gets an empty grid
// (torchvision fails on it with a vector-size error).
func roiAlignBoxGrid[T Float](g *RoIAlignGeom, box []T) (RoIAlignBox[T], error) {
	var off T
	if g.Aligned {
		off = 0.5
	}
	// As torchvision: coordinate·spatial_scale − offset, in T.
	scale := T(g.Scale)
	x1 := box[1]*scale - off
	y1 := box[2]*scale - off
	x2 := box[3]*scale - off
	y2 := box[4]*scale - off
	rw, rh := x2-x1, y2-y1
	if !g.Aligned {
		rw, rh = max(rw, 1), max(rh, 1)
	}
	b := RoIAlignBox[T]{StartY: y1, StartX: x1, BinH: rh / T(g.PH), BinW: rw / T(g.PW)}
	if g.SamplingRatio > 0 {
		b.GH, b.GW = g.SamplingRatio, g.SamplingRatio
	} else {
		fh := math.Ceil(float64(rh / T(g.PH)))
		fw := math.Ceil(float64(rw / T(g.PW)))
		if !(fh > 0) || !(fw > 0) { // inverted, empty or NaN (overflowed) sizes
			fh, fw = 0, 0
		}
		if fh*fw*float64(g.PH*g.PW) > MaxSamplesPerBox {
			return b, fmt.Errorf("adaptive sampling grid %vx%v per bin is too large", fh, fw)
		}
		b.GH, b.GW = max(int(fh), 0), max(int(fw), 0)
	}
	if b.GH*b.GW*g.PH*g.PW > MaxSamplesPerBox {
		return b, fmt.Errorf("sampling grid %dx%d per bin is too large", b.GH, b.GW)
	}
	b.Count = T(max(b.GH*b.GW, 1))
	return b, nil
}

// tapsPerChunk bounds the sample points of one box that a kernel holds at a
// time (per worker): an enormous adaptive grid is walked in pieces.
const tapsPerChunk = 1 << 14

// binSpan says that points [lo, hi) of a chunk belong to bin; first and last
// say whether they start and end the bin's points.
type binSpan struct {
	bin, lo, hi int
	first, last bool
}

// sampleChunks walks the box's sample points, bins in row-major order and
// gh·gw points per bin, at most tapsPerChunk at a time: fn gets each chunk's
// points and the bins they belong to. taps and spans are reused buffers.
func (b *RoIAlignBox[T]) sampleChunks(g *RoIAlignGeom, taps *[]bilinearTap[T], spans *[]binSpan, fn func([]bilinearTap[T], []binSpan)) {
	b.sampleBinChunks(g, 0, g.PH*g.PW, taps, spans, fn)
}

// sampleBinChunks is sampleChunks for bins [bin0, bin1) only: its chunks
// end where sampleChunks' do (at multiples of tapsPerChunk points from the
// box's first), so a bin's points come in the same pieces.
func (b *RoIAlignBox[T]) sampleBinChunks(g *RoIAlignGeom, bin0, bin1 int, taps *[]bilinearTap[T], spans *[]binSpan, fn func([]bilinearTap[T], []binSpan)) {
	per := b.GH * b.GW
	for s0, s1 := bin0*per, 0; s0 < bin1*per; s0 = s1 {
		s1 = min((s0/tapsPerChunk+1)*tapsPerChunk, bin1*per)
		ts, sp := (*taps)[:0], (*spans)[:0]
		for bin := s0 / per; bin*per < s1; bin++ {
			lo, hi := max(bin*per, s0), min((bin+1)*per, s1)
			sp = append(sp, binSpan{bin: bin, lo: lo - s0, hi: hi - s0, first: lo == bin*per, last: hi == (bin+1)*per})
			ph, pw := bin/g.PW, bin%g.PW
			for i := lo - bin*per; i < hi-bin*per; i++ {
				y, x := b.samplePoint(ph, pw, i/b.GW, i%b.GW)
				ts = append(ts, roiAlignTap(y, x, g.H, g.W))
			}
		}
		*taps, *spans = ts, sp
		fn(ts, sp)
	}
}

// samplePoint is the sample point (iy, ix) of bin (ph, pw), in input
// coordinates, with torchvision's arithmetic (in T).
func (b *RoIAlignBox[T]) samplePoint(ph, pw, iy, ix int) (y, x T) {
	y = b.StartY + T(ph)*b.BinH + T(float32(iy)+0.5)*b.BinH/T(b.GH)
	x = b.StartX + T(pw)*b.BinW + T(float32(ix)+0.5)*b.BinW/T(b.GW)
	return y, x
}

// outsideTap reports whether t is a sample point outside the input, to which
// roiAlignTap gives four zero weights (a point inside has weights summing
// to 1, never all zero). torchvision's roi_align forward still reads pixel 0
// for it; its backward and ps_roi_align skip it in both directions.
func outsideTap[T Float](t *bilinearTap[T]) bool { return t.w == [4]T{} }

// roiAlignTap is torchvision's roi_align bilinear rule: a point with
// y < -1, y > H, x < -1 or x > W contributes nothing; coordinates <= 0 are
// clamped to 0; a point on or past the last row (column) reads that row
// (column) only.
// As in torchvision, every tap reads its four pixels (pixel 0 with weight 0
// for an outside point), so a NaN in the input spreads as it does there.
func roiAlignTap[T Float](y, x T, h, w int) bilinearTap[T] {
	var t bilinearTap[T]
	if !(y >= -1 && y <= T(h) && x >= -1 && x <= T(w)) { // true for NaN too
		return t
	}
	y, x = max(y, 0), max(x, 0)
	yl, xl := int(y), int(x)
	var yh, xh int
	if yl >= h-1 {
		yl, yh, y = h-1, h-1, T(h-1)
	} else {
		yh = yl + 1
	}
	if xl >= w-1 {
		xl, xh, x = w-1, w-1, T(w-1)
	} else {
		xh = xl + 1
	}
	ly, lx := y-T(yl), x-T(xl)
	hy, hx := 1-ly, 1-lx
	t.pos = [4]int{yl*w + xl, yl*w + xh, yh*w + xl, yh*w + xh}
	t.w = [4]T{hy * hx, hy * lx, ly * hx, ly * lx}
	return t
}

// pixelWeight is a pixel (offset in an H×W plane) and the sum of the
// weights with which a bin's sample points read it.
type pixelWeight[T Float] struct {
	pos int
	w   T
}

// mergeWindow is how far back mergePixels looks for a pixel already read:
// far enough for the neighbouring points of a row and of the row above at
// small grids, and a bounded cost per point at any grid.
const mergeWindow = 16

// mergePixels appends to dst the pixels the taps read with their summed
// weights, in order of first appearance (a pixel met again after more than
// mergeWindow others appears again), so that a bin adds each pixel's row
// about once rather than once per point that reads it. With skipOutside the
// taps of points outside the input are left out (the transpose); otherwise
// they read pixel 0 with weight 0, as torchvision's forward. A zero weight
// is never merged: 0·Inf must still give NaN.
func mergePixels[T Float](dst []pixelWeight[T], taps []bilinearTap[T], skipOutside bool) []pixelWeight[T] {
	for i := range taps {
		t := &taps[i]
		if skipOutside && outsideTap(t) {
			continue
		}
	corners:
		for j, p := range t.pos {
			if w := t.w[j]; w != 0 {
				for k := len(dst) - 1; k >= max(len(dst)-mergeWindow, 0); k-- {
					if dst[k].pos == p && dst[k].w != 0 {
						dst[k].w += w
						continue corners
					}
				}
			}
			dst = append(dst, pixelWeight[T]{p, t.w[j]})
		}
	}
	return dst
}

// divider divides by a box's averaging count, multiplying by the reciprocal
// when that is exact (a power of two), which gives the same result.
type divider[T Float] struct {
	count, inv T
	exact      bool
}

func newDivider[T Float](b *RoIAlignBox[T]) divider[T] {
	n := max(b.GH*b.GW, 1)
	return divider[T]{count: b.Count, inv: 1 / b.Count, exact: n&(n-1) == 0}
}
