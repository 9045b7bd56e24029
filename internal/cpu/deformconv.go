package cpu

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/internal/par"
)

// DeformGeom fixes the shapes of a deformable convolution: input
// [N, C, H, W], kernel kh×kw, output Ho×Wo, og offset groups, groups
// convolution groups. Sampled columns are [groups, Cg·K, N·L] (K = kh·kw
// kernel positions, L = Ho·Wo output positions; element (c, k, n, l) at
// ((c·K + k)·N + n)·L + l), the layout the grouped matrix product reads.
// Offsets are [N, 2·og·K, Ho, Wo] with (dy, dx) interleaved per kernel
// position, masks [N, og·K, Ho, Wo], as in torchvision.
type DeformGeom struct {
	N, C, H, W int
	KH, KW     int
	SH, SW     int // stride
	PH, PW     int // padding
	DH, DW     int // dilation
	HO, WO     int
	OG         int // offset groups
	Groups     int
}

// K is the number of kernel positions, KH·KW.
func (g *DeformGeom) K() int { return g.KH * g.KW }

// L is the number of output positions, HO·WO.
func (g *DeformGeom) L() int { return g.HO * g.WO }

// MaskLen is the element count of the mask layout.
func (g *DeformGeom) MaskLen() int { return g.N * g.OG * g.K() * g.L() }

// The kernels read and write images through padded planes: each H×W plane
// of an [N, C, H, W] tensor sits inside a zero frame one pixel wide, (H+2)
// rows of W+2, followed by W+4 more zeros (the tail). Every sample's four
// neighbours, corners outside the image included, then lie in the padded
// plane, and a dropped sample points into the tail with zero weights; the
// inner loops need no branches, and pixels outside the image are never
// read from the caller's data (they are the frame's zeros).

// padW is the row length of a padded plane.
func (g *DeformGeom) padW() int { return g.W + 2 }

// tapRow is the sample n, offset group grp and kernel position k of row tr
// of the tap tables and of the masks, which are ordered (n, group, k).
func (g *DeformGeom) tapRow(tr int) (n, grp, k int) {
	return tr / g.K() / g.OG, tr / g.K() % g.OG, tr % g.K()
}

// padLen is the length of one padded plane, tail included.
func (g *DeformGeom) padLen() int { return (g.H+2)*g.padW() + g.W + 4 }

// padImages returns x ([N·C planes of H×W]) in padded planes.
func padImages[T Float](g *DeformGeom, x []T) []T {
	planes, plane, pl, pw := g.N*g.C, g.H*g.W, g.padLen(), g.padW()
	p := make([]T, planes*pl)
	par.ForWork(planes, planes*pl, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src, dst := x[i*plane:(i+1)*plane], p[i*pl:(i+1)*pl]
			for y := 0; y < g.H; y++ {
				copy(dst[(y+1)*pw+1:(y+1)*pw+1+g.W], src[y*g.W:(y+1)*g.W])
			}
		}
	})
	return p
}

// unpadImages copies the inside of every padded plane of p into x.
func unpadImages[T Float](g *DeformGeom, p, x []T) {
	planes, plane, pl, pw := g.N*g.C, g.H*g.W, g.padLen(), g.padW()
	par.ForWork(planes, planes*pl, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			src, dst := p[i*pl:(i+1)*pl], x[i*plane:(i+1)*plane]
			for y := 0; y < g.H; y++ {
				copy(dst[y*g.W:(y+1)*g.W], src[(y+1)*pw+1:(y+1)*pw+1+g.W])
			}
		}
	})
}

// padTap is one deformable-convolution sample on a padded plane: base is
// the padded index of its top-left neighbour, w the weights of the
// neighbours base, base+1, base+padW, base+padW+1.
type padTap[T Float] struct {
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
func padPlaneOf[T Float](g *DeformGeom, p []T, n, c int) []T {
	pl := g.padLen()
	return p[(n*g.C+c)*pl : (n*g.C+c+1)*pl]
}

// colsRow is row (c, k, n) of the columns: its L output positions.
func colsRow[T Float](g *DeformGeom, cols []T, c, k, n int) []T {
	L := g.L()
	return cols[((c*g.K()+k)*g.N+n)*L : ((c*g.K()+k)*g.N+n+1)*L]
}

// contractRow adds col[l] · (taps[l] · x) to out[l], x a padded plane with
// rows of pw: one channel's share of C and O.
func contractRow[T Float](ts []padTap[T], x []T, pw int, col, out []T) {
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
func deformTaps[T Float](g *DeformGeom, a, b int, offset, mask []T) []padTap[T] {
	taps := make([]padTap[T], g.MaskLen())
	K, L := g.K(), g.L()
	par.ForWork(g.N*g.OG, 8*len(taps), func(lo, hi int) {
		for ng := lo; ng < hi; ng++ {
			for k := 0; k < K; k++ {
				i, j := k/g.KW, k%g.KW
				oy := offset[(ng*K+k)*2*L:]
				ox := offset[((ng*K+k)*2+1)*L:]
				row := taps[(ng*K+k)*L : (ng*K+k+1)*L]
				for l := range row {
					ho, wo := l/g.WO, l%g.WO
					y := T(ho*g.SH-g.PH+i*g.DH) + oy[l]
					x := T(wo*g.SW-g.PW+j*g.DW) + ox[l]
					row[l] = deformTap(y, x, g.H, g.W, a, b)
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
func deformTap[T Float](y, x T, h, w, a, b int) padTap[T] {
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
func deformSample[T Float](g *DeformGeom, taps []padTap[T], input, cols []T) {
	if g.C/g.OG >= sampleLastMinChannels {
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
func deformSamplePlanes[T Float](g *DeformGeom, taps []padTap[T], input, cols []T) {
	K, L, cg := g.K(), g.L(), g.C/g.OG
	pw := g.padW()
	par.ForWork(g.C, 4*len(cols), func(lo, hi int) {
		for n := 0; n < g.N; n++ {
			for k := 0; k < K; k++ {
				for c := lo; c < hi; c++ {
					tr := (n*g.OG+c/cg)*K + k
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
func padImagesLast[T Float](g *DeformGeom, x []T) []T {
	pl, pw, C, hw := g.padLen(), g.padW(), g.C, g.H*g.W
	p := make([]T, g.N*pl*C)
	par.For(g.N*g.H, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			n, y := t/g.H, t%g.H
			// Row y of every channel (C×W, row stride H·W) becomes W
			// positions of C channels.
			transpose2D(p[(n*pl+(y+1)*pw+1)*C:], C, x[n*C*hw+y*g.W:], hw, C, g.W, false)
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
func deformSampleLast[T Float](g *DeformGeom, taps []padTap[T], input, cols []T) {
	K, L, cg := g.K(), g.L(), g.C/g.OG
	pl, pw, C := g.padLen(), g.padW(), g.C
	blocks := (L + sampleBlock - 1) / sampleBlock
	par.For(g.N*g.OG*K*blocks, func(lo, hi int) {
		tile := make([]T, cg*sampleBlock) // [channels, positions]
		for u := lo; u < hi; u++ {
			tr, bl := u/blocks, u%blocks
			n, grp, k := g.tapRow(tr)
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
func deformScatter[T Float](g *DeformGeom, taps []padTap[T], cols, dst []T) {
	K, L, cg := g.K(), g.L(), g.C/g.OG
	pw := g.padW()
	par.ForWork(g.C, 4*len(cols), func(lo, hi int) {
		for c := lo; c < hi; c++ {
			grp := c / cg
			for n := 0; n < g.N; n++ {
				x := padPlaneOf(g, dst, n, c)
				for k := 0; k < K; k++ {
					tr := (n*g.OG+grp)*K + k
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
func deformContract[T Float](g *DeformGeom, taps []padTap[T], input, cols, dst []T) {
	K, L, cg := g.K(), g.L(), g.C/g.OG
	pw := g.padW()
	par.ForWork(g.N*g.OG*K, 4*len(cols), func(lo, hi int) {
		for tr := lo; tr < hi; tr++ {
			n, grp, k := g.tapRow(tr)
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
func deformOffsetGrad[T Float](g *DeformGeom, tapsY, tapsX []padTap[T], input, cols, mask, dst []T) {
	K, L, cg := g.K(), g.L(), g.C/g.OG
	pw := g.padW()
	par.ForWork(g.N*g.OG*K, 4*len(cols), func(lo, hi int) {
		for tr := lo; tr < hi; tr++ {
			n, grp, k := g.tapRow(tr)
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

// OffsetEmbed writes src (mask layout) into the y (which = 0) or x (1) slots
// of dst (offset layout); OffsetSplit reads them back. Each is the other's
// transpose.
func OffsetEmbed[T Float](g *DeformGeom, which int, src, dst []T) {
	L := g.L()
	for r := 0; r < g.MaskLen()/max(L, 1); r++ {
		copy(dst[(2*r+which)*L:(2*r+which+1)*L], src[r*L:(r+1)*L])
	}
}

// OffsetSplit reads the y (which = 0) or x (1) slots of src (offset
// layout) into dst (mask layout): OffsetEmbed's transpose.
func OffsetSplit[T Float](g *DeformGeom, which int, src, dst []T) {
	L := g.L()
	for r := 0; r < g.MaskLen()/max(L, 1); r++ {
		copy(dst[r*L:(r+1)*L], src[(2*r+which)*L:(2*r+which+1)*L])
	}
}

// The four members of the deformable sampling family, each of derivative
// order (a, b) ∈ {0, 1}² in the sample coordinates (y, x), on row-major
// slices: input and dst images [N, C, H, W], cols [Groups, Cg·K, N·L],
// offset [N, 2·OG·K, Ho, Wo], mask and the result of C [N, OG·K, Ho, Wo].
// mask may be nil (a mask of ones). The output slice must be zero on entry
// and is written only through its own elements.

// DeformS is S_ab(X, offset, M): cols[c, k, n, l] = M[n, g, k, l] ·
// Σ_neighbours ∂ᵃ_y∂ᵇ_x w · input[n, c, neighbour] (im2col when a = b = 0).
func DeformS[T Float](g *DeformGeom, a, b int, input, offset, mask, cols []T) {
	deformSample(g, deformTaps(g, a, b, offset, mask), input, cols)
}

// DeformT is T_ab(G, offset, M), S_ab's adjoint in its input: dst [N, C,
// H, W] gets Σ_{k,l} M · ∂ᵃ_y∂ᵇ_x w · cols[c, k, n, l] at each neighbour.
func DeformT[T Float](g *DeformGeom, a, b int, cols, offset, mask, dst []T) {
	padded := make([]T, g.N*g.C*g.padLen())
	deformScatter(g, deformTaps(g, a, b, offset, mask), cols, padded)
	unpadImages(g, padded, dst)
}

// DeformC is C_ab(X, offset, G): dst[n, g, k, l] = Σ_{c in group g}
// cols[c, k, n, l] · Σ_neighbours ∂ᵃ_y∂ᵇ_x w · input[n, c, neighbour].
func DeformC[T Float](g *DeformGeom, a, b int, input, offset, cols, dst []T) {
	deformContract(g, deformTaps(g, a, b, offset, nil), padImages(g, input), cols, dst)
}

// DeformO is O_ab(X, offset, G, M), the offset gradient of S_ab: dst
// (offset layout) holds M ⊙ C_(a+1)b in its y slots and M ⊙ C_a(b+1) in its
// x slots; a member of order 2 in one coordinate is zero.
func DeformO[T Float](g *DeformGeom, a, b int, input, offset, cols, mask, dst []T) {
	var tapsY, tapsX []padTap[T]
	if a == 0 {
		tapsY = deformTaps(g, 1, b, offset, nil)
	}
	if b == 0 {
		tapsX = deformTaps(g, a, 1, offset, nil)
	}
	deformOffsetGrad(g, tapsY, tapsX, padImages(g, input), cols, mask, dst)
}

// Params describes the geometry for op hashes and printouts.
func (g *DeformGeom) Params() string {
	return fmt.Sprintf("input=(%d,%d,%d,%d), kernel=(%d,%d), stride=(%d,%d), padding=(%d,%d), dilation=(%d,%d), out=(%d,%d), offset_groups=%d, groups=%d",
		g.N, g.C, g.H, g.W, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.HO, g.WO, g.OG, g.Groups)
}
