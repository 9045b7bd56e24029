package gops

import (
	"fmt"
	"math"
)

// roiAlignGeom fixes everything a RoIAlign kernel needs besides the data:
// the input's shape [N, C, H, W] and the options.
type roiAlignGeom struct {
	n, c, h, w    int
	ph, pw        int
	scale         float64 // already resolved: > 0
	samplingRatio int
	aligned       bool
}

// maxSamplesPerBox bounds the sampling grid of one box (pooled bins times
// samples per bin), so that an enormous box with adaptive sampling gives an
// error instead of an allocation of any size.
const maxSamplesPerBox = 1 << 24

// bilinearTap is one sample point: the four neighbouring pixels (offsets in
// an H×W plane) and their bilinear weights. full says that all four pixels
// are read; otherwise a corner with pos < 0 is skipped.
type bilinearTap[T float] struct {
	pos  [4]int
	w    [4]T
	full bool
}

// dot is Σ w·x over the tap's pixels.
func (t *bilinearTap[T]) dot(x []T) T {
	if t.full {
		return t.w[0]*x[t.pos[0]] + t.w[1]*x[t.pos[1]] + t.w[2]*x[t.pos[2]] + t.w[3]*x[t.pos[3]]
	}
	var v T
	for i, p := range t.pos {
		if p >= 0 {
			v += t.w[i] * x[p]
		}
	}
	return v
}

// scatter adds w·v to the tap's pixels of x.
func (t *bilinearTap[T]) scatter(x []T, v T) {
	if t.full {
		x[t.pos[0]] += t.w[0] * v
		x[t.pos[1]] += t.w[1] * v
		x[t.pos[2]] += t.w[2] * v
		x[t.pos[3]] += t.w[3] * v
		return
	}
	for i, p := range t.pos {
		if p >= 0 {
			x[p] += t.w[i] * v
		}
	}
}

// roiAlignBox is the sampling grid of one box: bins of binH×binW starting at
// (startY, startX), gh×gw samples per bin, averaged over count.
type roiAlignBox[T float] struct {
	startY, startX T
	binH, binW     T
	gh, gw         int
	count          T
}

// roiAlignBoxGrid computes torchvision's roi_align geometry for one box row
// (batch_index, x1, y1, x2, y2): coordinates times spatial_scale, minus 0.5
// when aligned; roi size clamped to >= 1 only when not aligned; sampling
// ratio or, adaptively, ceil(roi size / output size) samples per bin side;
// averaging count max(gh·gw, 1). An inverted aligned box gets an empty grid
// (torchvision fails on it with a vector-size error).
func roiAlignBoxGrid[T float](g *roiAlignGeom, box []T) (roiAlignBox[T], error) {
	var off T
	if g.aligned {
		off = 0.5
	}
	// As torchvision: coordinate·spatial_scale − offset, in T.
	scale := T(g.scale)
	x1 := box[1]*scale - off
	y1 := box[2]*scale - off
	x2 := box[3]*scale - off
	y2 := box[4]*scale - off
	rw, rh := x2-x1, y2-y1
	if !g.aligned {
		rw, rh = max(rw, 1), max(rh, 1)
	}
	b := roiAlignBox[T]{startY: y1, startX: x1, binH: rh / T(g.ph), binW: rw / T(g.pw)}
	if g.samplingRatio > 0 {
		b.gh, b.gw = g.samplingRatio, g.samplingRatio
	} else {
		fh := math.Ceil(float64(rh / T(g.ph)))
		fw := math.Ceil(float64(rw / T(g.pw)))
		if !(fh > 0) || !(fw > 0) { // inverted, empty or NaN (overflowed) sizes
			fh, fw = 0, 0
		}
		if fh*fw*float64(g.ph*g.pw) > maxSamplesPerBox {
			return b, fmt.Errorf("adaptive sampling grid %vx%v per bin is too large", fh, fw)
		}
		b.gh, b.gw = max(int(fh), 0), max(int(fw), 0)
	}
	if b.gh*b.gw*g.ph*g.pw > maxSamplesPerBox {
		return b, fmt.Errorf("sampling grid %dx%d per bin is too large", b.gh, b.gw)
	}
	b.count = T(max(b.gh*b.gw, 1))
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
func (b *roiAlignBox[T]) sampleChunks(g *roiAlignGeom, taps *[]bilinearTap[T], spans *[]binSpan, fn func([]bilinearTap[T], []binSpan)) {
	b.sampleBinChunks(g, 0, g.ph*g.pw, taps, spans, fn)
}

// sampleBinChunks is sampleChunks for bins [bin0, bin1) only.
func (b *roiAlignBox[T]) sampleBinChunks(g *roiAlignGeom, bin0, bin1 int, taps *[]bilinearTap[T], spans *[]binSpan, fn func([]bilinearTap[T], []binSpan)) {
	per := b.gh * b.gw
	for s0 := bin0 * per; s0 < bin1*per; s0 += tapsPerChunk {
		s1 := min(s0+tapsPerChunk, bin1*per)
		ts, sp := (*taps)[:0], (*spans)[:0]
		for bin := s0 / per; bin*per < s1; bin++ {
			lo, hi := max(bin*per, s0), min((bin+1)*per, s1)
			sp = append(sp, binSpan{bin: bin, lo: lo - s0, hi: hi - s0, first: lo == bin*per, last: hi == (bin+1)*per})
			ph, pw := bin/g.pw, bin%g.pw
			for i := lo - bin*per; i < hi-bin*per; i++ {
				iy, ix := i/b.gw, i%b.gw
				y := b.startY + T(ph)*b.binH + T(float32(iy)+0.5)*b.binH/T(b.gh)
				x := b.startX + T(pw)*b.binW + T(float32(ix)+0.5)*b.binW/T(b.gw)
				ts = append(ts, roiAlignTap(y, x, g.h, g.w))
			}
		}
		*taps, *spans = ts, sp
		fn(ts, sp)
	}
}

// outsideTap reports whether t is a sample point outside the input, to which
// roiAlignTap gives four zero weights (a point inside has weights summing
// to 1, never all zero). torchvision's roi_align forward still reads pixel 0
// for it; its backward and ps_roi_align skip it in both directions.
func outsideTap[T float](t *bilinearTap[T]) bool { return t.w == [4]T{} }

// roiAlignTap is torchvision's roi_align bilinear rule: a point with
// y < -1, y > H, x < -1 or x > W contributes nothing; coordinates <= 0 are
// clamped to 0; a point on or past the last row (column) reads that row
// (column) only.
// As in torchvision, every tap reads its four pixels (pixel 0 with weight 0
// for an outside point), so a NaN in the input spreads as it does there.
func roiAlignTap[T float](y, x T, h, w int) bilinearTap[T] {
	t := bilinearTap[T]{full: true}
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
type pixelWeight[T float] struct {
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
func mergePixels[T float](dst []pixelWeight[T], taps []bilinearTap[T], skipOutside bool) []pixelWeight[T] {
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

// roiAlignGrids validates the boxes and computes every box's grid.
func roiAlignGrids[T float](g *roiAlignGeom, boxes []T) ([]roiAlignBox[T], error) {
	if err := checkBoxes("RoIAlign", boxes, g.n); err != nil {
		return nil, err
	}
	grids := make([]roiAlignBox[T], len(boxes)/5)
	for k := range grids {
		var err error
		if grids[k], err = roiAlignBoxGrid(g, boxes[5*k:5*k+5]); err != nil {
			return nil, fmt.Errorf("gops: RoIAlign: box %d: %w", k, err)
		}
	}
	return grids, nil
}

// binBlockElems bounds the rows of consecutive bins (C values each) that the
// RoIAlign kernels hold per worker, so that an enormous OutputSize costs
// time, not memory.
const binBlockElems = 1 << 15

// binBlock is how many consecutive bins of C values the kernels hold: a
// whole box when it fits in binBlockElems, otherwise blocks of bins, at
// least one.
func binBlock(bins, c int) int { return max(1, min(bins, binBlockElems/max(c, 1))) }

// divider divides by a box's averaging count, multiplying by the reciprocal
// when that is exact (a power of two), which gives the same result.
type divider[T float] struct {
	count, inv T
	exact      bool
}

func newDivider[T float](b *roiAlignBox[T]) divider[T] {
	n := max(b.gh*b.gw, 1)
	return divider[T]{count: b.count, inv: 1 / b.count, exact: n&(n-1) == 0}
}

// roiAlignForward computes out[k, c, ph, pw] (K×C×PH×PW), the average of the
// bilinear samples of input[batch(k), c] in bin (ph, pw) of box k.
//
// The input is first copied channels-last ([N, H, W, C]). A bin's C sums
// are then one row, to which each sample point adds its four pixels' rows
// with axpy, so every output sums the same terms in the same order (per
// point, its four pixels in tap order) whatever the number of threads. Rows
// of a block of bins are written to out once complete. Parallel over boxes;
// each box writes only its own output.
func roiAlignForward[T float](g *roiAlignGeom, input, boxes, out []T) error {
	grids, err := roiAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, bins := g.h*g.w, g.ph*g.pw
	xcl := make([]T, len(input))
	transposeBatch(xcl, input, g.n, g.c, plane, false)
	block := binBlock(bins, g.c)
	parallelFor(len(grids), func(lo, hi int) {
		var taps []bilinearTap[T]
		var spans []binSpan
		acc := make([]T, block*g.c) // sums of a block of bins, [bin, C]
		var px []pixelWeight[T]
		for k := lo; k < hi; k++ {
			b := &grids[k]
			o := out[k*g.c*bins : (k+1)*g.c*bins]
			if b.gh*b.gw == 0 { // no samples: torchvision's 0/1
				clear(o)
				continue
			}
			n := int(boxes[5*k])
			x := xcl[n*plane*g.c : (n+1)*plane*g.c]
			div := newDivider(b)
			b.sampleChunks(g, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
				for _, sp := range spans {
					r := sp.bin % block
					row := acc[r*g.c : (r+1)*g.c]
					if sp.first {
						clear(row)
					}
					px = mergePixels(px[:0], taps[sp.lo:sp.hi], false)
					for _, q := range px {
						axpy(q.w, x[q.pos*g.c:(q.pos+1)*g.c], row)
					}
					// Bins end in order; a bin may continue in the next chunk.
					if sp.last && (r == block-1 || sp.bin == bins-1) {
						b0 := sp.bin - r
						div.scale(acc[:(r+1)*g.c])
						transpose2D(o[b0:], bins, acc, g.c, r+1, g.c, false)
					}
				}
			})
		}
	})
	return nil
}

// roiAlignTranspose is the adjoint of roiAlignForward in its input: it
// scatters grad[k, c, ph, pw] back onto dst [N, C, H, W] (adding to what is
// there) with the same weights. A point outside the image adds nothing (as
// torchvision's backward; adding 0·g to pixel 0 would spread an infinite
// gradient).
//
// The sums are made channels-last ([N, H, W, C]), each point adding its
// bin's gradient row (over channels, divided by the count) to its four
// pixels' rows with axpy, and then added to dst. Parallel over ranges of
// channels: each worker owns its channels of every pixel and visits the
// boxes, points and pixels in order, so sums are bitwise reproducible
// without atomics.
func roiAlignTranspose[T float](g *roiAlignGeom, grad, boxes, dst []T) error {
	grids, err := roiAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, bins := g.h*g.w, g.ph*g.pw
	dcl := make([]T, len(dst))
	parallelFor(g.c, func(lo, hi int) {
		var taps []bilinearTap[T]
		var spans []binSpan
		cw := hi - lo
		block := binBlock(bins, cw)
		gb := make([]T, block*cw) // gradients of a block of bins, [bin, channel]
		var px []pixelWeight[T]
		for k := range grids {
			b := &grids[k]
			n := int(boxes[5*k])
			d := dcl[n*plane*g.c : (n+1)*plane*g.c]
			gk := grad[k*g.c*bins : (k+1)*g.c*bins]
			div := newDivider(b)
			b.sampleChunks(g, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
				for _, sp := range spans {
					r := sp.bin % block
					if r == 0 && sp.first { // a new block of bins: gather it
						nb := min(block, bins-sp.bin)
						transpose2D(gb, cw, gk[lo*bins+sp.bin:], bins, cw, nb, false)
						div.scale(gb[:nb*cw])
					}
					gv := gb[r*cw : (r+1)*cw]
					px = mergePixels(px[:0], taps[sp.lo:sp.hi], true)
					for _, q := range px {
						axpy(q.w, gv, d[q.pos*g.c+lo:q.pos*g.c+hi])
					}
				}
			})
		}
	})
	transposeBatch(dst, dcl, g.n, plane, g.c, true)
	return nil
}
