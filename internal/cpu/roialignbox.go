package cpu

import "github.com/gops-dev/gops/internal/par"

// RoIAlign's derivatives w.r.t. the boxes (docs/ARCHITECTURE.md, "RoIAlign's
// boxes"). A sample point of box k in bin (ph, pw), grid point (iy, ix), is
//
//	y = y1·s − off + (ph + (iy + 0.5)/gh)·(y2 − y1)·s/PH
//
// (x likewise), so with τ = (ph + (iy + 0.5)/gh)/PH
//
//	∂y/∂y1 = s·(1 − τ),  ∂y/∂y2 = s·τ
//
// or, when the unaligned roi height is clamped to 1 (roi_h < 1),
// ∂y/∂y1 = s and ∂y/∂y2 = 0. The grid (gh, gw) and the count are piecewise
// constant in the boxes, so these coefficients do not depend on the boxes.
// The bilinear value B(y, x) is linear in y and in x inside a cell, so its
// derivatives of order (a, b) ∈ {0, 1}² are its only non-zero ones. Member
// F_ab is
//
//	F_ab[k, j·C + c, ph, pw] = (1/count) Σ_{iy, ix} A_j · ∂ᵃ_y ∂ᵇ_x B_c(y, x)
//
// with A_j the product of the a y-coefficients and b x-coefficients that
// channel j selects: (1, 0): j = jy (0: y1, 1: y2); (0, 1): j = jx (0: x1,
// 1: x2); (1, 1): j = 2·jy + jx (y-major) or 2·jx + jy (x-major). F_00 is
// RoIAlign itself (RoIAlignForward, not this file).
//
// PSRoIAlign's family is the same sum with PSRoIAlign's sampling (aligned,
// no size clamp, boxes scaled in T) and its position-sensitive channels:
// output channel c of bin (ph, pw) reads input channel (c·PH + ph)·PW + pw;
// F_00 is PSRoIAlignForward. Both run one kernel pair (boxDerivFamily).

// roiAlignBoxCoefs are the coefficients ∂y/∂y1, ∂y/∂y2 of one box's sample
// rows (index ph·gh + iy) and ∂x/∂x1, ∂x/∂x2 of its sample columns
// (pw·gw + ix), in pairs.
type roiAlignBoxCoefs[T Float] struct {
	y, x [][2]T
}

// newRoIAlignBoxCoefs computes the coefficients of box (batch, x1, y1, x2,
// y2) with grid b, as the derivatives of roiAlignBoxGrid's arithmetic: the
// roi size clamp (unaligned, size < 1) gives ∂/∂(start) = s and
// ∂/∂(end) = 0.
func newRoIAlignBoxCoefs[T Float](g *RoIAlignGeom, box []T, b *RoIAlignBox[T]) roiAlignBoxCoefs[T] {
	scale := T(g.Scale)
	var off T
	if g.Aligned {
		off = 0.5
	}
	rh := (box[4]*scale - off) - (box[2]*scale - off)
	rw := (box[3]*scale - off) - (box[1]*scale - off)
	side := func(n, grid int, clamped bool) [][2]T {
		c := make([][2]T, n*grid)
		for p := 0; p < n; p++ {
			for i := 0; i < grid; i++ {
				if clamped {
					c[p*grid+i] = [2]T{scale, 0}
					continue
				}
				tau := (T(p) + (T(i)+0.5)/T(grid)) / T(n)
				c[p*grid+i] = [2]T{scale * (1 - tau), scale * tau}
			}
		}
		return c
	}
	return roiAlignBoxCoefs[T]{
		y: side(g.PH, b.GH, !g.Aligned && rh < 1),
		x: side(g.PW, b.GW, !g.Aligned && rw < 1),
	}
}

// roiAlignDerivTap is the tap of ∂ᵃ_y ∂ᵇ_x B at (y, x) under torchvision's
// bilinear rule (roiAlignTap): per row the factor (hy, ly) for a = 0 or
// (−1, 1) for a = 1, per column likewise, each corner weighted by the
// product. A point outside [−1, H] × [−1, W] gives ok = false (it samples
// nothing). A coordinate clamped by the rule (y <= 0, or y on or past the
// last row) has derivative 0 in it. At an integer the cell is the one
// int() selects: the right-sided derivative.
func roiAlignDerivTap[T Float](y, x T, h, w, a, b int) (t bilinearTap[T], ok bool) {
	if !(y >= -1 && y <= T(h) && x >= -1 && x <= T(w)) { // true for NaN too
		return t, false
	}
	yl, yh, fy := derivSide(y, h, a)
	xl, xh, fx := derivSide(x, w, b)
	t.pos = [4]int{yl*w + xl, yl*w + xh, yh*w + xl, yh*w + xh}
	t.w = [4]T{fy[0] * fx[0], fy[0] * fx[1], fy[1] * fx[0], fy[1] * fx[1]}
	return t, true
}

// derivSide is one coordinate of roiAlignDerivTap: the low and high
// neighbours and their factors for derivative order d (0 or 1).
func derivSide[T Float](y T, n, d int) (lo, hi int, f [2]T) {
	clamped := y <= 0
	y = max(y, 0)
	lo = int(y)
	if lo >= n-1 {
		lo, hi, y, clamped = n-1, n-1, T(n-1), true
	} else {
		hi = lo + 1
	}
	if d == 0 {
		l := y - T(lo)
		return lo, hi, [2]T{1 - l, l}
	}
	if clamped {
		return lo, hi, [2]T{}
	}
	return lo, hi, [2]T{-1, 1}
}

// boxDerivChannels is the number of coefficient channels J of member
// (a, b): 2^(a+b).
func boxDerivChannels(a, b int) int { return 1 << (a + b) }

// boxDerivCoefs fills coef[:J] with the coefficient of each channel of
// member (a, b) for sample row cy and column cx (see the file comment).
func boxDerivCoefs[T Float](coef []T, a, b int, xMajor bool, cy, cx [2]T) {
	switch {
	case a == 1 && b == 0:
		coef[0], coef[1] = cy[0], cy[1]
	case a == 0 && b == 1:
		coef[0], coef[1] = cx[0], cx[1]
	case xMajor:
		coef[0], coef[1], coef[2], coef[3] = cx[0]*cy[0], cx[0]*cy[1], cx[1]*cy[0], cx[1]*cy[1]
	default:
		coef[0], coef[1], coef[2], coef[3] = cy[0]*cx[0], cy[0]*cx[1], cy[1]*cx[0], cy[1]*cx[1]
	}
}

// boxDerivFamily is what the box members of RoIAlign and PSRoIAlign share:
// the sampling geometry and grids, the geometry of the boxes' own
// coordinates (for the coefficients) and the channel map. Output channel c
// of bin (ph, pw) reads input channel c·cStride + bin·binStride (RoIAlign:
// c; PSRoIAlign: (c·PH + ph)·PW + pw); cOut is the number of output
// channels per coefficient channel, cIn the input's.
type boxDerivFamily[T Float] struct {
	sample, coefs      *RoIAlignGeom
	grids              []RoIAlignBox[T]
	cOut, cIn          int
	cStride, binStride int
}

// roiAlignBoxFamily is RoIAlign's family: its own geometry for both.
func roiAlignBoxFamily[T Float](g *RoIAlignGeom, boxes []T) (*boxDerivFamily[T], error) {
	grids, err := RoIAlignGrids(g, boxes)
	if err != nil {
		return nil, err
	}
	return &boxDerivFamily[T]{sample: g, coefs: g, grids: grids, cOut: g.C, cIn: g.C, cStride: 1}, nil
}

// RoIAlignBoxDeriv computes member F_ab (a + b >= 1) of RoIAlign's box
// family: out is [K, J·C, PH, PW], J = 2^(a+b), channel j·C + c (file
// comment); xMajor orders F_11's channels x-major. out must be zero on
// entry (it is added to). Parallel over boxes; each output sums its
// samples in grid order, so the result does not depend on the threads.
func RoIAlignBoxDeriv[T Float](g *RoIAlignGeom, a, b int, xMajor bool, input, boxes, out []T) error {
	return runBoxMember(roiAlignBoxFamily, g, false, a, b, xMajor, input, boxes, out)
}

// RoIAlignBoxDerivTranspose is the adjoint of RoIAlignBoxDeriv in its
// input: it scatters grad [K, J·C, PH, PW] onto dst [N, C, H, W] (adding to
// what is there). Parallel over ranges of channels: each worker owns its
// channels and visits boxes, bins and samples in order, so the sums do not
// depend on the threads.
func RoIAlignBoxDerivTranspose[T Float](g *RoIAlignGeom, a, b int, xMajor bool, grad, boxes, dst []T) error {
	return runBoxMember(roiAlignBoxFamily, g, true, a, b, xMajor, grad, boxes, dst)
}

// psRoIAlignBoxFamily is PSRoIAlign's family: PSRoIAlignGrids samples boxes
// already scaled (scale 1), whose coordinates are the boxes' times
// spatial_scale, aligned.
func psRoIAlignBoxFamily[T Float](g *PoolGeom, boxes []T) (*boxDerivFamily[T], error) {
	ag, grids, err := PSRoIAlignGrids(g, boxes)
	if err != nil {
		return nil, err
	}
	cg := *ag
	cg.Scale = g.Scale
	nb := g.PH * g.PW
	return &boxDerivFamily[T]{sample: ag, coefs: &cg, grids: grids, cOut: g.C / nb, cIn: g.C, cStride: nb, binStride: 1}, nil
}

// PSRoIAlignBoxDeriv computes member F_ab (a + b >= 1) of PSRoIAlign's box
// family: as RoIAlignBoxDeriv with PSRoIAlign's sampling (boxes times
// spatial_scale in T, minus 0.5, no size clamp) and its position-sensitive
// channels: out is [K, J·C', PH, PW], C' = C/(PH·PW), channel j·C' + c of
// bin (ph, pw) reading input channel (c·PH + ph)·PW + pw. out must be zero
// on entry. Parallel over boxes, independent of the threads.
func PSRoIAlignBoxDeriv[T Float](g *PoolGeom, a, b int, xMajor bool, input, boxes, out []T) error {
	return runBoxMember(psRoIAlignBoxFamily, g, false, a, b, xMajor, input, boxes, out)
}

// PSRoIAlignBoxDerivTranspose is the adjoint of PSRoIAlignBoxDeriv in its
// input: it scatters grad [K, J·C', PH, PW] onto dst [N, C, H, W] (adding
// to what is there). Parallel over output channels c, each owning input
// channels (c·PH + ph)·PW + pw; independent of the threads.
func PSRoIAlignBoxDerivTranspose[T Float](g *PoolGeom, a, b int, xMajor bool, grad, boxes, dst []T) error {
	return runBoxMember(psRoIAlignBoxFamily, g, true, a, b, xMajor, grad, boxes, dst)
}

// runBoxMember builds the family of geometry g and boxes and runs member
// (a, b) on it: the derivative (v the input, w the output), parallel over
// boxes, or, with transpose, its adjoint (v the gradient, w the
// destination), parallel over output channels, each owning the input
// channels it reads.
func runBoxMember[G any, T Float](family func(*G, []T) (*boxDerivFamily[T], error), g *G, transpose bool, a, b int, xMajor bool, v, boxes, w []T) error {
	f, err := family(g, boxes)
	if err != nil {
		return err
	}
	if transpose {
		par.ForWork(f.cOut, 4*len(v), func(lo, hi int) { f.run(true, a, b, xMajor, 0, len(f.grids), lo, hi, w, boxes, v) })
	} else {
		par.ForWork(len(f.grids), 4*len(w), func(lo, hi int) { f.run(false, a, b, xMajor, lo, hi, 0, f.cOut, v, boxes, w) })
	}
	return nil
}

// run is member (a, b) of the family, or its adjoint (transpose), on boxes
// [kLo, kHi) and output channels [cLo, cHi): img is the input map
// [N, C, H, W], rows the member's value [K, J·C', PH, PW]. The member reads
// img and adds to rows (zero on entry), each output the sum of its bin's
// samples in grid order divided by the count; the adjoint reads rows and
// adds to img. Boxes with an empty grid sample nothing.
func (f *boxDerivFamily[T]) run(transpose bool, a, b int, xMajor bool, kLo, kHi, cLo, cHi int, img, boxes, rows []T) {
	g := f.sample
	plane, bins, J := g.H*g.W, g.PH*g.PW, boxDerivChannels(a, b)
	coef := make([]T, J)
	for k := kLo; k < kHi; k++ {
		bx := &f.grids[k]
		if bx.GH*bx.GW == 0 {
			continue
		}
		cf := newRoIAlignBoxCoefs(f.coefs, boxes[5*k:5*k+5], bx)
		im := img[int(boxes[5*k])*f.cIn*plane:]
		rk := rows[k*J*f.cOut*bins : (k+1)*J*f.cOut*bins]
		for ph := 0; ph < g.PH; ph++ {
			for pw := 0; pw < g.PW; pw++ {
				bin := ph*g.PW + pw
				im := im[bin*f.binStride*plane:]
				for iy := 0; iy < bx.GH; iy++ {
					for ix := 0; ix < bx.GW; ix++ {
						y, xx := bx.samplePoint(ph, pw, iy, ix)
						t, ok := roiAlignDerivTap(y, xx, g.H, g.W, a, b)
						if !ok {
							continue
						}
						boxDerivCoefs(coef, a, b, xMajor, cf.y[ph*bx.GH+iy], cf.x[pw*bx.GW+ix])
						if transpose {
							f.scatter(&t, coef, rk[bin:], im, cLo, cHi, bx.Count)
						} else {
							f.gather(&t, coef, im, rk[bin:], cLo, cHi)
						}
					}
				}
				if !transpose {
					for i := bin; i < len(rk); i += bins {
						rk[i] /= bx.Count
					}
				}
			}
		}
	}
}

// gather adds, for channels [cLo, cHi), the tap t of img (the bin's first
// channel) times each channel coefficient to rows (from the bin's output).
func (f *boxDerivFamily[T]) gather(t *bilinearTap[T], coef, img, rows []T, cLo, cHi int) {
	plane, bins := f.sample.H*f.sample.W, f.sample.PH*f.sample.PW
	for c := cLo; c < cHi; c++ {
		p := img[c*f.cStride*plane:]
		v := t.w[0]*p[t.pos[0]] + t.w[1]*p[t.pos[1]] + t.w[2]*p[t.pos[2]] + t.w[3]*p[t.pos[3]]
		for j, cj := range coef {
			rows[(j*f.cOut+c)*bins] += cj * v
		}
	}
}

// scatter is gather's adjoint: for channels [cLo, cHi), the coefficients'
// combination of rows, divided by count, spread over the tap t of img.
func (f *boxDerivFamily[T]) scatter(t *bilinearTap[T], coef, rows, img []T, cLo, cHi int, count T) {
	plane, bins := f.sample.H*f.sample.W, f.sample.PH*f.sample.PW
	for c := cLo; c < cHi; c++ {
		var v T
		for j, cj := range coef {
			v += cj * rows[(j*f.cOut+c)*bins]
		}
		v /= count
		p := img[c*f.cStride*plane:]
		for q, pos := range t.pos {
			p[pos] += t.w[q] * v
		}
	}
}
