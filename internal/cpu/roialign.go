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
// A bin's C sums are one row, to which each sample point adds its four
// pixels of every channel, so every output sums the same terms in the
// same order (per point, its four pixels in tap order) whatever the number
// of threads and whichever layout is read: a channels-last copy of the
// input ([N, H, W, C], whole C-long pixel rows added with axpy) when the
// boxes sample densely (roiAlignChannelsLast), else the NCHW planes where
// they are (gatherPixels). Rows of a block of bins are written to out once
// complete. Parallel over boxes; each box writes only its own output.
func RoIAlignForward[T Float](g *RoIAlignGeom, input, boxes, out []T) error {
	grids, xcl, err := roiAlignLayout(g, boxes, len(input))
	if err != nil {
		return err
	}
	plane, bins := g.H*g.W, g.PH*g.PW
	cl, src := xcl != nil, input
	if cl {
		defer floatScratch[T]().Put(xcl)
		transposeBatch(xcl, input, g.N, g.C, plane, false)
		src = xcl
	}
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
			x := src[n*g.C*plane : (n+1)*g.C*plane]
			div := newDivider(b)
			b.sampleChunks(g, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
				for _, sp := range spans {
					r := sp.bin % block
					row := acc[r*g.C : (r+1)*g.C]
					if sp.first {
						clear(row)
					}
					px = mergePixels(px[:0], taps[sp.lo:sp.hi], false)
					if cl {
						for _, q := range px {
							axpy(q.w, x[q.pos*g.C:(q.pos+1)*g.C], row)
						}
					} else {
						gatherPixels(row, x, plane, px)
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
// Each point adds its bin's gradient (per channel, divided by the count)
// to its four pixels of every channel: into a cleared channels-last
// buffer with axpy, then transposed into dst, when the boxes sample
// densely (roiAlignChannelsLast), else into the cleared NCHW planes of
// dst in place (scatterPixels); the same terms in the same order either
// way. Parallel over ranges of channels: each worker owns its channels of
// every pixel and visits the boxes, points and pixels in order, so sums
// are bitwise reproducible without atomics.
func RoIAlignTranspose[T Float](g *RoIAlignGeom, grad, boxes, dst []T) error {
	grids, dcl, err := roiAlignLayout(g, boxes, len(dst))
	if err != nil {
		return err
	}
	plane, bins := g.H*g.W, g.PH*g.PW
	cl, acc := dcl != nil, dst
	if cl {
		defer floatScratch[T]().Put(dcl)
		acc = dcl
	}
	clear(acc)
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
			d := acc[n*g.C*plane : (n+1)*g.C*plane]
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
					if cl {
						for _, q := range px {
							axpy(q.w, gv, d[q.pos*g.C+lo:q.pos*g.C+hi])
						}
					} else {
						scatterPixels(d[lo*plane:hi*plane], plane, gv, px)
					}
				}
			})
		}
	})
	if cl {
		transposeBatch(dst, acc, g.N, plane, g.C, false)
	}
	return nil
}

// roiAlignLayout is where both kernels start: the boxes' grids and, when
// roiAlignChannelsLast picks the channels-last layout, a scratch buffer of
// n elements for the copy (nil otherwise; give it back with
// floatScratch[T]().Put).
func roiAlignLayout[T Float](g *RoIAlignGeom, boxes []T, n int) ([]RoIAlignBox[T], []T, error) {
	grids, err := RoIAlignGrids(g, boxes)
	if err != nil || !roiAlignChannelsLast(g, grids) {
		return grids, nil, err
	}
	return grids, floatScratch[T]().Get(n), nil
}

// roiAlignChannelsLast reports whether the RoIAlign kernels work on a
// channels-last copy of the maps: when the boxes' sample points touch
// (four pixels each) at least clTouches times as many pixels as the maps
// hold. Then the copy, two sequential passes over the maps, costs less
// than reading or writing each channel's plane at scattered pixels, and
// whole C-long pixel rows go through axpy; with a few small boxes on large
// maps (the demo's larger size) the planes are read where they are.
func roiAlignChannelsLast[T Float](g *RoIAlignGeom, grids []RoIAlignBox[T]) bool {
	touches, pixels := 0, g.N*g.H*g.W
	for k := range grids {
		touches += 4 * grids[k].GH * grids[k].GW * g.PH * g.PW
		if touches >= clTouches*pixels {
			return true
		}
	}
	return false
}

// clTouches is roiAlignChannelsLast's threshold (see there).
var clTouches = 2

// binBlockElems bounds the rows of consecutive bins (C values each) that the
// RoIAlign kernels hold per worker, so that an enormous OutputSize costs
// time, not memory.
const binBlockElems = 1 << 15

// binBlock is how many consecutive bins of C values the kernels hold: a
// whole box when it fits in binBlockElems, otherwise blocks of bins, at
// least one.
func binBlock(bins, c int) int { return max(1, min(bins, binBlockElems/max(c, 1))) }

// gatherPixels adds, for each channel c of row, the pixels px of plane c
// of x (channels-first, planes of plane elements), weighted, in the order
// of px: row[c] += w·x[c·plane + pos]. Each element gets the same terms in
// the same order as axpy over a channels-last copy would add, and the
// product is rounded before the sum (the conversion keeps the compiler
// from fusing them), as gonum's axpy does.
func gatherPixels[T Float](row, x []T, plane int, px []pixelWeight[T]) {
	for c := range row {
		xc := x[c*plane : (c+1)*plane]
		s := row[c]
		for _, q := range px {
			s += T(q.w * xc[q.pos])
		}
		row[c] = s
	}
}

// scatterPixels is gatherPixels' transpose: for each channel c of gv, it
// adds gv[c]·w to pixel pos of plane c of d for the pixels px, in their
// order.
func scatterPixels[T Float](d []T, plane int, gv []T, px []pixelWeight[T]) {
	for c, v := range gv {
		dc := d[c*plane : (c+1)*plane]
		for _, q := range px {
			dc[q.pos] += T(q.w * v)
		}
	}
}
