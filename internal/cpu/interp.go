package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/par"
)

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

// interpWeights is a bilinear axis' weights rounded to T: w0[o] = 1 − L[o]
// (computed in T, as torch) and w1[o] = L[o].
func interpWeights[T Float](a *InterpAxis) (w0, w1 []T) {
	w0, w1 = make([]T, len(a.L)), make([]T, len(a.L))
	for o, l := range a.L {
		w1[o] = T(l)
		w0[o] = 1 - w1[o]
	}
	return w0, w1
}

// interpPairs is a run of a bilinear axis that repeats with period 2 (a
// ×2 scale away from the borders): the outputs Lo+2m and Lo+2m+1, m in
// [0, Count), read the inputs First+m and First+m+1, with the weights of
// Lo and Lo+1. Count is 0 when the axis has none.
type interpPairs struct {
	Lo, First, Count int
}

// findPairs is a's longest interpPairs starting at output 0, 1 or 2.
func findPairs(a *InterpAxis) interpPairs {
	var best interpPairs
	n := len(a.I0)
	for lo := 0; lo < 3 && lo+1 < n; lo++ {
		p := interpPairs{Lo: lo, First: a.I0[lo]}
		for {
			o := lo + 2*p.Count
			if o+1 >= n {
				break
			}
			i := p.First + p.Count
			if a.I0[o] != i || a.I0[o+1] != i || a.I1[o] != i+1 || a.I1[o+1] != i+1 ||
				a.L[o] != a.L[lo] || a.L[o+1] != a.L[lo+1] {
				break
			}
			p.Count++
		}
		if p.Count > best.Count {
			best = p
		}
	}
	return best
}

// Interp writes out[p, oh, ow] = Σ of the four (or one) weighted source
// values, rows outer: (1−ly)·((1−lx)·x00 + lx·x01) + ly·((1−lx)·x10 + lx·x11).
// Bilinear: each source row's horizontal interpolation (the inner
// brackets) is computed once per plane and kept while output rows use it
// (two rows at a time), and an output row is (1−ly)·top + ly·bot, a
// vector operation: the same products and sums, rounded the same way (a
// ×2 run of columns and the rows with AVX2 for float32 on amd64).
// Nearest copies: a row repeated is copied whole, an integer column scale
// repeats each source value.
func Interp[T Float](g *InterpGeom, x, out []T) {
	if g.Nearest {
		interpNearest(g, x, out)
		return
	}
	hw, ho, wo := g.H*g.W, len(g.Rows.I0), len(g.Cols.I0)
	w0, w1 := interpWeights[T](&g.Cols)
	pairs := findPairs(&g.Cols)
	par.For(g.Planes, func(lo, hi int) {
		cache := [2][]T{make([]T, wo), make([]T, wo)} // horizontal interpolations of two source rows
		var cached [2]int
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
			interpRow(h, row, &g.Cols, w0, w1, pairs)
			cached[i] = r
			return h
		}
		for p := lo; p < hi; p++ {
			plane := x[p*hw : (p+1)*hw]
			dst := out[p*ho*wo : (p+1)*ho*wo]
			cached = [2]int{-1, -1}
			for oh := 0; oh < ho; oh++ {
				d := dst[oh*wo : (oh+1)*wo]
				ly := T(g.Rows.L[oh])
				top := horiz(plane, g.Rows.I0[oh])
				bot := horiz(plane, g.Rows.I1[oh])
				top, bot = top[:len(d)], bot[:len(d)]
				for i := lerpRows(d, top, bot, 1-ly, ly); i < len(d); i++ {
					d[i] = T((1-ly)*top[i]) + T(ly*bot[i])
				}
			}
		}
	})
}

// interpRow sets h[o] = w0[o]·row[I0[o]] + w1[o]·row[I1[o]] along the
// axis a, whose ×2 run is pairs.
func interpRow[T Float](h, row []T, a *InterpAxis, w0, w1 []T, pairs interpPairs) {
	o0, o1 := 0, 0
	if pairs.Count > 0 {
		lo := pairs.Lo
		o0, o1 = lo, lo+2*pairs.Count
		w0a, w1a, w0b, w1b := w0[lo], w1[lo], w0[lo+1], w1[lo+1]
		dst, src := h[o0:o1], row[pairs.First:][:pairs.Count+1]
		for m := interp2x(dst, src, w0a, w1a, w0b, w1b); m < pairs.Count; m++ {
			a, b := src[m], src[m+1]
			dst[2*m] = T(w0a*a) + T(w1a*b)
			dst[2*m+1] = T(w0b*a) + T(w1b*b)
		}
	}
	i0, i1 := a.I0[:len(h)], a.I1[:len(h)]
	w0, w1 = w0[:len(h)], w1[:len(h)]
	for o := 0; o < o0; o++ {
		h[o] = T(w0[o]*row[i0[o]]) + T(w1[o]*row[i1[o]])
	}
	for o := o1; o < len(h); o++ {
		h[o] = T(w0[o]*row[i0[o]]) + T(w1[o]*row[i1[o]])
	}
}

// interpShare is one output's share of an input position along an axis:
// the output o and the weight w of its corner there.
type interpShare[T Float] struct {
	o int
	w T
}

// interpShares lists, for each of the n input positions of a bilinear
// axis, its shares in the order InterpT adds them: by output, then
// corner 0 before corner 1. off[i]:off[i+1] are input i's.
func interpShares[T Float](a *InterpAxis, n int, w0, w1 []T) (off []int, sh []interpShare[T]) {
	off = make([]int, n+1)
	for o := range a.I0 {
		off[a.I0[o]+1]++
		off[a.I1[o]+1]++
	}
	for i := 0; i < n; i++ {
		off[i+1] += off[i]
	}
	sh = make([]interpShare[T], off[n])
	next := append([]int(nil), off[:n]...)
	for o := range a.I0 {
		sh[next[a.I0[o]]] = interpShare[T]{o, w0[o]}
		next[a.I0[o]]++
		sh[next[a.I1[o]]] = interpShare[T]{o, w1[o]}
		next[a.I1[o]]++
	}
	return off, sh
}

// pairsScatter is the part of a ×2 run of columns whose inputs receive
// exactly the four shares of the pairs m−1 and m, input First+m for m
// in [M0, M1): corner 1 of outputs Lo+2m−2, Lo+2m−1, then corner 0 of
// Lo+2m, Lo+2m+1.
type pairsScatter struct {
	interpPairs
	M0, M1 int
}

// findPairsScatter is the pairsScatter of pairs, with the shares off, sh.
func findPairsScatter[T Float](pairs interpPairs, off []int, sh []interpShare[T]) pairsScatter {
	ps := pairsScatter{interpPairs: pairs}
	ok := func(m int) bool {
		i := pairs.First + m
		if i+1 >= len(off) || off[i+1]-off[i] != 4 {
			return false
		}
		s, o := sh[off[i]:off[i+1]], pairs.Lo+2*m
		return s[0].o == o-2 && s[1].o == o-1 && s[2].o == o && s[3].o == o+1
	}
	m := 1
	for m < pairs.Count && !ok(m) {
		m++
	}
	ps.M0, ps.M1 = m, m
	for ps.M1 < pairs.Count && ok(ps.M1) {
		ps.M1++
	}
	return ps
}

// InterpT adds each gr[p, oh, ow] into its source positions with the same
// weights (Interp's transpose), in output order within each plane: the
// order of the scatter of each output row's four shares. Bilinear, each
// input position gathers instead: its shares of the output rows that
// read its row, in order, and of each of those its shares along the
// columns, in order (a ×2 run of columns with AVX2 for float32 on
// amd64), the scatter's additions in the scatter's order. An output row
// reading one source row twice keeps the scatter, whose order then
// interleaves its two shares. Nearest, each input position gathers the
// outputs reading it in the scatter's order (a ×2 upsampling's 2×2 blocks
// in one pass).
func InterpT[T Float](g *InterpGeom, gr, dx []T) { interpT(g, gr, dx, false) }

// InterpTSet is InterpT into zeros: it sets every element of dx (to the +0
// InterpT would start from, plus the same sums in the same order) rather
// than adding into it.
func InterpTSet[T Float](g *InterpGeom, gr, dx []T) { interpT(g, gr, dx, true) }

// interpT is InterpT, each plane of dx cleared first if set.
func interpT[T Float](g *InterpGeom, gr, dx []T, set bool) {
	if g.Nearest {
		interpNearestT(g, gr, dx, set)
		return
	}
	wo := len(g.Cols.I0)
	w0, w1 := interpWeights[T](&g.Cols)
	cols := newShareTable(&g.Cols, g.W, w0, w1)
	ps := findPairsScatter(findPairs(&g.Cols), cols.off, cols.sh)
	y0, y1 := interpWeights[T](&g.Rows)
	rows := newShareTable(&g.Rows, g.H, y0, y1)
	wy := make([]T, len(rows.sh))
	for i, e := range rows.sh {
		wy[i] = e.w
	}
	// consecutive[r]: input row r's shares are of distinct consecutive
	// output rows, gathered in one pass.
	consecutive := make([]bool, g.H)
	for r := range consecutive {
		s := rows.of(r)
		consecutive[r] = true
		for i := 1; i < len(s); i++ {
			if s[i].o != s[i-1].o+1 {
				consecutive[r] = false
			}
		}
	}
	transposePlanes(g, gr, dx, set, func(plane, src []T) {
		for r := 0; r < g.H; r++ {
			s, ws := rows.of(r), wy[rows.off[r]:rows.off[r+1]]
			if len(s) == 0 {
				continue
			}
			row := plane[r*g.W : (r+1)*g.W]
			if consecutive[r] {
				gatherShares(row, src[s[0].o*wo:], len(s), wo, ws, &cols, ps)
				continue
			}
			for i := 0; i < len(s); i++ {
				oh := s[i].o
				v := src[oh*wo : (oh+1)*wo]
				if i+1 == len(s) || s[i+1].o != oh {
					gatherShares(row, v, 1, wo, ws[i:], &cols, ps)
					continue
				}
				// oh reads row r twice (I0 = I1): the scatter
				top, bot := ws[i], ws[i+1]
				for ow, x := range v {
					c0, c1 := g.Cols.I0[ow], g.Cols.I1[ow]
					t, b := top*x, bot*x
					row[c0] += T(w0[ow] * t)
					row[c1] += T(w1[ow] * t)
					row[c0] += T(w0[ow] * b)
					row[c1] += T(w1[ow] * b)
				}
				i++
			}
		}
	})
}

// shareTable lists, for each input position of a bilinear axis, its
// shares in the order the scatter adds them: by output, then corner 0
// before corner 1; sh[off[i]:off[i+1]] are input i's.
type shareTable[T Float] struct {
	off []int
	sh  []interpShare[T]
}

// newShareTable is the shareTable of a's n input positions with the
// weights w0, w1 of its corners.
func newShareTable[T Float](a *InterpAxis, n int, w0, w1 []T) shareTable[T] {
	off, sh := interpShares(a, n, w0, w1)
	return shareTable[T]{off, sh}
}

// of is input i's shares.
func (t *shareTable[T]) of(i int) []interpShare[T] { return t.sh[t.off[i]:t.off[i+1]] }

// gatherShares adds into each row[c] its shares w·(wy[j]·v[j·wo + o]) of
// the n output rows v[j·wo:], j < n (row-major, then in the order of the
// column shares), ps being the columns' ×2 run.
func gatherShares[T Float](row, v []T, n, wo int, wy []T, cols *shareTable[T], ps pairsScatter) {
	wy = wy[:n]
	c0, c1 := 0, 0
	if ps.M1 > ps.M0 {
		c0, c1 = ps.First+ps.M0, ps.First+ps.M1
		s := cols.of(c0)[:4]
		w1a, w1b, w0a, w0b := s[0].w, s[1].w, s[2].w, s[3].w
		base := ps.Lo + 2*(ps.M0-1)
		dst := row[c0:c1]
		for m := interpT2x(dst, v[base:], n, wo, wy, w1a, w1b, w0a, w0b); m < len(dst); m++ {
			acc := dst[m]
			for j, y := range wy {
				q := v[j*wo+base+2*m:][:4]
				acc = acc + T(w1a*T(y*q[0])) + T(w1b*T(y*q[1])) + T(w0a*T(y*q[2])) + T(w0b*T(y*q[3]))
			}
			dst[m] = acc
		}
	}
	if nb := c0 + len(row) - c1; nb <= 8 {
		// A few columns around a ×2 run: output row by output row, the
		// columns' independent sums interleaved.
		var cs [8]int
		var acc [8]T
		for b := range nb {
			cs[b] = b
			if b >= c0 {
				cs[b] = c1 + b - c0
			}
			acc[b] = row[cs[b]]
		}
		for j, y := range wy {
			vj := v[j*wo : (j+1)*wo]
			for b, c := range cs[:nb] {
				a := acc[b]
				for _, e := range cols.of(c) {
					a += T(e.w * T(y*vj[e.o]))
				}
				acc[b] = a
			}
		}
		for b, c := range cs[:nb] {
			row[c] = acc[b]
		}
		return
	}
	for c := 0; c < len(row); c++ {
		if c == c0 {
			if c = c1; c == len(row) {
				break
			}
		}
		acc := row[c]
		sh := cols.of(c)
		for j, y := range wy {
			vj := v[j*wo : (j+1)*wo]
			for _, e := range sh {
				acc += T(e.w * T(y*vj[e.o]))
			}
		}
		row[c] = acc
	}
}
