package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/vmath"
)

// GroupNorm's fused kernels (nn's GroupNormAffine, GroupNormStats and the
// gradients; the formulas are in nn/groupnorm.go): RowNorm's rows (a
// group: C/groups planes of cg.Inner, rg.N = that many elements) and
// ChannelAffine's channels in one pass, with the same arithmetic and bits
// as RowNorm, ChannelAffine and ChannelDot chained.

// GroupNormAffine sets y = RowNorm(x)·w[c] + b[c], x and y [Outer, C,
// Inner] seen as rg's rows, w and b [C], one row at a time, with the same
// arithmetic as RowNorm then ChannelAffine. Where the vector loops split
// every plane as they split the row (vmath.VectorWhole), each row takes
// three passes, two sums and NormAffine, none storing an intermediate;
// otherwise the unfused chain.
func GroupNormAffine[T Float](rg RowGeom, cg ChanGeom, y, x, w, b []T) {
	groupNormAffine(rg, cg, y, x, w, b, false)
}

// GroupNormAffineReLU is GroupNormAffine then ReLU (vmath.ReLU), each row
// made non-negative while it is in cache: bitwise the two passes.
func GroupNormAffineReLU[T Float](rg RowGeom, cg ChanGeom, y, x, w, b []T) {
	groupNormAffine(rg, cg, y, x, w, b, true)
}

// groupNormAffine is GroupNormAffine, with ReLU after each row if relu.
func groupNormAffine[T Float](rg RowGeom, cg ChanGeom, y, x, w, b []T, relu bool) {
	perRow := rg.N / cg.Inner // channels in a row
	fused := cg.Inner > 1 && vmath.VectorWhole[T](cg.Inner)
	eachRow(rg.Rows, rg.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			yr, xr := y[i*rg.N:][:rg.N], x[i*rg.N:][:rg.N]
			c0 := (i * perRow) % cg.C
			if fused {
				mu, r := rowMoments(xr, rg.Eps)
				for j := 0; j < perRow; j++ {
					at := j * cg.Inner
					vmath.NormAffine(yr[at:at+cg.Inner], xr[at:at+cg.Inner], mu, T(r), w[c0+j], b[c0+j])
				}
				if relu {
					vmath.ReLU(yr, yr)
				}
				continue
			}
			r := rowStats(yr, xr, rg.Eps)
			vmath.Axpb(yr, yr, T(r), 0)
			for j := 0; j < perRow; j++ {
				ci := c0 + j
				p := yr[j*cg.Inner:][:cg.Inner]
				if cg.Inner > 1 {
					vmath.Axpb(p, p, w[ci], b[ci]) // as ChannelAffine's planes
					continue
				}
				p[0] = p[0]*w[ci] + b[ci] // as its rows of C
			}
			if relu {
				vmath.ReLU(yr, yr)
			}
		}
	})
}

// GroupNormStatsSize is the length of GroupNormStats's result: two
// elements for each of the 2·Rows + 2·Outer·C slots.
func GroupNormStatsSize(rg RowGeom, cg ChanGeom) int { return 4 * (rg.Rows + cg.Outer*cg.C) }

// setStatSlot stores v in slot k of p: for float32 its bits, low word
// first, in p[2k] and p[2k+1] (moved, never computed on, so the bits
// stay); for float64 v and 0.
func setStatSlot[T Float](p []T, k int, v float64) {
	switch p := any(p).(type) {
	case []float32:
		b := math.Float64bits(v)
		p[2*k], p[2*k+1] = math.Float32frombits(uint32(b)), math.Float32frombits(uint32(b>>32))
	case []float64:
		p[2*k], p[2*k+1] = v, 0
	}
}

// StatSlot is the float64 in slot k of GroupNormStats's result p.
func StatSlot[T Float](p []T, k int) float64 {
	switch p := any(p).(type) {
	case []float32:
		return math.Float64frombits(uint64(math.Float32bits(p[2*k])) | uint64(math.Float32bits(p[2*k+1]))<<32)
	case []float64:
		return p[2*k]
	}
	return 0
}

// GroupNormStats sets dst (GroupNormStatsSize elements) to, for each row
// i, its (μ, r) as RowNorm computes them in slots 2i and 2i+1, then for
// each plane q its (Σu, Σu·y) in slots 2·Rows + 2q and 2·Rows + 2q + 1,
// each a float64 (StatSlot); u and x [Outer, C, Inner]. Row by row: the
// moments (two sums over the row), then one vmath.SumDotNorm per plane,
// the row in cache from the first.
func GroupNormStats[T Float](rg RowGeom, cg ChanGeom, dst, u, x []T) {
	perRow := rg.N / cg.Inner
	eachRow(rg.Rows, rg.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			mu, r := rowMoments(x[i*rg.N:][:rg.N], rg.Eps)
			setStatSlot(dst, 2*i, float64(mu))
			setStatSlot(dst, 2*i+1, r)
			for j := 0; j < perRow; j++ {
				at, q := i*rg.N+j*cg.Inner, i*perRow+j
				su, suy := vmath.SumDotNorm(u[at:at+cg.Inner], x[at:at+cg.Inner], mu, T(r))
				setStatSlot(dst, 2*rg.Rows+2*q, su)
				setStatSlot(dst, 2*rg.Rows+2*q+1, suy)
			}
		}
	})
}

// GroupNormStatsTotal sets dst [C] to, per channel, Σ over samples (in
// order, in float64) of the statistics' per-plane Σu (which 0: the
// gradient w.r.t. the bias) or Σu·y (which 1: w.r.t. the weight).
func GroupNormStatsTotal[T Float](rg RowGeom, cg ChanGeom, which int, dst, stats []T) {
	for ci := range cg.C {
		var acc float64
		for o := 0; o < cg.Outer; o++ {
			acc += StatSlot(stats, 2*rg.Rows+2*(o*cg.C+ci)+which)
		}
		dst[ci] = T(acc)
	}
}

// GroupNormGradXStats is GroupNormGradX with the row's (μ, r) and its
// planes' sums from stats (GroupNormStats of u and x): where
// vmath.VectorWhole allows, one vmath.NormGrad pass per row, the same
// arithmetic and bits as GroupNormGradX's (whose sums and moments the
// statistics hold exactly); otherwise GroupNormGradX.
func GroupNormGradXStats[T Float](rg RowGeom, cg ChanGeom, gr, x, u, w, stats []T) {
	if !vmath.VectorWhole[T](cg.Inner) {
		GroupNormGradX(rg, cg, gr, x, u, w)
		return
	}
	perRow, n := rg.N/cg.Inner, float64(rg.N)
	eachRow(rg.Rows, rg.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g, ur, xr := gr[i*rg.N:][:rg.N], u[i*rg.N:][:rg.N], x[i*rg.N:][:rg.N]
			c0 := (i * perRow) % cg.C
			mu, r := T(StatSlot(stats, 2*i)), StatSlot(stats, 2*i+1)
			var su, suy float64
			for j := 0; j < perRow; j++ {
				q := 2*rg.Rows + 2*(i*perRow+j)
				su += float64(w[c0+j]) * StatSlot(stats, q)
				suy += float64(w[c0+j]) * StatSlot(stats, q+1)
			}
			for j := 0; j < perRow; j++ {
				at := j * cg.Inner
				vmath.NormGrad(g[at:at+cg.Inner], ur[at:at+cg.Inner], xr[at:at+cg.Inner], mu, T(r),
					T(suy/n), T(su/n), T(-r), T(-r*float64(w[c0+j])))
			}
		}
	})
}

// GroupNormGradX sets gr to r·(uw − mean uw − y·mean(uw·y)) per row,
// uw = u·w[c] never stored: its means come from per-plane sums, and the
// row is −r·(y·mean(uw·y) + mean uw) + (r·w[c])·u, plane by plane; x, u
// and gr [Outer, C, Inner], w [C]. Where vmath.VectorWhole allows, a row
// takes four passes (two sums for the statistics, one for the per-plane
// sums, vmath.NormGrad) and y is never stored; otherwise the unfused
// chain, with the same arithmetic.
func GroupNormGradX[T Float](rg RowGeom, cg ChanGeom, gr, x, u, w []T) {
	perRow, n := rg.N/cg.Inner, float64(rg.N)
	fused := vmath.VectorWhole[T](cg.Inner)
	eachRow(rg.Rows, rg.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g, ur, xr := gr[i*rg.N:][:rg.N], u[i*rg.N:][:rg.N], x[i*rg.N:][:rg.N]
			c0 := (i * perRow) % cg.C
			var su, suy float64
			if fused {
				mu, r := rowMoments(xr, rg.Eps)
				for j := 0; j < perRow; j++ {
					at := j * cg.Inner
					s, sy := vmath.SumDotNorm(ur[at:at+cg.Inner], xr[at:at+cg.Inner], mu, T(r))
					su += float64(w[c0+j]) * s
					suy += float64(w[c0+j]) * sy
				}
				for j := 0; j < perRow; j++ {
					at := j * cg.Inner
					vmath.NormGrad(g[at:at+cg.Inner], ur[at:at+cg.Inner], xr[at:at+cg.Inner], mu, T(r),
						T(suy/n), T(su/n), T(-r), T(-r*float64(w[c0+j])))
				}
				continue
			}
			r := rowStats(g, xr, rg.Eps)
			vmath.Axpb(g, g, T(r), 0) // y
			for j := 0; j < perRow; j++ {
				up, yp := ur[j*cg.Inner:][:cg.Inner], g[j*cg.Inner:][:cg.Inner]
				su += float64(w[c0+j]) * vmath.Sum(up)
				suy += float64(w[c0+j]) * vmath.Dot(up, yp)
			}
			vmath.Axpb(g, g, T(suy/n), T(su/n)) // y·mean(uw·y) + mean uw
			for j := 0; j < perRow; j++ {
				p := g[j*cg.Inner:][:cg.Inner]
				vmath.Axpb(p, p, T(-r), 0)
				vmath.SubMul(p, p, ur[j*cg.Inner:][:cg.Inner], T(-r*float64(w[c0+j])))
			}
		}
	})
}

// GroupNormGradW sets dst [C] to Σ over samples (in order) of
// r·Σ u·(x − μ) for each channel's plane, (μ, r) as RowNorm computes
// them. Row by row (each row's planes read while it is in cache), the
// terms kept per sample and channel, then added in sample order.
func GroupNormGradW[T Float](rg RowGeom, cg ChanGeom, dst, u, x []T) {
	perRow := rg.N / cg.Inner
	terms := make([]float64, cg.Outer*cg.C) // [Outer, C]: r·Σ u·(x − μ)
	eachRow(rg.Rows, rg.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			mu, r := rowMoments(x[i*rg.N:][:rg.N], rg.Eps)
			for j := 0; j < perRow; j++ {
				at := i*rg.N + j*cg.Inner
				terms[i*perRow+j] = r * vmath.SubDot(u[at:at+cg.Inner], x[at:at+cg.Inner], mu)
			}
		}
	})
	for ci := range cg.C {
		var acc float64
		for o := 0; o < cg.Outer; o++ {
			acc += terms[o*cg.C+ci]
		}
		dst[ci] = T(acc)
	}
}
