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
