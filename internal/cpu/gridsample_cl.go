package cpu

import (
	"runtime"
	"sync/atomic"

	"github.com/gops-dev/gops/internal/par"
)

// GridSample's float32 bilinear S, T and O channels-last (AVX2, C a multiple
// of 8). A pixel's taps are shared by all the channels of its image, so
// instead of gathering each plane's corners pixel by pixel, a unit of cw
// channels of one image is copied into a zero-framed channels-last plane
// [(H+3)·(W+2), cw] (gridTranspose8, blocks of 8×8 transposed in
// registers), where a corner's 8 channels are one vector load: S
// (gridSampleCL) computes 8 pixels × 8 channels per step and transposes
// the block back to the planes' layout; T (gridScatterCL) transposes the
// upstream block to pixels' channel vectors, adds them to the corners in
// pixel order, and the unit's plane is then copied out; bilinear O
// (gridContractOCL) computes each pixel's per-channel corner terms,
// transposes them to pixel lanes and sums the chunk's channels in order.
// Every element takes the same operations in the same order as the Go
// loops (gridTap.value, gridScatterTaps, GridSampleO's), so the results
// are bitwise theirs. Units run in parallel, each in a worker's slot of
// one kept buffer.

// gridCLChannels is the number of channels of a channels-last unit.
// Units of 8 channels measured fastest (issue 16's size, one thread: S
// 1.5 ms with 8, 2.0 with 16, 2.5–4 with 32 or 64): a unit's plane,
// 141 KiB at 64×64, stays in L2, and the 8 output rows written at once do
// not overflow an L1 set (rows of 16 KiB alias).
const gridCLChannels = 8

// gridChannelsLast reports whether the channels-last kernels apply to g:
// AVX2, bilinear, C a multiple of gridCLChannels.
func gridChannelsLast(g *GridSampleGeom) bool {
	return gridAVX2 && !g.Nearest && g.C%gridCLChannels == 0
}

// gridCLUnits calls body(u, plane) for u in [0, units) in parallel,
// plane a worker's own channels-last plane of framedSize()·gridCLChannels
// elements
// (contents undefined): the workers' slots of one kept buffer.
func gridCLUnits(g *GridSampleGeom, units int, body func(u int, plane []float32)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), units))
	ps := g.framedSize() * gridCLChannels
	buf := floatKeep.A.Get(workers * ps)
	defer floatKeep.A.Put(buf)
	var next atomic.Int32
	par.For(units, func(lo, hi int) {
		// par.For runs at most GOMAXPROCS bodies: a slot each (a
		// fresh plane should GOMAXPROCS have grown meanwhile).
		var plane []float32
		if s := int(next.Add(1) - 1); s < workers {
			plane = buf[s*ps : (s+1)*ps]
		} else {
			plane = make([]float32, ps)
		}
		for u := lo; u < hi; u++ {
			body(u, plane)
		}
	})
}

// gridSampleCL32 is gridSampleTaps for float32 bilinear taps when
// gridChannelsLast.
func gridSampleCL32(g *GridSampleGeom, taps []gridTap[float32], x, out []float32) {
	const cw = gridCLChannels
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	chunks := g.N * g.C / cw
	if p == 0 || chunks == 0 {
		return
	}
	parts, size := gridCLParts(chunks, p)
	gridCLUnits(g, chunks*parts, func(u int, plane []float32) {
		k, j0 := u/parts, u%parts*size
		j1 := min(j0+size, p)
		n, c0 := k/(g.C/cw), k%(g.C/cw)*cw
		gridPackPlane(g, plane, x[(n*g.C+c0)*hw:(n*g.C+c0+cw)*hw], cw)
		o, tp := out[(n*g.C+c0)*p:(n*g.C+c0+cw)*p], taps[n*p:(n+1)*p]
		nb := (j1 - j0) / 8
		if nb > 0 {
			gridSampleCLBlocks(o[j0:], plane, tp[j0:], nb, cw, p, wp)
		}
		for j := j0 + 8*nb; j < j1; j++ {
			t := &tp[j]
			i := int(t.i) * cw
			q, r := plane[i:i+2*cw], plane[i+wp*cw:i+(wp+2)*cw]
			for c := 0; c < cw; c++ {
				o[c*p+j] = t.w[0]*q[c] + t.w[1]*q[cw+c] + t.w[2]*r[c] + t.w[3]*r[cw+c]
			}
		}
	})
}

// gridCLParts splits each of units' p pixels into parts ranges of size
// pixels (a multiple of 8; the last range shorter) when there are fewer
// units than workers, so that all work (each range packs its plane
// again); at least 256 pixels a range. p > 0.
func gridCLParts(units, p int) (parts, size int) {
	workers := runtime.GOMAXPROCS(0)
	parts = min(max(1, (workers+units-1)/units), max(1, p/256))
	size = ((p+parts-1)/parts + 7) &^ 7
	return (p + size - 1) / size, size
}

// gridPackPlane writes cw planes src (H×W each) channels-last into the
// zero-framed plane ((H+3)·(W+2) cells of cw): the frame (row 0, the
// first and last cells of rows 1…H, rows H+1 and H+2, zeroCell's) zeros,
// as padPlane.
func gridPackPlane(g *GridSampleGeom, plane, src []float32, cw int) {
	hw, wp := g.H*g.W, g.W+2
	clear(plane[:(wp+1)*cw])
	for y := 0; y < g.H; y++ {
		gridPackRow(plane[((y+1)*wp+1)*cw:], src[y*g.W:], g.W, cw, hw)
		clear(plane[((y+1)*wp+1+g.W)*cw : ((y+2)*wp+1)*cw])
	}
	clear(plane[((g.H+1)*wp+1)*cw:])
}

// gridPackRow writes the w pixels of cw planes' rows (src, plane stride
// hw) channels-last into row (cell stride cw).
func gridPackRow(row, src []float32, w, cw, hw int) {
	nb := w / 8
	if nb > 0 {
		gridTransposeBlocks(row, src, nb, cw/8, hw, 8, 8*hw, cw, 8*cw, 8)
	}
	for x := 8 * nb; x < w; x++ {
		for c := 0; c < cw; c++ {
			row[x*cw+c] = src[c*hw+x]
		}
	}
}

// gridScatterCL32 is gridScatterTaps for float32 bilinear taps when
// gridChannelsLast.
func gridScatterCL32(g *GridSampleGeom, taps []gridTap[float32], gr, dst []float32) {
	const cw = gridCLChannels
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	nb := p / 8
	gridCLUnits(g, g.N*g.C/cw, func(u int, plane []float32) {
		n, c0 := u/(g.C/cw), u%(g.C/cw)*cw
		clear(plane)
		src, tp := gr[(n*g.C+c0)*p:(n*g.C+c0+cw)*p], taps[n*p:(n+1)*p]
		if nb > 0 {
			gridScatterCLBlocks(plane, src, tp, nb, cw, p, wp)
		}
		// The pixels past the last full block, after the blocks: each
		// element's sum stays in pixel order.
		for j := 8 * nb; j < p; j++ {
			t := &tp[j]
			i := int(t.i) * cw
			q, r := plane[i:i+2*cw], plane[i+wp*cw:i+(wp+2)*cw]
			for c := 0; c < cw; c++ {
				v := src[c*p+j]
				q[c] += t.w[0] * v
				q[cw+c] += t.w[1] * v
				r[c] += t.w[2] * v
				r[cw+c] += t.w[3] * v
			}
		}
		d := dst[(n*g.C+c0)*hw : (n*g.C+c0+cw)*hw]
		wb := g.W / 8
		for y := 0; y < g.H; y++ {
			row := plane[((y+1)*wp+1)*cw:]
			if wb > 0 {
				gridTransposeBlocks(d[y*g.W:], row, wb, cw/8, cw, 8*cw, 8, hw, 8, 8*hw)
			}
			for x := 8 * wb; x < g.W; x++ {
				for c := 0; c < cw; c++ {
					d[c*hw+y*g.W+x] = row[x*cw+c]
				}
			}
		}
	})
}

// gridContractOCL32 is GridSampleO's channel sums for float32 bilinear
// taps (gridOTaps: corner and factors fx0, fx1, fy0, fy1) when
// gridChannelsLast: per pixel, each chunk of 8 channels summed from 0 in
// channel order and the chunks' sums added in order to a per-pixel
// accumulator (gridContract's grouping), then out[2j+h] = acc·scale
// (0 where scale is 0), x half first; out [N, HO, WO, 2] is overwritten.
// Units are an image's blocks of pixels, each running through the
// image's chunks in order (the chunk's plane packed per unit), in
// parallel: the results do not depend on the split.
func gridContractOCL32(g *GridSampleGeom, taps []gridTap[float32], x, gr, scale, out []float32) {
	const cw = gridCLChannels
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	if p == 0 || g.N == 0 {
		return
	}
	parts, size := gridCLParts(g.N, p)
	acc := floatKeep.A.Get(2 * g.N * p)
	defer floatKeep.A.Put(acc)
	gridCLUnits(g, g.N*parts, func(u int, plane []float32) {
		n, j0 := u/parts, u%parts*size
		j1 := min(j0+size, p)
		a := acc[2*n*p : 2*(n+1)*p]
		clear(a[j0:j1])
		clear(a[p+j0 : p+j1])
		tp := taps[n*p : (n+1)*p]
		nb := (j1 - j0) / 8
		for c0 := 0; c0 < g.C; c0 += cw {
			gridPackPlane(g, plane, x[(n*g.C+c0)*hw:(n*g.C+c0+cw)*hw], cw)
			grc := gr[(n*g.C+c0)*p : (n*g.C+c0+cw)*p]
			if nb > 0 {
				gridContractOCLBlocks(a[j0:], plane, grc[j0:], tp[j0:], nb, p, wp)
			}
			for j := j0 + 8*nb; j < j1; j++ {
				t := &tp[j]
				i := int(t.i) * cw
				q, r := plane[i:i+2*cw], plane[i+wp*cw:i+(wp+2)*cw]
				var sx, sy float32
				for c := 0; c < cw; c++ {
					nw, ne, sw, se := q[c], q[cw+c], r[c], r[cw+c]
					gv := grc[c*p+j]
					sx += ((ne-nw)*t.w[2] + (se-sw)*t.w[3]) * gv
					sy += ((sw-nw)*t.w[0] + (se-ne)*t.w[1]) * gv
				}
				a[j] += sx
				a[p+j] += sy
			}
		}
		for j := j0; j < j1; j++ {
			for h := 0; h < 2; h++ {
				k := 2*(n*p+j) + h
				if s := scale[k]; s == 0 {
					out[k] = 0 // a half that is zero, or a pixel that samples nothing
				} else {
					out[k] = a[h*p+j] * s
				}
			}
		}
	})
}
