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

// The kernels read and write images through padded planes: each H×W plane
// of an [N, C, H, W] tensor sits inside a zero frame one pixel wide, (H+2)
// rows of W+2, followed by W+4 more zeros (the tail). Every sample's four
// neighbours, corners outside the image included, then lie in the padded
// plane, and a dropped sample points into the tail with zero weights; the
// inner loops need no branches, and pixels outside the image are never
// read from the caller's data (they are the frame's zeros).

// padW is the row length of a padded plane.
func (g *deformGeom) padW() int { return g.w + 2 }

// padLen is the length of one padded plane, tail included.
func (g *deformGeom) padLen() int { return (g.h+2)*g.padW() + g.w + 4 }

// padImages returns x ([N·C planes of H×W]) in padded planes.
func padImages[T float](g *deformGeom, x []T) []T {
	planes, plane, pl, pw := g.n*g.c, g.h*g.w, g.padLen(), g.padW()
	p := make([]T, planes*pl)
	parallelFor(planes, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src, dst := x[i*plane:(i+1)*plane], p[i*pl:(i+1)*pl]
			for y := 0; y < g.h; y++ {
				copy(dst[(y+1)*pw+1:(y+1)*pw+1+g.w], src[y*g.w:(y+1)*g.w])
			}
		}
	})
	return p
}

// unpadImages copies the inside of every padded plane of p into x.
func unpadImages[T float](g *deformGeom, p, x []T) {
	planes, plane, pl, pw := g.n*g.c, g.h*g.w, g.padLen(), g.padW()
	parallelFor(planes, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src, dst := p[i*pl:(i+1)*pl], x[i*plane:(i+1)*plane]
			for y := 0; y < g.h; y++ {
				copy(dst[y*g.w:(y+1)*g.w], src[(y+1)*pw+1:(y+1)*pw+1+g.w])
			}
		}
	})
}

// padTap is one deformable-convolution sample on a padded plane: base is
// the padded index of its top-left neighbour, w the weights of the
// neighbours base, base+1, base+padW, base+padW+1.
type padTap[T float] struct {
	base int
	w    [4]T
}

// dot is Σ w·p over the tap's neighbours; pw is the padded row length.
func (t *padTap[T]) dot(p []T, pw int) T {
	r0 := p[t.base : t.base+2]
	r1 := p[t.base+pw : t.base+pw+2]
	return T(t.w[0]*r0[0]) + T(t.w[1]*r0[1]) + T(t.w[2]*r1[0]) + T(t.w[3]*r1[1])
}

// scatter adds w·v to the tap's neighbours of p.
func (t *padTap[T]) scatter(p []T, pw int, v T) {
	r0 := p[t.base : t.base+2]
	r1 := p[t.base+pw : t.base+pw+2]
	r0[0] += t.w[0] * v
	r0[1] += t.w[1] * v
	r1[0] += t.w[2] * v
	r1[1] += t.w[3] * v
}

// padPlaneOf is plane (n, c) of the padded planes p (padImages).
func padPlaneOf[T float](g *deformGeom, p []T, n, c int) []T {
	pl := g.padLen()
	return p[(n*g.c+c)*pl : (n*g.c+c+1)*pl]
}

// colsRow is row (c, k, n) of the columns: its L output positions.
func colsRow[T float](g *deformGeom, cols []T, c, k, n int) []T {
	L := g.l()
	return cols[((c*g.k()+k)*g.n+n)*L : ((c*g.k()+k)*g.n+n+1)*L]
}

// contractRow adds col[l] · (taps[l] · x) to out[l], x a padded plane with
// rows of pw: one channel's share of C and O.
func contractRow[T float](ts []padTap[T], x []T, pw int, col, out []T) {
	col, out = col[:len(ts)], out[:len(ts)]
	for l := range ts {
		out[l] += col[l] * ts[l].dot(x, pw)
	}
}

// deformTaps computes, for every sample (n, offset group, k, l), the four
// neighbouring pixels and the weights ∂ᵃ_y ∂ᵇ_x of torchvision's bilinear
// interpolation for deformable convolution, each times mask[n, g, k, l]
// when mask is not nil: a sample with y <= -1, y >= H, x <= -1 or x >= W
// (or a non-finite offset) contributes nothing; a neighbour outside the
// image is a zero of the padded frame. With h = floor(y), the weights of
// (h, w), (h, w+1), (h+1, w), (h+1, w+1) are, with ly = y-h, lx = x-w:
//
//	(0,0): (1-ly)(1-lx), (1-ly)lx, ly(1-lx), ly·lx
//	(1,0): -(1-lx), -lx, 1-lx, lx          (∂/∂y)
//	(0,1): -(1-ly), 1-ly, -ly, ly          (∂/∂x)
//	(1,1): 1, -1, -1, 1
//
// At an integer y these are the right-sided derivatives, as torchvision's
// backward computes them. Neighbours outside the image are never read from
// the caller's data (torchvision does not read them either, which matters
// when the input holds NaN or Inf). Index: ((n·og + g)·K + k)·L + l, the
// mask layout.
func deformTaps[T float](g *deformGeom, a, b int, offset, mask []T) []padTap[T] {
	taps := make([]padTap[T], g.maskLen())
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
				if mask != nil {
					m := mask[(ng*K+k)*L : (ng*K+k+1)*L]
					for l := range row {
						for c := range row[l].w {
							row[l].w[c] *= m[l]
						}
					}
				}
			}
		}
	})
	return taps
}

// deformTap is one sample of deformTaps, without the mask.
func deformTap[T float](y, x T, h, w, a, b int) padTap[T] {
	// torchvision drops samples with y <= -1 (and so on), but its offset
	// gradient at exactly y = -1 is the right-sided derivative, which is not
	// zero. Admitting y = -1 gives both: there the value weights of the
	// neighbours inside are 0 and the derivative weights are the
	// right-sided ones. The test is false for NaN.
	if !(y >= -1 && y < T(h) && x >= -1 && x < T(w)) {
		return padTap[T]{base: (h + 2) * (w + 2)} // the tail: zeros
	}
	yl := int(math.Floor(float64(y)))
	xl := int(math.Floor(float64(x)))
	ly, lx := y-T(yl), x-T(xl)
	hy, hx := 1-ly, 1-lx
	t := padTap[T]{base: (yl+1)*(w+2) + xl + 1}
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
	return t
}

// deformSample is S_ab: cols[c, k, n, l] = Σ_neighbours weight ·
// input[n, c, neighbour], the weights already times the mask (deformTaps).
// With enough channels per offset group it reads the input channels-last
// (deformSampleLast), otherwise plane by plane (deformSamplePlanes); both
// compute every element with the same arithmetic in the same order.
func deformSample[T float](g *deformGeom, taps []padTap[T], input, cols []T) {
	if g.c/g.og >= sampleLastMinChannels {
		deformSampleLast(g, taps, padImagesLast(g, input), cols)
		return
	}
	deformSamplePlanes(g, taps, padImages(g, input), cols)
}

// sampleLastMinChannels is the number of channels per offset group from
// which deformSample reads channels-last.
const sampleLastMinChannels = 16

// deformSamplePlanes is deformSample on padded planes (padImages). Parallel
// over channels; a row of taps is used by every channel of the worker's
// range while it is in cache.
func deformSamplePlanes[T float](g *deformGeom, taps []padTap[T], input, cols []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	pw := g.padW()
	parallelFor(g.c, func(lo, hi int) {
		for n := 0; n < g.n; n++ {
			for k := 0; k < K; k++ {
				for c := lo; c < hi; c++ {
					tr := (n*g.og+c/cg)*K + k
					ts := taps[tr*L : (tr+1)*L]
					x := padPlaneOf(g, input, n, c)
					out := colsRow(g, cols, c, k, n)[:len(ts)]
					for l := range ts {
						out[l] = ts[l].dot(x, pw)
					}
				}
			}
		}
	})
}

// padImagesLast returns x [N, C, H, W] as padded channels-last images
// [N, padLen, C]: pixel (y, x) at position (y+1)·padW + x+1, the frame and
// the tail zero. A tap's neighbour p then holds the C channels at
// [p·C, (p+1)·C).
func padImagesLast[T float](g *deformGeom, x []T) []T {
	pl, pw, C, hw := g.padLen(), g.padW(), g.c, g.h*g.w
	p := make([]T, g.n*pl*C)
	parallelFor(g.n*g.h, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			n, y := t/g.h, t%g.h
			// Row y of every channel (C×W, row stride H·W) becomes W
			// positions of C channels.
			transpose2D(p[(n*pl+(y+1)*pw+1)*C:], C, x[n*C*hw+y*g.w:], hw, C, g.w, false)
		}
	})
	return p
}

// sampleBlock is the number of output positions deformSampleLast computes
// into one tile before copying it out.
const sampleBlock = 64

// deformSampleLast is deformSample on padded channels-last images
// (padImagesLast): for a block of output positions of one (n, offset
// group, k), each tap combines its four neighbours' channel rows into a
// tile [channels, positions], whose rows are copied into the channel rows
// of cols. Parallel over blocks.
func deformSampleLast[T float](g *deformGeom, taps []padTap[T], input, cols []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	pl, pw, C := g.padLen(), g.padW(), g.c
	blocks := (L + sampleBlock - 1) / sampleBlock
	parallelFor(g.n*g.og*K*blocks, func(lo, hi int) {
		tile := make([]T, cg*sampleBlock) // [channels, positions]
		for u := lo; u < hi; u++ {
			tr, bl := u/blocks, u%blocks
			k, n, grp := tr%K, tr/K/g.og, tr/K%g.og
			l0 := bl * sampleBlock
			ts := taps[tr*L+l0 : tr*L+min(l0+sampleBlock, L)]
			img := input[n*pl*C+grp*cg:]
			for i := range ts {
				t := &ts[i]
				o := t.base * C
				a := img[o : o+cg]
				b := img[o+C : o+C+cg]
				c := img[o+pw*C : o+pw*C+cg]
				d := img[o+(pw+1)*C : o+(pw+1)*C+cg]
				w0, w1, w2, w3 := t.w[0], t.w[1], t.w[2], t.w[3]
				out := tile[i:]
				for j := range a {
					out[j*sampleBlock] = T(w0*a[j]) + T(w1*b[j]) + T(w2*c[j]) + T(w3*d[j])
				}
			}
			// Channel grp·cg + j, positions l0... of cols: row stride K·N·L.
			for j := 0; j < cg; j++ {
				copy(colsRow(g, cols, grp*cg+j, k, n)[l0:], tile[j*sampleBlock:j*sampleBlock+len(ts)])
			}
		}
	})
}

// deformScatter is T_ab, the adjoint of S_ab in its input:
// dst[n, c, h, w] = Σ_{k,l} weight · cols[c, k, n, l], the weights already
// times the mask; dst is in padded planes, zero on entry. Parallel over
// channels; each plane's sum runs over k, l in order, so results are
// bitwise reproducible.
func deformScatter[T float](g *deformGeom, taps []padTap[T], cols, dst []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	pw := g.padW()
	parallelFor(g.c, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			grp := c / cg
			for n := 0; n < g.n; n++ {
				x := padPlaneOf(g, dst, n, c)
				for k := 0; k < K; k++ {
					tr := (n*g.og+grp)*K + k
					ts := taps[tr*L : (tr+1)*L]
					col := colsRow(g, cols, c, k, n)[:len(ts)]
					for l := range ts {
						ts[l].scatter(x, pw, col[l])
					}
				}
			}
		}
	})
}

// deformContract is C_ab: dst[n, g, k, l] = Σ_{c in group g} cols[c, k, n, l]
// · Σ_neighbours weight · input[n, c, neighbour], input in padded planes.
// Parallel over (n, g, k) rows, each summing channels in order.
func deformContract[T float](g *deformGeom, taps []padTap[T], input, cols, dst []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	pw := g.padW()
	parallelFor(g.n*g.og*K, func(lo, hi int) {
		for tr := lo; tr < hi; tr++ {
			k := tr % K
			n, grp := tr/K/g.og, tr/K%g.og
			ts := taps[tr*L : (tr+1)*L]
			out := dst[tr*L : (tr+1)*L]
			for c := grp * cg; c < (grp+1)*cg; c++ {
				contractRow(ts, padPlaneOf(g, input, n, c), pw, colsRow(g, cols, c, k, n), out)
			}
		}
	})
}

// deformOffsetGrad is O_ab: the y and x halves of dst (offset layout) get
// mask · C over tapsY (the weights of order (a+1, b)) and tapsX (order
// (a, b+1)); a nil tap table is a zero half. One pass reads each sample's
// pixels once for both halves. input is in padded planes. Parallel over
// (n, g, k) rows.
func deformOffsetGrad[T float](g *deformGeom, tapsY, tapsX []padTap[T], input, cols, mask, dst []T) {
	K, L, cg := g.k(), g.l(), g.c/g.og
	pw := g.padW()
	parallelFor(g.n*g.og*K, func(lo, hi int) {
		for tr := lo; tr < hi; tr++ {
			k := tr % K
			n, grp := tr/K/g.og, tr/K%g.og
			oy := dst[2*tr*L : (2*tr+1)*L]
			ox := dst[(2*tr+1)*L : (2*tr+2)*L]
			for c := grp * cg; c < (grp+1)*cg; c++ {
				x, col := padPlaneOf(g, input, n, c), colsRow(g, cols, c, k, n)
				if tapsY != nil {
					contractRow(tapsY[tr*L:(tr+1)*L], x, pw, col, oy)
				}
				if tapsX != nil {
					contractRow(tapsX[tr*L:(tr+1)*L], x, pw, col, ox)
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
