package cpu

import "github.com/gops-dev/gops/internal/par"

// The RoIAlign kernels work channels-last ([N, H, W, C]) on a copy of the
// image (forward) or of its gradient (transpose). At a large image with
// small boxes most of the plane is never sampled, so they move only the
// rows of each image that its boxes' sample points can read: its plane
// span.

// planeSpan is the half-open range [Lo, Hi) of pixel offsets (row·W +
// column) of one image's plane that a kernel reads or writes; Lo = Hi is
// none.
type planeSpan struct{ Lo, Hi int }

// spanPixels is the width in pixels of the bands into which the span
// transposes cut a span for the workers (4096 float64 of 16 channels, a
// few L2-sized pieces of a plane).
const spanPixels = 256

// roiAlignRowSpans returns, for each of the g.N images, the pixels of the
// rows that the bilinear taps (roiAlignTap) of the boxes of that image
// can read: from the row below the lowest sample row to two past the
// highest, which covers the tap's second row and any rounding of the
// sample coordinates. A box whose sample points may fall outside the
// image (they read pixel 0 with weight 0) or are NaN widens its image's
// span to the whole plane; a box without samples reads nothing.
func roiAlignRowSpans[T Float](g *RoIAlignGeom, grids []RoIAlignBox[T], boxes []T) []planeSpan {
	spans := make([]planeSpan, g.N)
	for k := range grids {
		b := &grids[k]
		if b.GH*b.GW == 0 {
			continue
		}
		ylo, yhi := b.StartY, b.StartY+T(g.PH)*b.BinH
		xlo, xhi := b.StartX, b.StartX+T(g.PW)*b.BinW
		ylo, yhi = min(ylo, yhi), max(ylo, yhi)
		xlo, xhi = min(xlo, xhi), max(xlo, xhi)
		r0, r1 := 0, g.H
		if ylo >= -1 && yhi <= T(g.H) && xlo >= -1 && xhi <= T(g.W) { // false for NaN
			r0 = max(int(max(ylo, 0))-1, 0)
			r1 = min(int(yhi)+3, g.H)
		}
		s := &spans[int(boxes[5*k])]
		if s.Lo == s.Hi {
			s.Lo, s.Hi = r0*g.W, r1*g.W
		} else {
			s.Lo, s.Hi = min(s.Lo, r0*g.W), max(s.Hi, r1*g.W)
		}
	}
	return spans
}

// transposeSpansToLast copies the pixels in each image's span of src
// ([N, C, plane]) channels-last into dst ([N, plane, C]): dst[n, p, c] =
// src[n, c, p]. Elsewhere dst is left as it is. Parallel over bands of
// pixels.
func transposeSpansToLast[T number](dst, src []T, c, plane int, spans []planeSpan) {
	forSpanBands(spans, c, func(n, p0, p1 int) {
		off := n * plane * c
		transpose2D(dst[off+p0*c:], c, src[off+p0:], plane, c, p1-p0, false)
	})
}

// transposeSpansFromLast writes (or adds, when add is set) the pixels in
// each image's span of src ([N, plane, C]) back channels-first into dst
// ([N, C, plane]): dst[n, c, p] = src[n, p, c]. Elsewhere dst is left as it
// is. Parallel over bands of pixels.
func transposeSpansFromLast[T number](dst, src []T, c, plane int, spans []planeSpan, add bool) {
	forSpanBands(spans, c, func(n, p0, p1 int) {
		off := n * plane * c
		transpose2D(dst[off+p0:], plane, src[off+p0*c:], c, p1-p0, c, add)
	})
}

// forSpanBands runs body(n, p0, p1) on every band of spanPixels pixels of
// every image's span (c channels each), in parallel; the bands are
// disjoint.
func forSpanBands(spans []planeSpan, c int, body func(n, p0, p1 int)) {
	type band struct{ n, p0, p1 int }
	var bands []band
	pixels := 0
	for n, s := range spans {
		for p := s.Lo; p < s.Hi; p += spanPixels {
			bands = append(bands, band{n, p, min(p+spanPixels, s.Hi)})
		}
		pixels += s.Hi - s.Lo
	}
	par.ForWork(len(bands), 2*pixels*c, func(lo, hi int) {
		for _, b := range bands[lo:hi] {
			body(b.n, b.p0, b.p1)
		}
	})
}
