package cpu

import "math"

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
// S_00 is GridSample, O_00 its gradient w.r.t. the grid (x first).

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
	Padding            GridPadding
	AlignCorners       bool
}

// MaxOrder is the highest non-zero derivative order of the interpolation
// weights in one coordinate: 1 (bilinear) or 0 (nearest).
func (g *GridSampleGeom) MaxOrder() int {
	if g.Nearest {
		return 0
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

// gridPoint is one output pixel's sample: the fractions lx, ly of its
// coordinates in their cell, the chain factors kx, ky, the cell's
// north-west corner i (bilinear; nearest: the pixel) in the input plane
// and which corners lie in it: bits 1, 2, 4, 8 for nw, ne (i+1), sw (i+W)
// and se (i+W+1); 15 all, 0 none (nothing is sampled).
type gridPoint[T Float] struct {
	lx, ly, kx, ky T
	i              int32
	m              uint8
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
			pt.i, pt.m = int32(int(ry)*g.W+int(rx)), 1
		}
		return pt
	}
	fx, fy := math.Floor(float64(x)), math.Floor(float64(y))
	if !(fx >= -1 && fx < W && fy >= -1 && fy < H) {
		return pt
	}
	ix, iy := int(fx), int(fy)
	pt.lx, pt.ly, pt.kx, pt.ky = x-T(fx), y-T(fy), kx, ky
	pt.i = int32(iy*g.W + ix)
	wOK, eOK := ix >= 0, ix+1 < g.W
	nOK, sOK := iy >= 0, iy+1 < g.H
	if nOK && wOK {
		pt.m |= 1
	}
	if nOK && eOK {
		pt.m |= 2
	}
	if sOK && wOK {
		pt.m |= 4
	}
	if sOK && eOK {
		pt.m |= 8
	}
	return pt
}

// gridPoints computes every output pixel's gridPoint, [N·HO·WO].
func gridPoints[T Float](g *GridSampleGeom, grid []T) []gridPoint[T] {
	pts := make([]gridPoint[T], g.N*g.HO*g.WO)
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	ParallelFor(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			pts[j] = newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
		}
	})
	return pts
}

// gridTap is one output pixel's corners (gridPoint's i and m) and their
// weights in member (a, b).
type gridTap[T Float] struct {
	i int32
	m uint8
	w [4]T
}

// tap is the pixel's tap for member (a, b) times mask: per coordinate the
// factors (1 − l, l) at order 0 or (−k, k) at order 1, the corners
// weighted by their products (nw = (1 − ly)·(1 − lx), torch's s·e, ...).
// Nearest (order 0 only) weights its one pixel by 1.
func (pt *gridPoint[T]) tap(nearest bool, a, b int, mask T, masked bool) gridTap[T] {
	t := gridTap[T]{i: pt.i, m: pt.m}
	if pt.m == 0 {
		return t
	}
	if nearest {
		t.w[0] = 1
		if masked {
			t.w[0] = mask
		}
		return t
	}
	x0, x1 := 1-pt.lx, pt.lx
	if a == 1 {
		x0, x1 = -pt.kx, pt.kx
	}
	y0, y1 := 1-pt.ly, pt.ly
	if b == 1 {
		y0, y1 = -pt.ky, pt.ky
	}
	t.w = [4]T{y0 * x0, y0 * x1, y1 * x0, y1 * x1}
	if masked {
		for k := range t.w {
			t.w[k] *= mask
		}
	}
	return t
}

// gridTaps are the taps of member (a, b) for every output pixel, times
// mask [N·HO·WO] when not nil.
func gridTaps[T Float](g *GridSampleGeom, a, b int, grid, mask []T) []gridTap[T] {
	pts := gridPoints(g, grid)
	taps := make([]gridTap[T], len(pts))
	ParallelFor(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			var m T
			if mask != nil {
				m = mask[j]
			}
			taps[j] = pts[j].tap(g.Nearest, a, b, m, mask != nil)
		}
	})
	return taps
}

// sample is Σ w·plane[corner] over the valid corners, in the order nw,
// ne, sw, se (torch's sum; a corner outside adds nothing and is not read).
func (t *gridTap[T]) sample(plane []T, w int) T {
	i := int(t.i)
	switch t.m {
	case 15:
		return t.w[0]*plane[i] + t.w[1]*plane[i+1] + t.w[2]*plane[i+w] + t.w[3]*plane[i+w+1]
	case 1:
		return t.w[0] * plane[i]
	case 0:
		return 0
	}
	var v T
	if t.m&1 != 0 {
		v = t.w[0] * plane[i]
	}
	if t.m&2 != 0 {
		v += t.w[1] * plane[i+1]
	}
	if t.m&4 != 0 {
		v += t.w[2] * plane[i+w]
	}
	if t.m&8 != 0 {
		v += t.w[3] * plane[i+w+1]
	}
	return v
}

// scatter adds v·w to the valid corners of plane (sample's transpose).
func (t *gridTap[T]) scatter(plane []T, w int, v T) {
	i := int(t.i)
	switch t.m {
	case 15:
		plane[i] += t.w[0] * v
		plane[i+1] += t.w[1] * v
		plane[i+w] += t.w[2] * v
		plane[i+w+1] += t.w[3] * v
		return
	case 0:
		return
	}
	if t.m&1 != 0 {
		plane[i] += t.w[0] * v
	}
	if t.m&2 != 0 {
		plane[i+1] += t.w[1] * v
	}
	if t.m&4 != 0 {
		plane[i+w] += t.w[2] * v
	}
	if t.m&8 != 0 {
		plane[i+w+1] += t.w[3] * v
	}
}

// GridSampleS computes S_ab(x, grid, mask) = mask ⊙ K_ab(x) (file comment)
// into out [N, C, HO, WO]; mask [N, HO, WO] may be nil (1). S_00 without
// mask is grid_sample. Parallel over planes (n, c), each output written
// once.
func GridSampleS[T Float](g *GridSampleGeom, a, b int, x, grid, mask, out []T) {
	taps := gridTaps(g, a, b, grid, mask)
	hw, p := g.H*g.W, g.HO*g.WO
	ParallelFor(g.N*g.C, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, o, t := x[nc*hw:(nc+1)*hw], out[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			for j := range o {
				o[j] = t[j].sample(plane, g.W)
			}
		}
	})
}

// GridSampleT computes T_ab(gr, grid, mask) = K_abᵀ(mask ⊙ gr), S_ab's
// transpose in its first input: gr [N, C, HO, WO] scattered onto dst
// [N, C, H, W], which must be zero on entry. Parallel over planes (n, c):
// each worker owns its input planes and adds pixels in order, so the sums
// do not depend on the threads.
func GridSampleT[T Float](g *GridSampleGeom, a, b int, gr, grid, mask, dst []T) {
	taps := gridTaps(g, a, b, grid, mask)
	hw, p := g.H*g.W, g.HO*g.WO
	ParallelFor(g.N*g.C, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, src, t := dst[nc*hw:(nc+1)*hw], gr[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			for j, v := range src {
				t[j].scatter(plane, g.W, v)
			}
		}
	})
}

// gridBlock is the number of output pixels a worker of GridSampleC and
// GridSampleO owns.
const gridBlock = 512

// GridSampleC computes C_ab(x, grid, gr) = Σ_c gr ⊙ K_ab(x), [N, HO, WO].
// Parallel over blocks of pixels, each summing channels in order.
func GridSampleC[T Float](g *GridSampleGeom, a, b int, x, grid, gr, out []T) {
	taps := gridTaps(g, a, b, grid, nil)
	gridContract(g, x, gr, func(n, j0, j1, c int, plane, gc []T) {
		for j := j0; j < j1; j++ {
			out[n*g.HO*g.WO+j] += gc[j] * taps[n*g.HO*g.WO+j].sample(plane, g.W)
		}
	})
}

// GridSampleO computes O_ab(x, grid, gr, mask) = (mask ⊙ C_(a+1)b,
// mask ⊙ C_a(b+1)) interleaved into out [N, HO, WO, 2] (x first, as the
// grid); a half whose member is of order above MaxOrder is zero; mask may
// be nil (1). For a = b = 0 and no mask it is the gradient of
// <gr, grid_sample(x, grid)> w.r.t. the grid.
func GridSampleO[T Float](g *GridSampleGeom, a, b int, x, grid, gr, mask, out []T) {
	mo := g.MaxOrder()
	var tx, ty []gridTap[T]
	if a+1 <= mo && b <= mo {
		tx = gridTaps(g, a+1, b, grid, nil)
	}
	if a <= mo && b+1 <= mo {
		ty = gridTaps(g, a, b+1, grid, nil)
	}
	if tx == nil && ty == nil {
		return
	}
	p := g.HO * g.WO
	gridContract(g, x, gr, func(n, j0, j1, c int, plane, gc []T) {
		o := out[2*n*p:]
		if tx != nil {
			t := tx[n*p:]
			for j := j0; j < j1; j++ {
				o[2*j] += gc[j] * t[j].sample(plane, g.W)
			}
		}
		if ty != nil {
			t := ty[n*p:]
			for j := j0; j < j1; j++ {
				o[2*j+1] += gc[j] * t[j].sample(plane, g.W)
			}
		}
	})
	if mask != nil {
		for j, m := range mask {
			out[2*j] *= m
			out[2*j+1] *= m
		}
	}
}

// gridContract calls body(n, j0, j1, c, plane, gc) for every block
// [j0, j1) of image n's output pixels and every channel c in order, with
// x's plane (n, c) and gr's; the blocks run in parallel, so each output
// pixel is summed over channels in order by one worker.
func gridContract[T Float](g *GridSampleGeom, x, gr []T, body func(n, j0, j1, c int, plane, gc []T)) {
	hw, p := g.H*g.W, g.HO*g.WO
	blocks := (p + gridBlock - 1) / gridBlock
	ParallelFor(g.N*blocks, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			n, j0 := k/blocks, k%blocks*gridBlock
			j1 := min(j0+gridBlock, p)
			for c := 0; c < g.C; c++ {
				nc := n*g.C + c
				body(n, j0, j1, c, x[nc*hw:(nc+1)*hw], gr[nc*p:(nc+1)*p])
			}
		}
	})
}

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
	ParallelFor(n, func(lo, hi int) {
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
	ParallelFor(n, func(lo, hi int) {
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
