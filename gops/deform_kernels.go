package gops

import "math"

// deformGeom fixes the shapes of a deformable convolution: input
// [N, C, H, W], kernel kh×kw, output Ho×Wo, og offset groups, groups
// convolution groups. Sampled columns are [groups, Cg·K, N·L] (K = kh·kw
// kernel positions, L = Ho·Wo output positions; element (c, k, n, l) at
// ((c·K + k)·N + n)·L + l), the layout the grouped matrix product reads.
// Offsets are [N, 2·og·K, Ho, Wo] with (dy, dx) interleaved per kernel
// position, masks [N, og·K, Ho, Wo], as in torchvision.
type deformGeom struct {
	n, c, h, w int
	kh, kw     int
	sh, sw     int // stride
	ph, pw     int // padding
	dh, dw     int // dilation
	ho, wo     int
	og         int // offset groups
	groups     int
}

func (g *deformGeom) k() int { return g.kh * g.kw }
func (g *deformGeom) l() int { return g.ho * g.wo }

// maskLen is the element count of the mask layout.
func (g *deformGeom) maskLen() int { return g.n * g.og * g.k() * g.l() }

// deformTaps computes, for every sample (n, offset group, k, l), the four
// neighbouring pixels and the weights ∂ᵃ_y ∂ᵇ_x of torchvision's bilinear
// interpolation for deformable convolution: a sample with y <= -1, y >= H,
// x <= -1 or x >= W (or a non-finite offset) contributes nothing; each
// corner counts only if it lies inside the image. With h = floor(y),
// the weights of (h, w), (h, w+1), (h+1, w), (h+1, w+1) are, with
// ly = y-h, lx = x-w:
//
//	(0,0): (1-ly)(1-lx), (1-ly)lx, ly(1-lx), ly·lx
//	(1,0): -(1-lx), -lx, 1-lx, lx          (∂/∂y)
//	(0,1): -(1-ly), 1-ly, -ly, ly          (∂/∂x)
//	(1,1): 1, -1, -1, 1
//
// At an integer y these are the right-sided derivatives, as torchvision's
// backward computes them. A corner outside the image is marked pos = -1 and
// never read (torchvision does not read it either, which matters when the
// input holds NaN or Inf). Index: ((n·og + g)·K + k)·L + l, the mask layout.
func deformTaps[T float](g *deformGeom, a, b int, offset []T) []bilinearTap[T] {
	taps := make([]bilinearTap[T], g.maskLen())
	K, L := g.k(), g.l()
	parallelFor(g.n*g.og, func(lo, hi int) {
		for ng := lo; ng < hi; ng++ {
			for k := 0; k < K; k++ {
				i, j := k/g.kw, k%g.kw
				oy := offset[(ng*K+k)*2*L:]
				ox := offset[((ng*K+k)*2+1)*L:]
				row := taps[(ng*K+k)*L : (ng*K+k+1)*L]
				for l := range row {
					ho, wo := l/g.wo, l%g.wo
					y := T(ho*g.sh-g.ph+i*g.dh) + oy[l]
					x := T(wo*g.sw-g.pw+j*g.dw) + ox[l]
					row[l] = deformTap(y, x, g.h, g.w, a, b)
				}
			}
		}
	})
	return taps
}

// deformTap is one sample of deformTaps.
func deformTap[T float](y, x T, h, w, a, b int) bilinearTap[T] {
	t := bilinearTap[T]{pos: [4]int{-1, -1, -1, -1}}
	// torchvision drops samples with y <= -1 (and so on), but its offset
	// gradient at exactly y = -1 is the right-sided derivative, which is not
	// zero. Admitting y = -1 gives both: there the value weights are 0 and
	// the derivative weights are the right-sided ones. The test is false for
	// NaN.
	if !(y >= -1 && y < T(h) && x >= -1 && x < T(w)) {
		return t
	}
	yl := int(math.Floor(float64(y)))
	xl := int(math.Floor(float64(x)))
	ly, lx := y-T(yl), x-T(xl)
	hy, hx := 1-ly, 1-lx
	switch {
	case a == 0 && b == 0:
		t.w = [4]T{hy * hx, hy * lx, ly * hx, ly * lx}
	case a == 1 && b == 0:
		t.w = [4]T{-hx, -lx, hx, lx}
	case a == 0 && b == 1:
		t.w = [4]T{-hy, hy, -ly, ly}
	default:
		t.w = [4]T{1, -1, -1, 1}
	}
	t.full = true
	corner := func(c, yy, xx int) {
		if yy >= 0 && yy < h && xx >= 0 && xx < w {
			t.pos[c] = yy*w + xx
		} else {
			t.w[c], t.full = 0, false
		}
	}
	corner(0, yl, xl)
	corner(1, yl, xl+1)
	corner(2, yl+1, xl)
	corner(3, yl+1, xl+1)
	return t
}

// deformSample is S_ab: cols[c, k, n, l] = mask[n, g, k, l] · Σ_corners
// weight · input[n, c, corner] (mask nil means 1). Parallel over channels.
func deformSample[T float](g *deformGeom, taps []bilinearTap[T], input, mask, cols []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	plane := g.h * g.w
	parallelFor(g.c, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			grp := c / cg
			for k := 0; k < K; k++ {
				for n := 0; n < g.n; n++ {
					x := input[(n*g.c+c)*plane : (n*g.c+c+1)*plane]
					tr := (n*g.og+grp)*K + k
					ts := taps[tr*L : (tr+1)*L]
					out := cols[((c*K+k)*g.n+n)*L : ((c*K+k)*g.n+n+1)*L]
					for l := range ts {
						out[l] = ts[l].dot(x)
					}
					if mask != nil {
						m := mask[tr*L : (tr+1)*L]
						for l := range out {
							out[l] *= m[l]
						}
					}
				}
			}
		}
	})
}

// deformScatter is T_ab, the adjoint of S_ab in its input:
// dst[n, c, h, w] = Σ_{k,l} mask · weight · cols[c, k, n, l]. Parallel over
// channels; each channel's sum runs over k, n, l in order, so results are
// bitwise reproducible.
func deformScatter[T float](g *deformGeom, taps []bilinearTap[T], cols, mask, dst []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	plane := g.h * g.w
	parallelFor(g.c, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			grp := c / cg
			for k := 0; k < K; k++ {
				for n := 0; n < g.n; n++ {
					x := dst[(n*g.c+c)*plane : (n*g.c+c+1)*plane]
					tr := (n*g.og+grp)*K + k
					ts := taps[tr*L : (tr+1)*L]
					col := cols[((c*K+k)*g.n+n)*L : ((c*K+k)*g.n+n+1)*L]
					var m []T
					if mask != nil {
						m = mask[tr*L : (tr+1)*L]
					}
					for l := range ts {
						v := col[l]
						if m != nil {
							v *= m[l]
						}
						ts[l].scatter(x, v)
					}
				}
			}
		}
	})
}

// deformContract is C_ab: dst[n, g, k, l] = Σ_{c in group g} cols[c, k, n, l]
// · Σ_corners weight · input[n, c, corner]. Parallel over (n, g, k) rows,
// each summing channels in order.
func deformContract[T float](g *deformGeom, taps []bilinearTap[T], input, cols, dst []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	plane := g.h * g.w
	parallelFor(g.n*g.og*K, func(lo, hi int) {
		for tr := lo; tr < hi; tr++ {
			k := tr % K
			n, grp := tr/K/g.og, tr/K%g.og
			ts := taps[tr*L : (tr+1)*L]
			out := dst[tr*L : (tr+1)*L]
			for c := grp * cg; c < (grp+1)*cg; c++ {
				x := input[(n*g.c+c)*plane : (n*g.c+c+1)*plane]
				col := cols[((c*K+k)*g.n+n)*L : ((c*K+k)*g.n+n+1)*L]
				for l := range ts {
					out[l] += col[l] * ts[l].dot(x)
				}
			}
		}
	})
}

// deformOffsetGrad is O_ab: the y and x halves of dst (offset layout) get
// mask · C over tapsY (the weights of order (a+1, b)) and tapsX (order
// (a, b+1)); a nil tap table is a zero half. One pass reads each sample's
// pixels once for both halves. Parallel over (n, g, k) rows.
func deformOffsetGrad[T float](g *deformGeom, tapsY, tapsX []bilinearTap[T], input, cols, mask, dst []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	plane := g.h * g.w
	parallelFor(g.n*g.og*K, func(lo, hi int) {
		for tr := lo; tr < hi; tr++ {
			k := tr % K
			n, grp := tr/K/g.og, tr/K%g.og
			oy := dst[2*tr*L : (2*tr+1)*L]
			ox := dst[(2*tr+1)*L : (2*tr+2)*L]
			for c := grp * cg; c < (grp+1)*cg; c++ {
				x := input[(n*g.c+c)*plane : (n*g.c+c+1)*plane]
				col := cols[((c*K+k)*g.n+n)*L : ((c*K+k)*g.n+n+1)*L]
				if tapsY != nil {
					ty := tapsY[tr*L : (tr+1)*L]
					for l := range ty {
						oy[l] += col[l] * ty[l].dot(x)
					}
				}
				if tapsX != nil {
					tx := tapsX[tr*L : (tr+1)*L]
					for l := range tx {
						ox[l] += col[l] * tx[l].dot(x)
					}
				}
			}
			if mask != nil {
				m := mask[tr*L : (tr+1)*L]
				for l := range m {
					oy[l] *= m[l]
					ox[l] *= m[l]
				}
			}
		}
	})
}

// offsetEmbed writes src (mask layout) into the y (which = 0) or x (1) slots
// of dst (offset layout); offsetSplit reads them back. Each is the other's
// transpose.
func offsetEmbed[T float](g *deformGeom, which int, src, dst []T) {
	L := g.l()
	for r := 0; r < g.maskLen()/max(L, 1); r++ {
		copy(dst[(2*r+which)*L:(2*r+which+1)*L], src[r*L:(r+1)*L])
	}
}

func offsetSplit[T float](g *deformGeom, which int, src, dst []T) {
	L := g.l()
	for r := 0; r < g.maskLen()/max(L, 1); r++ {
		copy(dst[r*L:(r+1)*L], src[(2*r+which)*L:(2*r+which+1)*L])
	}
}
