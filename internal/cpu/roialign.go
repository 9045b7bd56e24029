package cpu

import (
	"fmt"

	"github.com/gops-dev/gops/internal/par"
)

// RoIAlignGeom fixes everything a RoIAlign kernel needs besides the data:
// the input's shape [N, C, H, W] and the options.
type RoIAlignGeom struct {
	N, C, H, W    int
	PH, PW        int
	Scale         float64 // already resolved: > 0
	SamplingRatio int
	Aligned       bool
}

// RoIAlignGrids validates the boxes and computes every box's grid.
func RoIAlignGrids[T Float](g *RoIAlignGeom, boxes []T) ([]RoIAlignBox[T], error) {
	if err := CheckBoxes("RoIAlign", boxes, g.N); err != nil {
		return nil, err
	}
	grids := make([]RoIAlignBox[T], len(boxes)/5)
	for k := range grids {
		var err error
		if grids[k], err = roiAlignBoxGrid(g, boxes[5*k:5*k+5]); err != nil {
			return nil, fmt.Errorf("gops: RoIAlign: box %d: %w", k, err)
		}
	}
	return grids, nil
}

// RoIAlignForward computes out[k, c, ph, pw] (K×C×PH×PW), the average of the
// bilinear samples of input[batch(k), c] in bin (ph, pw) of box k.
//
// The input is first copied channels-last ([N, H, W, C]). A bin's C sums
// are then one row, to which each sample point adds its four pixels' rows
// with axpy, so every output sums the same terms in the same order (per
// point, its four pixels in tap order) whatever the number of threads. Rows
// of a block of bins are written to out once complete. Parallel over boxes;
// each box writes only its own output.
func RoIAlignForward[T Float](g *RoIAlignGeom, input, boxes, out []T) error {
	grids, err := RoIAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, bins := g.H*g.W, g.PH*g.PW
	xcl := floatScratch[T]().Get(len(input))
	defer floatScratch[T]().Put(xcl)
	// Only the rows that the boxes sample; the rest of xcl is never read.
	transposeSpansToLast(xcl, input, g.C, plane, roiAlignRowSpans(g, grids, boxes))
	block := binBlock(bins, g.C)
	par.ForWork(len(grids), 4*len(out), func(lo, hi int) {
		var taps []bilinearTap[T]
		var spans []binSpan
		acc := make([]T, block*g.C) // sums of a block of bins, [bin, C]
		var px []pixelWeight[T]
		for k := lo; k < hi; k++ {
			b := &grids[k]
			o := out[k*g.C*bins : (k+1)*g.C*bins]
			if b.GH*b.GW == 0 { // no samples: torchvision's 0/1
				clear(o)
				continue
			}
			n := int(boxes[5*k])
			x := xcl[n*plane*g.C : (n+1)*plane*g.C]
			div := newDivider(b)
			b.sampleChunks(g, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
				for _, sp := range spans {
					r := sp.bin % block
					row := acc[r*g.C : (r+1)*g.C]
					if sp.first {
						clear(row)
					}
					px = mergePixels(px[:0], taps[sp.lo:sp.hi], false)
					for _, q := range px {
						axpy(q.w, x[q.pos*g.C:(q.pos+1)*g.C], row)
					}
					// Bins end in order; a bin may continue in the next chunk.
					if sp.last && (r == block-1 || sp.bin == bins-1) {
						b0 := sp.bin - r
						div.scale(acc[:(r+1)*g.C])
						transpose2D(o[b0:], bins, acc, g.C, r+1, g.C, false)
					}
				}
			})
		}
	})
	return nil
}

// RoIAlignTranspose is the adjoint of RoIAlignForward in its input: it
// sets dst [N, C, H, W] to the scatter of grad[k, c, ph, pw] with the same
// weights (every element written: 0 where no point reads, so dst need not
// be cleared). A point outside the image adds nothing (as torchvision's
// backward; adding 0·g to pixel 0 would spread an infinite gradient).
//
// The sums are made channels-last ([N, H, W, C]), each point adding its
// bin's gradient row (over channels, divided by the count) to its four
// pixels' rows with axpy, and then copied to dst: the same values as
// adding them to zeros, as a sum that starts from +0 is never −0. Only
// the rows of each image that its boxes sample (roiAlignRowSpans) are
// summed and copied; the rest of dst is cleared. Parallel over ranges of
// channels: each worker owns its channels of every pixel and visits the
// boxes, points and pixels in order, so sums are bitwise reproducible
// without atomics.
func RoIAlignTranspose[T Float](g *RoIAlignGeom, grad, boxes, dst []T) error {
	grids, err := RoIAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, bins := g.H*g.W, g.PH*g.PW
	dcl := floatScratch[T]().Get(len(dst))
	defer floatScratch[T]().Put(dcl)
	rows := roiAlignRowSpans(g, grids, boxes)
	for n, s := range rows {
		clear(dcl[(n*plane+s.Lo)*g.C : (n*plane+s.Hi)*g.C])
		for c := range g.C {
			p := dst[(n*g.C+c)*plane : (n*g.C+c+1)*plane]
			clear(p[:s.Lo])
			clear(p[s.Hi:])
		}
	}
	par.ForWork(g.C, 4*len(grad), func(lo, hi int) {
		var taps []bilinearTap[T]
		var spans []binSpan
		cw := hi - lo
		block := binBlock(bins, cw)
		gb := make([]T, block*cw) // gradients of a block of bins, [bin, channel]
		var px []pixelWeight[T]
		for k := range grids {
			b := &grids[k]
			n := int(boxes[5*k])
			d := dcl[n*plane*g.C : (n+1)*plane*g.C]
			gk := grad[k*g.C*bins : (k+1)*g.C*bins]
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
						axpy(q.w, gv, d[q.pos*g.C+lo:q.pos*g.C+hi])
					}
				}
			})
		}
	})
	transposeSpansFromLast(dst, dcl, g.C, plane, rows, false)
	return nil
}

// binBlockElems bounds the rows of consecutive bins (C values each) that the
// RoIAlign kernels hold per worker, so that an enormous OutputSize costs
// time, not memory.
const binBlockElems = 1 << 15

// binBlock is how many consecutive bins of C values the kernels hold: a
// whole box when it fits in binBlockElems, otherwise blocks of bins, at
// least one.
func binBlock(bins, c int) int { return max(1, min(bins, binBlockElems/max(c, 1))) }
