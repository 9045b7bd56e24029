package cpu

// GridSample's tables for the CUDA kernels (internal/cuda/kernels/nn/gridsample.cu): the
// taps the Go kernels compute (gridTaps, gridTaps2, cubicTaps, gridOTaps),
// laid out flat, so that the kernels and the Go loops read the same weights
// by construction, and the inverse of the taps (which pixels reach each
// input element, in the Go scatter's order) for the transposes.

// GridTable is one member's taps for every output pixel of every image:
// Sets tap sets (2 for bicubic S2/T2, summed; else 1) of N·HO·WO taps, tap
// t's corners Idx[K·t : K·(t+1)] (plane indices, −1 outside: reads 0) and
// weights W[NW·t : NW·(t+1)]: nearest K = NW = 1; bilinear K = NW = 4 (nw,
// ne, sw, se); bicubic K = 16 (row-major over (i, k)) and NW = 8 (wx, then
// wy). For GridOTable (bilinear O), NW = 6: the factors fx0, fx1, fy0, fy1
// and the halves' scales.
type GridTable[T Float] struct {
	Mode     int // GridNearestMode, GridBilinearMode or GridBicubicMode
	K, NW    int
	Sets     int
	Idx      []int64
	W        []T
	N, P, HW int
}

// The kernels' mode argument.
const (
	GridNearestMode = iota
	GridBilinearMode
	GridBicubicMode
)

func newGridTable[T Float](g *GridSampleGeom, sets, nw int) *GridTable[T] {
	tb := &GridTable[T]{Mode: GridBilinearMode, K: 4, NW: nw, Sets: sets, N: g.N, P: g.HO * g.WO, HW: g.H * g.W}
	switch {
	case g.Nearest:
		tb.Mode, tb.K, tb.NW = GridNearestMode, 1, 1
	case g.Bicubic:
		tb.Mode, tb.K, tb.NW = GridBicubicMode, 16, 8
	}
	n := sets * g.N * tb.P
	tb.Idx, tb.W = make([]int64, tb.K*n), make([]T, tb.NW*n)
	return tb
}

// putBilinear stores bilinear (or nearest) taps from set s on: corners
// mapped from the zero-framed plane to the plane (−1 in the frame or for a
// pixel that samples nothing), weights as they are (nw only of them).
func (tb *GridTable[T]) putBilinear(g *GridSampleGeom, s int, taps []gridTap[T], nw int) {
	off, wp := s*len(taps), g.W+2
	for j := range taps {
		t := &taps[j]
		idx, w := tb.Idx[tb.K*(off+j):][:tb.K], tb.W[tb.NW*(off+j):]
		copy(w[:nw], t.w[:nw])
		if tb.Mode == GridNearestMode {
			idx[0] = -1
			if t.ok {
				idx[0] = int64(t.i)
			}
			continue
		}
		fy, fx := int(t.i)/wp-1, int(t.i)%wp-1
		for k := range idx {
			y, x := fy+k/2, fx+k%2
			idx[k] = -1
			if t.ok && y >= 0 && y < g.H && x >= 0 && x < g.W {
				idx[k] = int64(y*g.W + x)
			}
		}
	}
}

// putCubic stores bicubic taps as set s.
func (tb *GridTable[T]) putCubic(s int, taps []cubicTap[T]) {
	off := s * len(taps)
	for j := range taps {
		t := &taps[j]
		idx, w := tb.Idx[16*(off+j):][:16], tb.W[8*(off+j):][:8]
		for k, q := range t.i {
			idx[k] = int64(q)
		}
		copy(w[:4], t.wx[:])
		copy(w[4:], t.wy[:])
	}
}

// GridSampleTable is the taps of member (a, b) times mask (nil: none) that
// GridSampleS, GridSampleT and GridSampleC use.
func GridSampleTable[T Float](g *GridSampleGeom, a, b int, grid, mask []T) *GridTable[T] {
	tb := newGridTable[T](g, 1, 4)
	if g.Bicubic {
		tb.putCubic(0, cubicTaps(g, a, b, grid, mask))
		return tb
	}
	taps := gridTaps(g, a, b, grid, mask)
	defer tapScratch[T]().Put(taps)
	tb.putBilinear(g, 0, taps, tb.NW)
	return tb
}

// GridSampleTable2 is the taps of GridSampleS2 and GridSampleT2: bilinear
// one set, the two members' taps summed (gridTaps2); bicubic two sets,
// (a+1, b) times m1 and (a, b+1) times m2, whose results the Go kernels sum.
func GridSampleTable2[T Float](g *GridSampleGeom, a, b int, grid, m1, m2 []T) *GridTable[T] {
	if g.Bicubic {
		tb := newGridTable[T](g, 2, 8)
		tb.putCubic(0, cubicTaps(g, a+1, b, grid, m1))
		tb.putCubic(1, cubicTaps(g, a, b+1, grid, m2))
		return tb
	}
	tb := newGridTable[T](g, 1, 4)
	taps := gridTaps2(g, a, b, grid, m1, m2)
	defer tapScratch[T]().Put(taps)
	tb.putBilinear(g, 0, taps, 4)
	return tb
}

// GridOTable is bilinear GridSampleO's taps (gridOTaps): per pixel the four
// corners and six numbers, the factors fx0, fx1, fy0, fy1 and the scales of
// the x and y halves (0: the half is 0).
func GridOTable[T Float](g *GridSampleGeom, a, b int, grid, mask []T) *GridTable[T] {
	n := g.N * g.HO * g.WO
	taps, scale := make([]gridTap[T], n), make([]T, 2*n)
	gridOTaps(g, a, b, grid, mask, taps, scale)
	tb := newGridTable[T](g, 1, 6)
	tb.putBilinear(g, 0, taps, 4)
	for j := 0; j < n; j++ {
		tb.W[6*j+4], tb.W[6*j+5] = scale[2*j], scale[2*j+1]
	}
	return tb
}

// Inverse is the transposes' table: for each image n and plane element q,
// the taps that read it, Ent[Off[n·HW+q] : Off[n·HW+q+1]], each entry
// t·16 + s (tap t, corner slot s), in increasing order, the order in which
// the Go scatter (gridScatterTaps, cubicT) adds them: set by set, pixel by
// pixel, corner by corner.
func (tb *GridTable[T]) Inverse() (off, ent []int64) {
	np := tb.N * tb.P
	off = make([]int64, tb.N*tb.HW+1)
	tap := func(t int, f func(e int, code int64)) {
		n := t % np / tb.P
		for s, q := range tb.Idx[tb.K*t : tb.K*(t+1)] {
			if q >= 0 {
				f(n*tb.HW+int(q), int64(t)*16+int64(s))
			}
		}
	}
	for t := 0; t < tb.Sets*np; t++ {
		tap(t, func(e int, _ int64) { off[e+1]++ })
	}
	for e := 1; e < len(off); e++ {
		off[e] += off[e-1]
	}
	ent = make([]int64, off[len(off)-1])
	fill := make([]int64, tb.N*tb.HW)
	for t := 0; t < tb.Sets*np; t++ {
		tap(t, func(e int, code int64) {
			ent[off[e]+fill[e]] = code
			fill[e]++
		})
	}
	return off, ent
}
