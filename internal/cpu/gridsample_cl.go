package cpu

import (
	"runtime"
	"sync/atomic"
)

// GridSample's float32 bilinear S and T channels-last (AVX2, C a multiple
// of 8). A pixel's taps are shared by all the channels of its image, so
// instead of gathering each plane's corners pixel by pixel, a unit of cw
// channels of one image is copied into a zero-framed channels-last plane
// [(H+3)·(W+2), cw] (gridTranspose8, blocks of 8×8 transposed in
// registers), where a corner's 8 channels are one vector load: S
// (gridSampleCL) computes 8 pixels × 8 channels per step and transposes
// the block back to the planes' layout; T (gridScatterCL) transposes the
// upstream block to pixels' channel vectors, adds them to the corners in
// pixel order, and the unit's plane is then copied out. Every element
// takes the same operations in the same order as the Go loops
// (gridTap.value, gridScatterTaps), so the results are bitwise theirs.
// Units run in parallel, each in a worker's slot of one kept buffer.

// gridCLWidth is the number of channels per unit of the channels-last
// kernels for g, or 0 when they do not apply (no AVX2, nearest, C not a
// multiple of 8). Units of 8 channels measured fastest (issue 16's size,
// one thread: S 1.5 ms with 8, 2.0 with 16, 2.5–4 with 32 or 64): a
// unit's plane, 141 KiB at 64×64, stays in L2, and the 8 output rows
// written at once do not overflow an L1 set (rows of 16 KiB alias).
func gridCLWidth(g *GridSampleGeom) int {
	if !gridAVX2 || g.Nearest || g.C%8 != 0 {
		return 0
	}
	return 8
}

// gridCLPlanes keeps the channels-last planes between calls.
var gridCLPlanes gridKeep[float32]

// gridCLUnits calls body(n, c0, plane) for every unit (image n, channels
// [c0, c0+cw)) in parallel, plane a worker's own buffer of
// framedSize()·cw elements, contents undefined.
func gridCLUnits(g *GridSampleGeom, cw int, body func(n, c0 int, plane []float32)) {
	units := g.N * (g.C / cw)
	workers := max(1, min(runtime.GOMAXPROCS(0), units))
	ps := g.framedSize() * cw
	buf := gridCLPlanes.get(workers * ps)
	defer gridCLPlanes.put(buf)
	var next atomic.Int32
	ParallelFor(units, func(lo, hi int) {
		// ParallelFor runs at most GOMAXPROCS bodies: a slot each (a
		// fresh plane should GOMAXPROCS have grown meanwhile).
		var plane []float32
		if s := int(next.Add(1) - 1); s < workers {
			plane = buf[s*ps : (s+1)*ps]
		} else {
			plane = make([]float32, ps)
		}
		for u := lo; u < hi; u++ {
			body(u/(g.C/cw), u%(g.C/cw)*cw, plane)
		}
	})
}

// gridSampleCL32 is gridSampleTaps for float32 bilinear taps when
// gridCLWidth is cw > 0.
func gridSampleCL32(g *GridSampleGeom, taps []gridTap[float32], x, out []float32, cw int) {
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	nb := p / 8
	gridCLUnits(g, cw, func(n, c0 int, plane []float32) {
		src := x[(n*g.C+c0)*hw : (n*g.C+c0+cw)*hw]
		// The frame: row 0, the first and last cells of rows 1…H, rows H+1
		// and H+2 (zeroCell's), as padPlane.
		clear(plane[:(wp+1)*cw])
		for y := 0; y < g.H; y++ {
			row := plane[((y+1)*wp+1)*cw:]
			gridPackRow(row, src[y*g.W:], g.W, cw, hw)
			clear(plane[((y+1)*wp+1+g.W)*cw : ((y+2)*wp+1)*cw])
		}
		clear(plane[((g.H+1)*wp+1)*cw:])
		o, tp := out[(n*g.C+c0)*p:(n*g.C+c0+cw)*p], taps[n*p:(n+1)*p]
		if nb > 0 {
			gridSampleCLBlocks(o, plane, tp, nb, cw, p, wp)
		}
		for j := 8 * nb; j < p; j++ {
			t := &tp[j]
			i := int(t.i) * cw
			q, r := plane[i:i+2*cw], plane[i+wp*cw:i+(wp+2)*cw]
			for c := 0; c < cw; c++ {
				o[c*p+j] = t.w[0]*q[c] + t.w[1]*q[cw+c] + t.w[2]*r[c] + t.w[3]*r[cw+c]
			}
		}
	})
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
// gridCLWidth is cw > 0.
func gridScatterCL32(g *GridSampleGeom, taps []gridTap[float32], gr, dst []float32, cw int) {
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	nb := p / 8
	gridCLUnits(g, cw, func(n, c0 int, plane []float32) {
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
