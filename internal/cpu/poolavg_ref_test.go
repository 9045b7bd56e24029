package cpu

import "github.com/gops-dev/gops/internal/par"

// The kernels of average pooling and interpolation as they were before
// their fast paths: the references the fast paths must equal bitwise.

// of is the divisor of output (oh, ow).
func (d AvgDivisor) ofRef(g *Pool2dGeom, oh, ow int) float64 {
	switch {
	case d.Override != 0:
		return float64(d.Override)
	case d.IncludePad:
		return float64(g.Rows.Full[oh] * g.Cols.Full[ow])
	}
	return float64(g.Rows.Clip[oh] * g.Cols.Clip[ow])
}

// divisors is AvgDivisor.of for every output position, rounded to T.
func (d AvgDivisor) divisorsRef(g *Pool2dGeom) []float64 {
	ho, wo := g.Rows.Out(), g.Cols.Out()
	ds := make([]float64, ho*wo)
	for oh := 0; oh < ho; oh++ {
		for ow := 0; ow < wo; ow++ {
			ds[oh*wo+ow] = d.ofRef(g, oh, ow)
		}
	}
	return ds
}

// AvgPool writes out[p, o] = (Σ of the window of o in plane p) / divisor
// (0 for an empty window), separably: each input row's sum over each
// output column's window (from 0, in column order), then the sum of those
// over the output row's window (from 0, in row order).
func avgPoolRef[T Float](g *Pool2dGeom, div AvgDivisor, x, out []T) {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	rows, cols := &g.Rows, &g.Cols
	ds := div.divisorsRef(g)
	par.For(g.Planes, func(lo, hi int) {
		rowSum := make([]T, g.H*wo)
		for p := lo; p < hi; p++ {
			plane := x[p*hw : (p+1)*hw]
			for r := 0; r < g.H; r++ {
				row, rs := plane[r*w:(r+1)*w], rowSum[r*wo:(r+1)*wo]
				for ow := range rs {
					var s T
					for _, v := range windowRef(row, cols, ow) {
						s += v
					}
					rs[ow] = s
				}
			}
			for oh := 0; oh < ho; oh++ {
				dst := out[(p*ho+oh)*wo : (p*ho+oh+1)*wo]
				clear(dst)
				for r := rows.First[oh]; r < rows.End[oh]; r += rows.Step {
					for ow, v := range rowSum[r*wo : (r+1)*wo] {
						dst[ow] += v
					}
				}
				for ow, d := range ds[oh*wo : (oh+1)*wo] {
					if d != 0 {
						dst[ow] /= T(d)
					}
				}
			}
		}
	})
}

// window is the part of row that output position o's window along axis a
// reads, for an axis with Step 1 (average pooling has no dilation).
func windowRef[T any](row []T, a *PoolAxis, o int) []T {
	if a.First[o] >= a.End[o] {
		return nil
	}
	return row[a.First[o]:a.End[o]]
}

// AvgPoolT adds gr[p, o] / divisor into every input position of o's window
// (AvgPool's transpose), separably: v = gr / divisor summed (from 0, in
// output-row order) over the output rows whose window holds input row r,
// per output column; then those added into dx[r, c] in output-column
// order over the output columns whose window holds c.
func avgPoolTRef[T Float](g *Pool2dGeom, div AvgDivisor, gr, dx []T) {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	rows, cols := &g.Rows, &g.Cols
	ds := div.divisorsRef(g)
	par.For(g.Planes, func(lo, hi int) {
		colAcc := make([]T, g.H*wo)
		vrow := make([]T, wo)
		for p := lo; p < hi; p++ {
			clear(colAcc)
			src := gr[p*ho*wo : (p+1)*ho*wo]
			for oh := 0; oh < ho; oh++ {
				for ow, d := range ds[oh*wo : (oh+1)*wo] {
					v := src[oh*wo+ow]
					if d != 0 {
						v /= T(d)
					}
					vrow[ow] = v
				}
				for r := rows.First[oh]; r < rows.End[oh]; r += rows.Step {
					acc := colAcc[r*wo : (r+1)*wo]
					for ow, v := range vrow {
						acc[ow] += v
					}
				}
			}
			plane := dx[p*hw : (p+1)*hw]
			for r := 0; r < g.H; r++ {
				row, acc := plane[r*w:(r+1)*w], colAcc[r*wo:(r+1)*wo]
				for ow, v := range acc {
					seg := windowRef(row, cols, ow)
					for i := range seg {
						seg[i] += v
					}
				}
			}
		}
	})
}

// Interp writes out[p, oh, ow] = Σ of the four (or one) weighted source
// values, rows outer: (1−ly)·((1−lx)·x00 + lx·x01) + ly·((1−lx)·x10 + lx·x11).
// Bilinear: each source row's horizontal interpolation (the inner
// brackets) is computed once per plane and kept while output rows use it
// (two rows at a time), and an output row is (1−ly)·top, then + ly·bot with
// a vector axpy: the same products and sum, rounded the same way.
func interpRef[T Float](g *InterpGeom, x, out []T) {
	hw, ho, wo := g.H*g.W, len(g.Rows.I0), len(g.Cols.I0)
	par.For(g.Planes, func(lo, hi int) {
		var cache [2][]T // horizontal interpolations of two source rows
		var cached [2]int
		if !g.Nearest {
			cache = [2][]T{make([]T, wo), make([]T, wo)}
		}
		// horiz is source row r interpolated along the columns, from the
		// cache or into the slot of the earlier row (rows only advance).
		horiz := func(plane []T, r int) []T {
			if cached[0] == r {
				return cache[0]
			}
			if cached[1] == r {
				return cache[1]
			}
			i := 0
			if cached[1] < cached[0] {
				i = 1
			}
			row, h := plane[r*g.W:][:g.W], cache[i]
			for ow := range h {
				c0, c1, lx := g.Cols.I0[ow], g.Cols.I1[ow], T(g.Cols.L[ow])
				h[ow] = T((1-lx)*row[c0]) + T(lx*row[c1]) // T(): no fused multiply-add under GOAMD64=v3
			}
			cached[i] = r
			return h
		}
		for p := lo; p < hi; p++ {
			plane := x[p*hw : (p+1)*hw]
			dst := out[p*ho*wo : (p+1)*ho*wo]
			cached = [2]int{-1, -1}
			for oh := 0; oh < ho; oh++ {
				d := dst[oh*wo : (oh+1)*wo]
				if g.Nearest {
					r0 := plane[g.Rows.I0[oh]*g.W:][:g.W]
					for ow := range d {
						d[ow] = r0[g.Cols.I0[ow]]
					}
					continue
				}
				ly := T(g.Rows.L[oh])
				top := horiz(plane, g.Rows.I0[oh])
				for ow, v := range top {
					d[ow] = (1 - ly) * v
				}
				bot := horiz(plane, g.Rows.I1[oh])
				axpy(ly, bot, d)
			}
		}
	})
}

// InterpT adds each gr[p, oh, ow] into its source positions with the same
// weights (Interp's transpose), in output order within each plane.
func interpTRef[T Float](g *InterpGeom, gr, dx []T) {
	hw, ho, wo := g.H*g.W, len(g.Rows.I0), len(g.Cols.I0)
	par.For(g.Planes, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			plane := dx[p*hw : (p+1)*hw]
			src := gr[p*ho*wo : (p+1)*ho*wo]
			for oh := 0; oh < ho; oh++ {
				r0, r1 := plane[g.Rows.I0[oh]*g.W:][:g.W], plane[g.Rows.I1[oh]*g.W:][:g.W]
				ly := T(g.Rows.L[oh])
				if g.Nearest {
					for ow := 0; ow < wo; ow++ {
						r0[g.Cols.I0[ow]] += src[oh*wo+ow]
					}
					continue
				}
				for ow := 0; ow < wo; ow++ {
					c0, c1, lx := g.Cols.I0[ow], g.Cols.I1[ow], T(g.Cols.L[ow])
					v := src[oh*wo+ow]
					top, bot := (1-ly)*v, ly*v
					r0[c0] += T((1 - lx) * top)
					r0[c1] += T(lx * top)
					r1[c0] += T((1 - lx) * bot)
					r1[c1] += T(lx * bot)
				}
			}
		}
	})
}
