package cpu

import "math"

// InterpAxis is 2-D interpolation along one axis: output position o reads
// input positions I0[o] and I1[o] with weights 1−L[o] and L[o] (nearest:
// I1 = I0, L = 0).
type InterpAxis struct {
	I0, I1 []int
	L      []float64
}

// NearestAxis is torch's "nearest" along an axis from in to out positions
// (its nearest_idx): the identity when out = in, else source ⌊o·scale⌋
// clamped to in−1, computed in float32 as torch does, with scale =
// 1/scaleFactor when a scale factor was given (> 0), else in/out.
func NearestAxis(in, out int, scaleFactor float64) InterpAxis {
	scale := float32(in) / float32(out)
	if scaleFactor > 0 {
		scale = float32(1 / scaleFactor)
	}
	a := InterpAxis{I0: make([]int, out), I1: make([]int, out), L: make([]float64, out)}
	for o := range a.I0 {
		src := o
		if out != in {
			src = min(int(math.Floor(float64(float32(o)*scale))), in-1)
		}
		a.I0[o], a.I1[o] = src, src
	}
	return a
}

// IdentityAxis is the identity along an axis of n positions (bilinear
// interpolation to the same size copies, as torch).
func IdentityAxis(n int) InterpAxis {
	a := InterpAxis{I0: make([]int, n), I1: make([]int, n), L: make([]float64, n)}
	for o := range a.I0 {
		a.I0[o], a.I1[o] = o, o
	}
	return a
}

// LinearAxis is torch's "bilinear" along an axis: with alignCorners,
// source o·(in−1)/(out−1) (0 when out = 1); otherwise (o + 0.5)·scale − 0.5
// clamped at 0, scale = 1/scaleFactor when given, else in/out. I0 is the
// source's floor, I1 the next position (I0 at the last), L the fraction.
func LinearAxis(in, out int, scaleFactor float64, alignCorners bool) InterpAxis {
	a := InterpAxis{I0: make([]int, out), I1: make([]int, out), L: make([]float64, out)}
	var scale float64
	switch {
	case alignCorners && out > 1:
		scale = float64(in-1) / float64(out-1)
	case alignCorners:
		scale = 0
	case scaleFactor > 0:
		scale = 1 / scaleFactor
	default:
		scale = float64(in) / float64(out)
	}
	for o := range a.I0 {
		var src float64
		if alignCorners {
			src = float64(o) * scale
		} else {
			src = max((float64(o)+0.5)*scale-0.5, 0)
		}
		i0 := min(int(src), in-1)
		a.I0[o], a.I1[o], a.L[o] = i0, min(i0+1, in-1), src-float64(i0)
	}
	return a
}

// InterpGeom is an interpolation of Planes planes of H×W into HO×WO;
// Nearest copies the I0 source instead of weighting four.
type InterpGeom struct {
	Planes, H, W int
	Rows, Cols   InterpAxis
	Nearest      bool
}

// Interp writes out[p, oh, ow] = Σ of the four (or one) weighted source
// values, rows outer: (1−ly)·((1−lx)·x00 + lx·x01) + ly·((1−lx)·x10 + lx·x11).
// Bilinear: each source row's horizontal interpolation (the inner
// brackets) is computed once per plane and kept while output rows use it
// (two rows at a time), and an output row is (1−ly)·top, then + ly·bot with
// a vector axpy: the same products and sum, rounded the same way.
func Interp[T Float](g *InterpGeom, x, out []T) {
	hw, ho, wo := g.H*g.W, len(g.Rows.I0), len(g.Cols.I0)
	ParallelFor(g.Planes, func(lo, hi int) {
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
				h[ow] = (1-lx)*row[c0] + lx*row[c1]
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
func InterpT[T Float](g *InterpGeom, gr, dx []T) {
	hw, ho, wo := g.H*g.W, len(g.Rows.I0), len(g.Cols.I0)
	ParallelFor(g.Planes, func(lo, hi int) {
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
					r0[c0] += (1 - lx) * top
					r0[c1] += lx * top
					r1[c0] += (1 - lx) * bot
					r1[c1] += lx * bot
				}
			}
		}
	})
}
