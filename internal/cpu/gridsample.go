package cpu

import (
	"math"
	"runtime"

	"github.com/gops-dev/gops/internal/par"
)

// GridSample's family (torch.nn.functional.grid_sample; docs/ARCHITECTURE.md,
// "GridSample"). A grid point (gx, gy) of output pixel p = (ho, wo) maps to
// the sample coordinates
//
//	x = pad(unnormalize(gx)),  y likewise with H,
//
// unnormalize(g) = (g + 1)·(W − 1)/2 (align_corners) or (g + 1)·W/2 − 0.5,
// pad the identity (zeros), a clip to [0, W − 1] (border) or a reflection
// then that clip (reflection), computed as torch's CPU kernel does. The
// chain factor kx = dx/dgx is the unnormalize scale times pad's slope,
// 0 or ±1: torch's rule, under which a clipped coordinate, one exactly on a
// border included, has slope 0. x and y are piecewise linear in the grid,
// so every derivative of the result is a sum of derivatives of the
// interpolation weights in x and y times powers of kx and ky. Member
//
//	K_ab(X)[n, c, p] = kx^a · ky^b · Σ_corners ∂ₓ^a ∂ᵧ^b w(x, y) · X[n, c, corner]
//
// (bilinear: a, b ∈ {0, 1}, higher orders are zero; nearest: a = b = 0),
// with w's cell the one floor() selects (the right-sided derivative at an
// integer), is linear in X. The kernels here are, with M an optional
// per-pixel factor [N, HO, WO] and G a result-shaped tensor:
//
//	S_ab(X, grid, M) = M ⊙ K_ab(X)                        [N, C, HO, WO]
//	T_ab(G, grid, M) = K_abᵀ(M ⊙ G)                       [N, C, H, W]
//	C_ab(X, grid, G) = Σ_c G ⊙ K_ab(X)                    [N, HO, WO]
//	O_ab(X, grid, G, M) = (M ⊙ C_(a+1)b, M ⊙ C_a(b+1))    [N, HO, WO, 2]
//
// S_00 is GridSample, O_00 its gradient w.r.t. the grid (x first); S2
// and T2 are the pairs S_(a+1)b + S_a(b+1) and T_(a+1)b + T_a(b+1) with
// their own masks, in one pass (the derivatives of O). Bicubic, whose x is
// not padded (its taps are), is in gridcubic.go.

// GridPadding is grid_sample's padding_mode.
type GridPadding int

const (
	GridZeros      GridPadding = iota // "zeros": outside corners read 0
	GridBorder                        // "border": coordinates clipped to the image
	GridReflection                    // "reflection": reflected at the borders, then clipped
)

// GridSampleGeom is one grid_sample: input [N, C, H, W], grid
// [N, HO, WO, 2], result [N, C, HO, WO]. H·W must fit an int32.
type GridSampleGeom struct {
	N, C, H, W, HO, WO int
	Nearest            bool
	Bicubic            bool // torch's "bicubic" (gridcubic.go); Nearest false
	Padding            GridPadding
	AlignCorners       bool
}

// MaxOrder is the highest non-zero derivative order of the interpolation
// weights in one coordinate: 1 (bilinear), 0 (nearest) or 3 (bicubic).
func (g *GridSampleGeom) MaxOrder() int {
	switch {
	case g.Nearest:
		return 0
	case g.Bicubic:
		return 3
	}
	return 1
}

// gridAxis unnormalizes and pads one coordinate (torch's ComputeLocation).
type gridAxis[T Float] struct {
	scale, maxVal, low, twiceSpan T
	aligned, empty                bool
	pad                           GridPadding
}

func newGridAxis[T Float](size int, pad GridPadding, aligned bool) gridAxis[T] {
	a := gridAxis[T]{maxVal: T(size - 1), aligned: aligned, pad: pad}
	if aligned {
		a.scale, a.twiceSpan, a.empty = T(size-1)/2, T(size-1)*2, size <= 1
	} else {
		a.scale, a.low, a.twiceSpan = T(size)/2, -0.5, T(size)*2
	}
	return a
}

// source is the sample coordinate of the normalised coordinate g and its
// derivative dx/dg; ok is false for a NaN coordinate (a NaN g, or the
// reflection of an infinite one), which samples nothing.
func (a *gridAxis[T]) source(g T) (x, d T, ok bool) {
	x = T(g+1) * a.scale
	if !a.aligned {
		x -= 0.5
	}
	d = a.scale
	switch a.pad {
	case GridZeros:
		return x, d, x == x
	case GridReflection:
		if a.empty {
			return 0, 0, x == x
		}
		in := x - a.low
		neg := in < 0
		abs := T(math.Abs(float64(in)))
		flips := T(math.Trunc(float64(abs / a.twiceSpan)))
		extra := abs - T(flips*a.twiceSpan)
		reflected := a.twiceSpan - extra
		more := extra > reflected
		if more {
			x = reflected + a.low
		} else {
			x = extra + a.low
		}
		if more != neg {
			d = -d
		}
	}
	// torch's clip_coordinates_set_grad: the borders count as outside.
	switch {
	case x != x:
		return x, 0, false
	case x <= 0:
		return 0, 0, true
	case x >= a.maxVal:
		return a.maxVal, 0, true
	}
	return x, d, true
}

// framedSize is the size of a zero-framed plane (padPlane).
func (g *GridSampleGeom) framedSize() int { return (g.H + 3) * (g.W + 2) }

// zeroCell is the north-west corner, in a zero-framed plane, of a cell of
// zeros (the bottom rows), where the taps of pixels that sample nothing
// point with zero weights: no branch in the kernels' loops.
func (g *GridSampleGeom) zeroCell() int32 { return int32((g.H + 1) * (g.W + 2)) }

// gridPoint is one output pixel's sample: the fractions lx, ly of its
// coordinates in their cell, the chain factors kx, ky and the index i of
// the cell's north-west corner in the zero-framed plane (padPlane: its
// corners are i, i+1, i+W+2, i+W+3, a corner outside the image reading
// the frame's 0, as torch's masked read); nearest: i is the pixel's index
// in the plane itself. ok is false when nothing is sampled (a NaN
// coordinate, or a cell or pixel wholly outside under "zeros").
type gridPoint[T Float] struct {
	lx, ly, kx, ky T
	i              int32
	ok             bool
}

// newGridPoint computes the sample of grid point (gx, gy): the bilinear
// cell (floor) or the nearest pixel (round half to even, torch's
// nearbyint), in T's arithmetic as torch's kernel. Coordinates are tested
// as floats before any conversion, so huge or infinite ones cannot
// overflow an int; NaN ones sample nothing.
func newGridPoint[T Float](g *GridSampleGeom, ax, ay *gridAxis[T], gx, gy T) (pt gridPoint[T]) {
	x, kx, okx := ax.source(gx)
	y, ky, oky := ay.source(gy)
	if !okx || !oky {
		return pt
	}
	W, H := float64(g.W), float64(g.H)
	if g.Nearest {
		rx, ry := math.RoundToEven(float64(x)), math.RoundToEven(float64(y))
		if rx >= 0 && rx < W && ry >= 0 && ry < H {
			pt.i, pt.ok = int32(int(ry)*g.W+int(rx)), true
		}
		return pt
	}
	fx, fy := math.Floor(float64(x)), math.Floor(float64(y))
	if !(fx >= -1 && fx < W && fy >= -1 && fy < H) {
		return pt
	}
	pt.lx, pt.ly, pt.kx, pt.ky = x-T(fx), y-T(fy), kx, ky
	pt.i, pt.ok = int32((int(fy)+1)*(g.W+2)+int(fx)+1), true
	return pt
}

// gridTap is one output pixel's corners (gridPoint's i and ok) and their
// weights in member (a, b): nw, ne, sw, se (nearest: w[0] only).
type gridTap[T Float] struct {
	i  int32
	ok bool
	w  [4]T
}

// tap sets t to the pixel's tap for member (a, b) times mask: per coordinate the
// factors (1 − l, l) at order 0 or (−k, k) at order 1, the corners
// weighted by their products (nw = (1 − ly)·(1 − lx), torch's s·e, ...).
// Nearest (order 0 only) weights its one pixel by 1.
func (pt *gridPoint[T]) tap(t *gridTap[T], nearest bool, a, b int, mask T, masked bool) {
	t.i, t.ok = pt.i, pt.ok
	if !pt.ok {
		t.w = [4]T{} // gridTaps points bilinear ones at zeroCell
		return
	}
	if nearest {
		t.w = [4]T{1, 0, 0, 0}
		if masked {
			t.w[0] = mask
		}
		return
	}
	x0, x1 := 1-pt.lx, pt.lx
	if a == 1 {
		x0, x1 = -pt.kx, pt.kx
	}
	y0, y1 := 1-pt.ly, pt.ly
	if b == 1 {
		y0, y1 = -pt.ky, pt.ky
	}
	if masked {
		t.w[0], t.w[1], t.w[2], t.w[3] = y0*x0*mask, y0*x1*mask, y1*x0*mask, y1*x1*mask
		return
	}
	t.w[0], t.w[1], t.w[2], t.w[3] = y0*x0, y0*x1, y1*x0, y1*x1
}

// gridTaps are the taps of member (a, b) for every output pixel, times
// mask [N·HO·WO] when not nil, in a scratch buffer (give it back with
// tapScratch[T]().Put).
func gridTaps[T Float](g *GridSampleGeom, a, b int, grid, mask []T) []gridTap[T] {
	taps := tapScratch[T]().Get(g.N * g.HO * g.WO)
	if !g.Nearest && g.Padding == GridZeros {
		gridTapsZeros(g, a, b, grid, mask, taps)
		return taps
	}
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			pt := newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
			var m T
			if mask != nil {
				m = mask[j]
			}
			t := &taps[j]
			pt.tap(t, g.Nearest, a, b, m, mask != nil)
			if !pt.ok && !g.Nearest {
				t.i = g.zeroCell()
			}
		}
	})
	return taps
}

// gridTapsZeros is gridTaps for bilinear "zeros" padding (the default),
// newGridPoint and tap written out in one loop: the same operations in
// the same order, so the same taps, bitwise, at a fraction of the cost
// of the calls.
func gridTapsZeros[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T]) {
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	sx, sy, aligned := ax.scale, ay.scale, g.AlignCorners
	W, H, wp, zero := float64(g.W), float64(g.H), g.W+2, g.zeroCell()
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			t := &taps[j]
			x, y := T(grid[2*j]+1)*sx, T(grid[2*j+1]+1)*sy
			if !aligned {
				x -= 0.5
				y -= 0.5
			}
			// A NaN coordinate fails the test as well (source's ok).
			fx, fy := math.Floor(float64(x)), math.Floor(float64(y))
			if !(fx >= -1 && fx < W && fy >= -1 && fy < H) {
				*t = gridTap[T]{i: zero}
				continue
			}
			lx, ly := x-T(fx), y-T(fy)
			x0, x1 := 1-lx, lx
			if a == 1 {
				x0, x1 = -sx, sx
			}
			y0, y1 := 1-ly, ly
			if b == 1 {
				y0, y1 = -sy, sy
			}
			t.i, t.ok = int32((int(fy)+1)*wp+int(fx)+1), true
			if mask != nil {
				m := mask[j]
				t.w[0], t.w[1], t.w[2], t.w[3] = y0*x0*m, y0*x1*m, y1*x0*m, y1*x1*m
				continue
			}
			t.w[0], t.w[1], t.w[2], t.w[3] = y0*x0, y0*x1, y1*x0, y1*x1
		}
	})
}

// gridSoA is taps laid out as arrays, the corner indices and each
// corner's weights, for the gather kernel (gridSampleSoA32); each image's
// full blocks of 8 indices are stored in the order 0 1 4 5 2 3 6 7.
type gridSoA[T Float] struct {
	ix []int32
	w  [4][]T
}

func newGridSoA[T Float](taps []gridTap[T], p int) *gridSoA[T] {
	n := len(taps)
	s := &gridSoA[T]{ix: ints32.Get(n)}
	ws := floatScratch[T]().Get(4 * n)
	for k := range s.w {
		s.w[k] = ws[k*n : (k+1)*n]
	}
	par.For(n/max(p, 1), func(lo, hi int) {
		for j := lo * p; j < hi*p; j++ {
			s.ix[j] = taps[j].i
			for k := range s.w {
				s.w[k][j] = taps[j].w[k]
			}
		}
		// The gather kernel reads each image's full blocks of 8 indices in
		// the order 0 1 4 5 2 3 6 7 (gridGatherS).
		for im := lo * p; im < hi*p; im += p {
			for b := im; b+8 <= im+p; b += 8 {
				ix := s.ix[b : b+8]
				ix[2], ix[3], ix[4], ix[5] = taps[b+4].i, taps[b+5].i, taps[b+2].i, taps[b+3].i
			}
		}
	})
	return s
}

// release gives the arrays back to their keepers.
func (s *gridSoA[T]) release() {
	ints32.Put(s.ix)
	floatScratch[T]().Put(s.w[0][:4*len(s.ix)])
}

// part is the taps [lo, hi).
func (s *gridSoA[T]) part(lo, hi int) gridSoA[T] {
	return gridSoA[T]{ix: s.ix[lo:hi], w: [4][]T{s.w[0][lo:hi], s.w[1][lo:hi], s.w[2][lo:hi], s.w[3][lo:hi]}}
}

// gridTaps2 are the taps of member (a+1, b) times m1 plus those of
// member (a, b+1) times m2 (bilinear), in the kept buffer.
func gridTaps2[T Float](g *GridSampleGeom, a, b int, grid, m1, m2 []T) []gridTap[T] {
	taps := tapScratch[T]().Get(g.N * g.HO * g.WO)
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	par.For(g.N*g.HO, func(lo, hi int) {
		var u gridTap[T]
		for j := lo * g.WO; j < hi*g.WO; j++ {
			pt := newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
			t := &taps[j]
			pt.tap(t, false, a+1, b, m1[j], true)
			pt.tap(&u, false, a, b+1, m2[j], true)
			for k := range t.w {
				t.w[k] += u.w[k]
			}
			if !pt.ok {
				t.i = g.zeroCell()
			}
		}
	})
	return taps
}

// padPlane writes plane (h×w) into pp ((h+3)×(w+2)) inside a frame of
// zeros, with a second zero row at the bottom: a tap at zeroCell reads
// only zeros.
func padPlane[T Float](pp, plane []T, h, w int) {
	wp := w + 2
	clear(pp[:wp+1])
	for y := 0; y < h; y++ {
		copy(pp[(y+1)*wp+1:(y+1)*wp+1+w], plane[y*w:(y+1)*w])
		clear(pp[(y+1)*wp+1+w : (y+2)*wp+1])
	}
	clear(pp[(h+1)*wp+1:])
}

// value is the tap's Σ w·corner on the zero-framed plane pp (row stride
// wp), in the order nw, ne, sw, se (torch's sum).
func (t *gridTap[T]) value(pp []T, wp int) T {
	i := int(t.i)
	q, r := pp[i:i+2], pp[i+wp:i+wp+2]
	return t.w[0]*q[0] + t.w[1]*q[1] + t.w[2]*r[0] + t.w[3]*r[1]
}

// GridSampleS computes S_ab(x, grid, mask) = mask ⊙ K_ab(x) (file comment)
// into out [N, C, HO, WO] (every element written); mask [N, HO, WO] may be
// nil (1). S_00 without mask is grid_sample. Parallel over planes (n, c), each output written
// once; a worker copies its plane into a zero frame, so that every corner
// is read without a test.
func GridSampleS[T Float](g *GridSampleGeom, a, b int, x, grid, mask, out []T) {
	if g.Bicubic {
		cubicGrid(g, "S", a, b, [4][]T{x, grid, mask}, out)
		return
	}
	taps := gridTaps(g, a, b, grid, mask)
	defer tapScratch[T]().Put(taps)
	gridSampleTaps(g, taps, x, out)
}

// GridSampleS2 computes S_(a+1)b(x, grid, m1) + S_a(b+1)(x, grid, m2), the
// pair of members that the derivatives of O_ab sum, in one pass: its taps
// are the sums of the two members' (m1, m2 [N, HO, WO]). Bilinear only.
func GridSampleS2[T Float](g *GridSampleGeom, a, b int, x, grid, m1, m2, out []T) {
	if g.Bicubic {
		cubicGrid(g, "S2", a, b, [4][]T{x, grid, m1, m2}, out)
		return
	}
	taps := gridTaps2(g, a, b, grid, m1, m2)
	defer tapScratch[T]().Put(taps)
	gridSampleTaps(g, taps, x, out)
}

// gridSampleTaps is S with the taps given.
func gridSampleTaps[T Float](g *GridSampleGeom, taps []gridTap[T], x, out []T) {
	if t32, ok := any(taps).([]gridTap[float32]); ok {
		if gridChannelsLast(g) {
			gridSampleCL32(g, t32, any(x).([]float32), any(out).([]float32))
			return
		}
	}
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	var soa *gridSoA[float32] // float32 taps for the AVX2 gathers
	if t32, ok := any(taps).([]gridTap[float32]); ok && gridAVX2 && !g.Nearest {
		soa = newGridSoA(t32, p)
		defer soa.release()
	}
	par.For(g.N*g.C, func(lo, hi int) {
		var pp []T
		if !g.Nearest {
			pp = make([]T, g.framedSize())
		}
		for nc := lo; nc < hi; nc++ {
			plane, o, tp := x[nc*hw:(nc+1)*hw], out[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			if soa != nil {
				padPlane(pp, plane, g.H, g.W)
				n := nc / g.C
				img := soa.part(n*p, (n+1)*p)
				gridSampleSoA32(any(o).([]float32), any(pp).([]float32), &img, wp)
				continue
			}
			if g.Nearest {
				for j := range o {
					if t := &tp[j]; t.ok {
						o[j] = t.w[0] * plane[t.i]
					} else {
						o[j] = 0
					}
				}
				continue
			}
			padPlane(pp, plane, g.H, g.W)
			for j := range o {
				o[j] = tp[j].value(pp, wp)
			}
		}
	})
}

// GridSampleT computes T_ab(gr, grid, mask) = K_abᵀ(mask ⊙ gr), S_ab's
// transpose in its first input: gr [N, C, HO, WO] scattered onto dst
// [N, C, H, W], which must be zero on entry (bilinear overwrites it). Parallel over planes (n, c):
// each worker owns its input planes and adds pixels in order (into a
// zero-framed plane, whose interior it then copies out), so the sums do
// not depend on the threads.
func GridSampleT[T Float](g *GridSampleGeom, a, b int, gr, grid, mask, dst []T) {
	if g.Bicubic {
		cubicGrid(g, "T", a, b, [4][]T{gr, grid, mask}, dst)
		return
	}
	taps := gridTaps(g, a, b, grid, mask)
	defer tapScratch[T]().Put(taps)
	gridScatterTaps(g, taps, gr, dst)
}

// GridSampleT2 is GridSampleS2's transpose in x: T_(a+1)b(gr, grid, m1) +
// T_a(b+1)(gr, grid, m2) in one pass (dst zero on entry). Bilinear only.
func GridSampleT2[T Float](g *GridSampleGeom, a, b int, gr, grid, m1, m2, dst []T) {
	if g.Bicubic {
		cubicGrid(g, "T2", a, b, [4][]T{gr, grid, m1, m2}, dst)
		return
	}
	taps := gridTaps2(g, a, b, grid, m1, m2)
	defer tapScratch[T]().Put(taps)
	gridScatterTaps(g, taps, gr, dst)
}

// gridScatterTaps is T with the taps given.
func gridScatterTaps[T Float](g *GridSampleGeom, taps []gridTap[T], gr, dst []T) {
	if t32, ok := any(taps).([]gridTap[float32]); ok {
		if gridChannelsLast(g) {
			gridScatterCL32(g, t32, any(gr).([]float32), any(dst).([]float32))
			return
		}
	}
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	par.For(g.N*g.C, func(lo, hi int) {
		var pp []T
		if !g.Nearest {
			pp = make([]T, g.framedSize())
		}
		for nc := lo; nc < hi; nc++ {
			plane, src, tp := dst[nc*hw:(nc+1)*hw], gr[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			if g.Nearest {
				for j, v := range src {
					if t := &tp[j]; t.ok {
						plane[t.i] += t.w[0] * v
					}
				}
				continue
			}
			clear(pp)
			for j, v := range src {
				t := &tp[j]
				i := int(t.i)
				q, r := pp[i:i+2], pp[i+wp:i+wp+2]
				q[0] += t.w[0] * v
				q[1] += t.w[1] * v
				r[0] += t.w[2] * v
				r[1] += t.w[3] * v
			}
			for y := 0; y < g.H; y++ {
				copy(plane[y*g.W:(y+1)*g.W], pp[(y+1)*wp+1:])
			}
		}
	})
}

// GridSampleC computes C_ab(x, grid, gr) = Σ_c gr ⊙ K_ab(x), [N, HO, WO].
// Parallel over blocks of pixels, each summing channels in order.
func GridSampleC[T Float](g *GridSampleGeom, a, b int, x, grid, gr, out []T) {
	if g.Bicubic {
		cubicGrid(g, "C", a, b, [4][]T{x, grid, gr}, out)
		return
	}
	taps := gridTaps(g, a, b, grid, nil)
	defer tapScratch[T]().Put(taps)
	p := g.HO * g.WO
	gridContract(g, x, gr, func(n, j0, j1, c0, c1 int, planes []T, ps, wp int, grs []T) {
		o, tp := out[n*p:], taps[n*p:]
		for j := j0; j < j1; j++ {
			t := &tp[j]
			if g.Nearest && !t.ok {
				continue
			}
			var acc T
			for c := c0; c < c1; c++ {
				plane := planes[c*ps : (c+1)*ps]
				if g.Nearest {
					acc += grs[c*p+j] * (t.w[0] * plane[t.i])
				} else {
					acc += grs[c*p+j] * t.value(plane, wp)
				}
			}
			o[j] += acc
		}
	})
}

// GridSampleO computes O_ab(x, grid, gr, mask) = (mask ⊙ C_(a+1)b,
// mask ⊙ C_a(b+1)) interleaved into out [N, HO, WO, 2] (x first, as the
// grid); a half whose member is of order above MaxOrder is zero; mask may
// be nil (1). For a = b = 0 and no mask it is the gradient of
// <gr, grid_sample(x, grid)> w.r.t. the grid, summed as torch's: per
// channel ((ne − nw)·s + (se − sw)·n)·g in x, ((sw − nw)·e + (se − ne)·w)·g
// in y (s, n, e, w the weights of the other coordinate at its order),
// times the chain factors kx^(a+1)·ky^b (resp. kx^a·ky^(b+1)) and mask
// once the channels are summed. Parallel over blocks of pixels.
func GridSampleO[T Float](g *GridSampleGeom, a, b int, x, grid, gr, mask, out []T) {
	if g.Bicubic {
		cubicGrid(g, "O", a, b, [4][]T{x, grid, gr, mask}, out)
		return
	}
	mo := g.MaxOrder()
	hasX, hasY := a+1 <= mo && b <= mo, a <= mo && b+1 <= mo
	if !hasX && !hasY {
		return
	}
	// Per pixel: its corner and the other coordinate's factors (fx for
	// the y half, fy for the x half), and the halves' final scales.
	n := g.N * g.HO * g.WO
	taps, scale := tapScratch[T]().Get(n), floatScratch[T]().Get(2*n)
	defer tapScratch[T]().Put(taps)
	defer floatScratch[T]().Put(scale)
	gridOTaps(g, a, b, grid, mask, taps, scale)
	if t32, ok := any(taps).([]gridTap[float32]); ok && gridChannelsLast(g) {
		gridContractOCL32(g, t32, any(x).([]float32), any(gr).([]float32), any(scale).([]float32), any(out).([]float32))
		return
	}
	p := g.HO * g.WO
	nb := p / 8 // an image's full blocks of 8 pixels, for the AVX2 gathers
	var ob *gridOBlocks
	if t32, ok := any(taps).([]gridTap[float32]); ok && gridAVX2 && nb > 0 {
		ob = newGridOBlocks(t32, g.N, p)
		defer ob.release()
	}
	gridContract(g, x, gr, func(n, j0, j1, c0, c1 int, planes []T, ps, wp int, grs []T) {
		o, tp := out[2*n*p:], taps[n*p:]
		js := j0
		if ob != nil && j0 < nb*8 {
			// j0 is a multiple of 8 (gridContract's blocks are).
			je := min(j1, nb*8)
			k := n*nb + j0/8
			gridContractO32(ob.acc[16*k:], ob.f[32*k:], ob.idx[8*k:], any(planes[c0*ps:]).([]float32),
				any(grs[c0*p+j0:]).([]float32), (je-j0)/8, c1-c0, ps, p, wp)
			js = je
		}
		for j := js; j < j1; j++ {
			t := &tp[j]
			i := int(t.i)
			var sx, sy T
			for c := c0; c < c1; c++ {
				plane := planes[c*ps : (c+1)*ps]
				q, r := plane[i:i+2], plane[i+wp:i+wp+2]
				nw, ne, sw, se := q[0], q[1], r[0], r[1]
				gv := grs[c*p+j]
				sx += ((ne-nw)*t.w[2] + (se-sw)*t.w[3]) * gv
				sy += ((sw-nw)*t.w[0] + (se-ne)*t.w[1]) * gv
			}
			o[2*j] += sx
			o[2*j+1] += sy
		}
	})
	par.For(g.N, func(lo, hi int) {
		if ob != nil {
			o := any(out).([]float32)
			for n := lo; n < hi; n++ {
				for j := 0; j < nb*8; j++ {
					a := ob.acc[16*(n*nb+j/8)+j%8:]
					o[2*(n*p+j)], o[2*(n*p+j)+1] = a[0], a[8]
				}
			}
		}
		for j := 2 * lo * p; j < 2*hi*p; j++ {
			if s := scale[j]; s == 0 {
				out[j] = 0 // a half that is zero, or a pixel that samples nothing
			} else {
				out[j] *= s
			}
		}
	})
}

// gridOTaps computes GridSampleO's per-pixel taps (corner, the factors
// fx0, fx1, fy0, fy1) and the halves' final scales (2 per pixel) into taps
// and scale (the CUDA kernels' table too, GridOTable).
func gridOTaps[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T], scale []T) {
	if !g.Nearest && !g.Bicubic && g.Padding == GridZeros {
		gridOTapsZeros(g, a, b, grid, mask, taps, scale)
		return
	}
	gridOTapsPoints(g, a, b, grid, mask, taps, scale)
}

// gridOTapsZeros is gridOTaps for bilinear "zeros" padding, the point
// computed inline as gridTapsZeros: the same taps and scales, bitwise, as
// gridOTapsPoints.
func gridOTapsZeros[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T], scale []T) {
	hasX, hasY := a == 0 && b <= 1, a <= 1 && b == 0
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	sx, sy, aligned := ax.scale, ay.scale, g.AlignCorners
	// kx^a·ky^b (kx = sx, ky = sy under "zeros"), as pow's factors.
	pa, pb := T(1), T(1)
	if a == 1 {
		pa = sx
	}
	if b == 1 {
		pb = sy
	}
	W, H, wp, zero := float64(g.W), float64(g.H), g.W+2, g.zeroCell()
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			x, y := T(grid[2*j]+1)*sx, T(grid[2*j+1]+1)*sy
			if !aligned {
				x -= 0.5
				y -= 0.5
			}
			scale[2*j], scale[2*j+1] = 0, 0
			fx, fy := math.Floor(float64(x)), math.Floor(float64(y))
			if !(fx >= -1 && fx < W && fy >= -1 && fy < H) {
				taps[j] = gridTap[T]{i: zero} // reads zeros; its scale is 0
				continue
			}
			lx, ly := x-T(fx), y-T(fy)
			t := gridTap[T]{i: int32((int(fy)+1)*wp + int(fx) + 1), ok: true, w: [4]T{1 - lx, lx, 1 - ly, ly}}
			if a == 1 {
				t.w[0], t.w[1] = -1, 1
			}
			if b == 1 {
				t.w[2], t.w[3] = -1, 1
			}
			taps[j] = t
			m := T(1)
			if mask != nil {
				m = mask[j]
			}
			if hasX {
				scale[2*j] = sx * pa * pb * m
			}
			if hasY {
				scale[2*j+1] = sy * pa * pb * m
			}
		}
	})
}

// gridOTapsPoints is gridOTaps through newGridPoint, for every mode and
// padding.
func gridOTapsPoints[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T], scale []T) {
	mo := g.MaxOrder()
	hasX, hasY := a+1 <= mo && b <= mo, a <= mo && b+1 <= mo
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	pow := func(k T, e int) T {
		if e == 1 {
			return k
		}
		return 1
	}
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			pt := newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
			scale[2*j], scale[2*j+1] = 0, 0
			if !pt.ok {
				taps[j] = gridTap[T]{i: g.zeroCell()} // reads zeros; its scale is 0
				continue
			}
			// w holds the factors fx0, fx1, fy0, fy1.
			t := gridTap[T]{i: pt.i, ok: true, w: [4]T{1 - pt.lx, pt.lx, 1 - pt.ly, pt.ly}}
			if a == 1 {
				t.w[0], t.w[1] = -1, 1
			}
			if b == 1 {
				t.w[2], t.w[3] = -1, 1
			}
			taps[j] = t
			m := T(1)
			if mask != nil {
				m = mask[j]
			}
			if hasX {
				scale[2*j] = pt.kx * pow(pt.kx, a) * pow(pt.ky, b) * m
			}
			if hasY {
				scale[2*j+1] = pt.ky * pow(pt.kx, a) * pow(pt.ky, b) * m
			}
		}
	})
}

// gridOBlocks are GridSampleO's float32 taps in blocks of 8 pixels for
// gridGatherO: per block, the corner indices idx[8] (pixels in the order
// 0 1 4 5 2 3 6 7), the factors f[32]
// (fx0, fx1, fy0, fy1, 8 pixels each) and the sums acc[16] (x, then y),
// for every image's full blocks (N·⌊p/8⌋).
type gridOBlocks struct {
	idx    []int32
	f, acc []float32
}

func newGridOBlocks(taps []gridTap[float32], n, p int) *gridOBlocks {
	nb := p / 8
	b := &gridOBlocks{idx: ints32.Get(8 * n * nb), f: scratch32.Get(32 * n * nb), acc: scratch32.Get(16 * n * nb)}
	par.For(n, func(lo, hi int) {
		clear(b.acc[16*lo*nb : 16*hi*nb])
		for im := lo; im < hi; im++ {
			for j := 0; j < nb*8; j++ {
				t, k := &taps[im*p+j], im*nb+j/8
				b.idx[8*k+[8]int{0, 1, 4, 5, 2, 3, 6, 7}[j%8]] = t.i // gridGatherO's order
				for q := 0; q < 4; q++ {
					b.f[32*k+8*q+j%8] = t.w[q]
				}
			}
		}
	})
	return b
}

func (b *gridOBlocks) release() {
	ints32.Put(b.idx)
	scratch32.Put(b.f)
	scratch32.Put(b.acc)
}

// gridContract calls body(n, j0, j1, c0, c1, planes, ps, wp, grs) for
// every block [j0, j1) of image n's output pixels and every chunk
// [c0, c1) of gridChunk channels in order, with image n's planes of x
// (bilinear: zero-framed, row stride wp; plane size ps) and of gr; the
// blocks run in parallel, so each output pixel is summed over the channels
// in a fixed order by one worker. The framed planes are copied once, in
// parallel, to a scratch buffer.
func gridContract[T Float](g *GridSampleGeom, x, gr []T, body func(n, j0, j1, c0, c1 int, planes []T, ps, wp int, grs []T)) {
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W
	if p == 0 || g.N == 0 {
		return // no pixels (the block sizes below divide by both)
	}
	planes, ps := x, hw
	if !g.Nearest {
		wp, ps = g.W+2, g.framedSize()
		planes = floatScratch[T]().Get(g.N * g.C * ps)
		defer floatScratch[T]().Put(planes)
		par.For(g.N*g.C, func(lo, hi int) {
			for nc := lo; nc < hi; nc++ {
				padPlane(planes[nc*ps:(nc+1)*ps], x[nc*hw:(nc+1)*hw], g.H, g.W)
			}
		})
	}
	// Every block of pixels reads all of its image's planes, so the blocks
	// are as large as the workers allow: an image each when there are
	// enough, otherwise a few per worker. The sums do not depend on it.
	blocks := min(max(1, (2*runtime.GOMAXPROCS(0)+g.N-1)/g.N), max(1, p/64))
	size := ((p+blocks-1)/blocks + 7) &^ 7 // a multiple of 8: GridSampleO's AVX2 blocks
	blocks = (p + size - 1) / size
	par.For(g.N*blocks, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			n, j0 := k/blocks, k%blocks*size
			j1 := min(j0+size, p)
			for c0 := 0; c0 < g.C; c0 += gridChunk {
				body(n, j0, j1, c0, min(c0+gridChunk, g.C), planes[n*g.C*ps:(n+1)*g.C*ps], ps, wp, gr[n*g.C*p:(n+1)*g.C*p])
			}
		}
	})
}

// gridChunk is the number of channels GridSampleC and GridSampleO sum in
// registers before adding to a pixel's result (a fixed grouping, so the
// rounding does not depend on the threads).
const gridChunk = 8

// GridSplit copies half which (0: x, 1: y) of src [N, HO, WO, 2] into dst
// [N, HO, WO]; GridEmbed is its transpose (dst zero on entry).
func GridSplit[T Float](which int, src, dst []T) {
	for j := range dst {
		dst[j] = src[2*j+which]
	}
}

// GridEmbed puts src [N, HO, WO] into half which of dst [N, HO, WO, 2]
// (the other half stays zero).
func GridEmbed[T Float](which int, src, dst []T) {
	for j, v := range src {
		dst[2*j+which] = v
	}
}

// AffineGridBase is torch's base coordinate along an axis of n points
// (affine_grid's linspace_from_neg_one): 0 for n = 1, otherwise −1 to 1
// in n steps, times (n − 1)/n unless alignCorners (pixel centres), in
// T's arithmetic as torch's.
func AffineGridBase[T Float](n int, alignCorners bool) []T {
	v := make([]T, n)
	if n <= 1 {
		return v
	}
	step := T(2) / T(n-1)
	for i := range v {
		// torch's linspace: from the start in the first half, from the end
		// in the second.
		if i < n/2 {
			v[i] = -1 + step*T(i)
		} else {
			v[i] = 1 - step*T(n-1-i)
		}
		if !alignCorners {
			v[i] = v[i] * T(n-1) / T(n) // torch: range * (n − 1) / n
		}
	}
	return v
}

// AffineGrid writes grid[n, h, w] = θ[n]·(x_w, y_h, 1) into out
// [N, H, W, 2] for theta [N, 2, 3] (F.affine_grid), x and y from
// AffineGridBase.
func AffineGrid[T Float](n, h, w int, alignCorners bool, theta, out []T) {
	xs, ys := AffineGridBase[T](w, alignCorners), AffineGridBase[T](h, alignCorners)
	par.For(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			t := theta[6*k : 6*k+6]
			o := out[k*h*w*2:]
			for i, y := range ys {
				for j, x := range xs {
					p := 2 * (i*w + j)
					o[p] = x*t[0] + y*t[1] + t[2]
					o[p+1] = x*t[3] + y*t[4] + t[5]
				}
			}
		}
	})
}

// AffineGridT is AffineGrid's transpose in theta: dtheta[n, j, :] =
// Σ_(h, w) gr[n, h, w, j]·(x_w, y_h, 1), pixels in order; dtheta [N, 2, 3]
// is overwritten.
func AffineGridT[T Float](n, h, w int, alignCorners bool, gr, dtheta []T) {
	xs, ys := AffineGridBase[T](w, alignCorners), AffineGridBase[T](h, alignCorners)
	par.For(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			var s [6]T
			src := gr[k*h*w*2:]
			for i, y := range ys {
				for j, x := range xs {
					p := 2 * (i*w + j)
					g0, g1 := src[p], src[p+1]
					s[0] += g0 * x
					s[1] += g0 * y
					s[2] += g0
					s[3] += g1 * x
					s[4] += g1 * y
					s[5] += g1
				}
			}
			copy(dtheta[6*k:6*k+6], s[:])
		}
	})
}

// GridSampleO2 computes O_(a+1)b(x, grid, gr, m1) + O_a(b+1)(x, grid, gr,
// m2) into out [N, HO, WO, 2] (zero on entry), the pair of grid terms in
// the derivatives of O_ab. Its halves are the contractions C_(a+2)b,
// C_(a+1)(b+1), C_a(b+2): x = m1·C_(a+2)b + m2·C_(a+1)(b+1), y =
// m1·C_(a+1)(b+1) + m2·C_a(b+2); when the outer two are zero (bilinear)
// one pass computes the shared one.
func GridSampleO2[T Float](g *GridSampleGeom, a, b int, x, grid, gr, m1, m2, out []T) {
	mo := g.MaxOrder()
	n := len(out) / 2
	ta := make([]T, len(out)) // (C_(a+2)b, C_(a+1)(b+1))
	GridSampleO(g, a+1, b, x, grid, gr, nil, ta)
	tb := ta // (C_(a+1)(b+1), C_a(b+2)): only the shared member when C_a(b+2) is zero
	outer := a+2 <= mo || b+2 <= mo
	if outer {
		tb = make([]T, len(out))
		GridSampleO(g, a, b+1, x, grid, gr, nil, tb)
	}
	par.For(g.N, func(lo, hi int) {
		for j := lo * n / g.N; j < hi*n/g.N; j++ {
			c2 := ta[2*j+1]
			if outer {
				out[2*j] = m1[j]*ta[2*j] + m2[j]*tb[2*j]
				out[2*j+1] = m1[j]*c2 + m2[j]*tb[2*j+1]
				continue
			}
			out[2*j], out[2*j+1] = m2[j]*c2, m1[j]*c2
		}
	})
}
