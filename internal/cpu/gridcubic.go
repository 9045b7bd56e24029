package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/par"
)

// GridSample's "bicubic" mode (torch's cubic convolution, A = −0.75): the
// output of pixel p is Σ_(i,k) cy_i(ty)·cx_k(tx)·X[iy + i − 1, ix + k − 1]
// over the 4×4 taps around x = unnormalize(gx) (no padding of x itself:
// ix = ⌊x⌋, tx = x − ix), each tap's integer coordinate mapped by the
// padding (zeros: outside reads 0; border: clipped; reflection: reflected
// then clipped), as torch's kernel. The tap positions are piecewise
// constant in the grid, so member (a, b) (orders up to 3 per coordinate;
// the cubic coefficients' fourth derivative is zero) weights the same taps
// by the derivatives c^(a)(tx)·s^a, c^(b)(ty)·s^b, s the unnormalize
// scale. The cell at an integer is the one floor() selects (right-sided).

// cubicA is torch's cubic convolution constant.
const cubicA = -0.75

// cubicCoefs are the four tap coefficients of order d (0–3) at t ∈ [0, 1):
// order 0 in torch's arithmetic (get_cubic_coefficients), higher orders
// the derivatives of the same polynomials.
func cubicCoefs[T Float](t T, d int) [4]T {
	A := T(cubicA)
	u, v, w := t+1, 1-t, 2-t
	switch d {
	case 0:
		return [4]T{
			((A*u-5*A)*u+8*A)*u - 4*A,
			((A+2)*t-(A+3))*t*t + 1,
			((A+2)*v-(A+3))*v*v + 1,
			((A*w-5*A)*w+8*A)*w - 4*A,
		}
	case 1:
		return [4]T{
			(3*A*u-10*A)*u + 8*A,
			(3*(A+2)*t - 2*(A+3)) * t,
			-(3*(A+2)*v - 2*(A+3)) * v,
			-((3*A*w-10*A)*w + 8*A),
		}
	case 2:
		return [4]T{6*A*u - 10*A, 6*(A+2)*t - 2*(A+3), 6*(A+2)*v - 2*(A+3), 6*A*w - 10*A}
	case 3:
		return [4]T{6 * A, 6 * (A + 2), -6 * (A + 2), -6 * A}
	}
	return [4]T{}
}

// cubicTap is one output pixel's 16 taps: plane indices (−1: outside,
// reads 0) row-major over (i, k), the column factors wx and the row
// factors wy (times the mask).
type cubicTap[T Float] struct {
	i      [16]int32
	wx, wy [4]T
}

// tapIndex maps the integer tap coordinate c of an axis of size n by the
// padding: its index, or −1 outside ("zeros").
func (a *gridAxis[T]) tapIndex(c float64, n int) int32 {
	switch a.pad {
	case GridZeros:
		if c >= 0 && c < float64(n) {
			return int32(c)
		}
		return -1
	case GridReflection:
		if a.empty {
			return 0
		}
		low, span := float64(a.low), float64(a.twiceSpan)
		in := math.Abs(c - low)
		extra := in - math.Trunc(in/span)*span
		if r := span - extra; extra > r {
			extra = r
		}
		c = extra + low
	}
	return int32(min(max(c, 0), float64(n-1)))
}

// cubicTaps are member (a, b)'s taps for every output pixel, times mask
// (its rows' factors) when not nil.
func cubicTaps[T Float](g *GridSampleGeom, a, b int, grid, mask []T) []cubicTap[T] {
	return cubicTapsFor(g, grid, func(j int, tx, ty, sx, sy T) ([4]T, [4]T) {
		wx, wy := cubicCoefs(tx, a), cubicCoefs(ty, b)
		for e := 0; e < a; e++ {
			for k := range wx {
				wx[k] *= sx
			}
		}
		for e := 0; e < b; e++ {
			for k := range wy {
				wy[k] *= sy
			}
		}
		if mask != nil {
			for k := range wy {
				wy[k] *= mask[j]
			}
		}
		return wx, wy
	})
}

// cubicTapsFor computes every pixel's tap positions and the factors
// weights(j, tx, ty, sx, sy) gives (sx, sy the unnormalize scales). A
// pixel with a non-finite coordinate, or whose taps all lie outside under
// "zeros", samples nothing (all indices −1).
func cubicTapsFor[T Float](g *GridSampleGeom, grid []T, weights func(j int, tx, ty, sx, sy T) ([4]T, [4]T)) []cubicTap[T] {
	taps := make([]cubicTap[T], g.N*g.HO*g.WO)
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			t := &taps[j]
			for k := range t.i {
				t.i[k] = -1
			}
			x, y := T(grid[2*j]+1)*ax.scale, T(grid[2*j+1]+1)*ay.scale
			if !ax.aligned {
				x -= 0.5
			}
			if !ay.aligned {
				y -= 0.5
			}
			fx, fy := math.Floor(float64(x)), math.Floor(float64(y))
			if math.IsInf(fx, 0) || math.IsInf(fy, 0) || fx != fx || fy != fy {
				continue
			}
			if g.Padding == GridZeros && (fx+2 < 0 || fx-1 >= float64(g.W) || fy+2 < 0 || fy-1 >= float64(g.H)) {
				continue
			}
			var cols [4]int32
			for k := range cols {
				cols[k] = ax.tapIndex(fx+float64(k)-1, g.W)
			}
			for i := 0; i < 4; i++ {
				row := ay.tapIndex(fy+float64(i)-1, g.H)
				for k := range cols {
					if row >= 0 && cols[k] >= 0 {
						t.i[4*i+k] = row*int32(g.W) + cols[k]
					}
				}
			}
			t.wx, t.wy = weights(j, x-T(fx), y-T(fy), ax.scale, ay.scale)
		}
	})
	return taps
}

// value is Σ_i wy_i·(Σ_k wx_k·plane[tap]) in torch's order (rows of
// columns).
func (t *cubicTap[T]) value(plane []T) T {
	var v T
	for i := 0; i < 4; i++ {
		var r T
		for k := 0; k < 4; k++ {
			if q := t.i[4*i+k]; q >= 0 {
				r += t.wx[k] * plane[q]
			}
		}
		v += t.wy[i] * r
	}
	return v
}

// cubicS is GridSampleS (or S2, taps given) for bicubic.
func cubicS[T Float](g *GridSampleGeom, taps []cubicTap[T], x, out []T) {
	hw, p := g.H*g.W, g.HO*g.WO
	par.For(g.N*g.C, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, o, tp := x[nc*hw:(nc+1)*hw], out[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			for j := range o {
				o[j] = tp[j].value(plane)
			}
		}
	})
}

// cubicT is cubicS's transpose: gr scattered onto dst (zero on entry),
// each plane by one worker, pixels in order.
func cubicT[T Float](g *GridSampleGeom, taps []cubicTap[T], gr, dst []T) {
	hw, p := g.H*g.W, g.HO*g.WO
	par.For(g.N*g.C, func(lo, hi int) {
		for nc := lo; nc < hi; nc++ {
			plane, src, tp := dst[nc*hw:(nc+1)*hw], gr[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			for j, v := range src {
				t := &tp[j]
				for i := 0; i < 4; i++ {
					r := t.wy[i] * v
					for k := 0; k < 4; k++ {
						if q := t.i[4*i+k]; q >= 0 {
							plane[q] += t.wx[k] * r
						}
					}
				}
			}
		}
	})
}

// cubicC adds Σ_c gr ⊙ (taps applied to x) into out [N, HO, WO] (half
// which of an interleaved [N, HO, WO, 2] when stride is 2, offset which),
// each pixel summing channels in order.
func cubicC[T Float](g *GridSampleGeom, taps []cubicTap[T], x, gr, out []T, stride, which int) {
	hw, p := g.H*g.W, g.HO*g.WO
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			n, jj := j/p, j%p
			var acc T
			for c := 0; c < g.C; c++ {
				nc := n*g.C + c
				acc += gr[nc*p+jj] * taps[j].value(x[nc*hw:(nc+1)*hw])
			}
			out[stride*j+which] += acc
		}
	})
}

// cubicGrid runs member kind of order (a, b) for bicubic (the
// GridSample* functions' dispatch).
func cubicGrid[T Float](g *GridSampleGeom, kind string, a, b int, in [4][]T, out []T) {
	switch kind {
	case "S":
		cubicS(g, cubicTaps(g, a, b, in[1], in[2]), in[0], out)
	case "S2":
		cubicS(g, cubicTaps(g, a+1, b, in[1], in[2]), in[0], out)
		tmp := make([]T, len(out))
		cubicS(g, cubicTaps(g, a, b+1, in[1], in[3]), in[0], tmp)
		for i, v := range tmp {
			out[i] += v
		}
	case "T":
		cubicT(g, cubicTaps(g, a, b, in[1], in[2]), in[0], out)
	case "T2":
		cubicT(g, cubicTaps(g, a+1, b, in[1], in[2]), in[0], out)
		cubicT(g, cubicTaps(g, a, b+1, in[1], in[3]), in[0], out)
	case "C":
		cubicC(g, cubicTaps(g, a, b, in[1], nil), in[0], in[2], out, 1, 0)
	case "O":
		mo := g.MaxOrder()
		if a+1 <= mo && b <= mo {
			cubicC(g, cubicTaps(g, a+1, b, in[1], nil), in[0], in[2], out, 2, 0)
		}
		if a <= mo && b+1 <= mo {
			cubicC(g, cubicTaps(g, a, b+1, in[1], nil), in[0], in[2], out, 2, 1)
		}
		if mask := in[3]; mask != nil {
			for j, m := range mask {
				out[2*j] *= m
				out[2*j+1] *= m
			}
		}
	}
}
