package cpu

import "github.com/gops-dev/gops/internal/par"

// AvgDivisor says how AvgPool divides each window's sum: by Override if
// not 0, else by the window's size with padding (IncludePad) or inside
// the input.
type AvgDivisor struct {
	IncludePad bool
	Override   int
}

// of is the divisor of output (oh, ow).
func (d AvgDivisor) of(g *Pool2dGeom, oh, ow int) float64 {
	switch {
	case d.Override != 0:
		return float64(d.Override)
	case d.IncludePad:
		return float64(g.Rows.Full[oh] * g.Cols.Full[ow])
	}
	return float64(g.Rows.Clip[oh] * g.Cols.Clip[ow])
}

// divisors is AvgDivisor.of for every output position rounded to T, 1
// where it is 0 (an empty window, whose sum 0 is not divided): dividing
// by 1 is exact, so every output divides.
func divisors[T Float](d AvgDivisor, g *Pool2dGeom) []T {
	ho, wo := g.Rows.Out(), g.Cols.Out()
	ds := make([]T, ho*wo)
	for oh := 0; oh < ho; oh++ {
		for ow := 0; ow < wo; ow++ {
			v := d.of(g, oh, ow)
			if v == 0 {
				v = 1
			}
			ds[oh*wo+ow] = T(v)
		}
	}
	return ds
}

// poolRun is the run of an axis' output positions [Lo, Hi) whose windows
// all hold K input positions, the window of Lo+i starting at First +
// i·Stride (the interior, away from the padding): their sums need no
// table.
type poolRun struct {
	Lo, Hi, First, K, Stride int
}

// interiorRun is the longest such run of a (Step 1) beginning at its
// first window of the largest size.
func interiorRun(a *PoolAxis) poolRun {
	out, k := a.Out(), 0
	for o := 0; o < out; o++ {
		k = max(k, a.End[o]-a.First[o])
	}
	r := poolRun{K: k}
	if k == 0 {
		return r
	}
	for r.Lo = 0; a.End[r.Lo]-a.First[r.Lo] != k; r.Lo++ {
	}
	r.First, r.Hi = a.First[r.Lo], r.Lo+1
	if r.Hi < out && a.End[r.Hi]-a.First[r.Hi] == k && a.First[r.Hi] > r.First {
		r.Stride = a.First[r.Hi] - r.First
		for r.Hi < out && a.End[r.Hi]-a.First[r.Hi] == k && a.First[r.Hi]-a.First[r.Hi-1] == r.Stride {
			r.Hi++
		}
	}
	return r
}

// monotone reports whether a's windows (Step 1) start and end in
// non-decreasing order, so the windows holding an input position are
// consecutive output positions (see inverse).
func monotone(a *PoolAxis) bool {
	if a.Step != 1 {
		return false
	}
	for o := 1; o < a.Out(); o++ {
		if a.First[o] < a.First[o-1] || a.End[o] < a.End[o-1] {
			return false
		}
	}
	return true
}

// inverse is, for each of the n input positions i of a monotone axis,
// the output positions [lo[i], hi[i]) whose windows hold it.
func inverse(a *PoolAxis, n int) (lo, hi []int) {
	lo, hi = make([]int, n), make([]int, n)
	o0, o1 := 0, 0
	for i := 0; i < n; i++ {
		for o0 < a.Out() && a.End[o0] <= i {
			o0++
		}
		o1 = max(o1, o0)
		for o1 < a.Out() && a.First[o1] <= i {
			o1++
		}
		lo[i], hi[i] = o0, max(o0, o1)
	}
	return lo, hi
}

// AvgPool writes out[p, o] = (Σ of the window of o in plane p) / divisor
// (0 for an empty window), separably: each input row's sum over each
// output column's window (from 0, in column order), then the sum of those
// over the output row's window (from 0, in row order). Interior windows
// are summed without tables, on amd64 with AVX2 for float32 (stride 2),
// vectorised across output columns: each output's additions stay in the
// order above. Windows of 2 columns at stride 2 over rows whose windows
// share no input row (a 2×2 pooling) are summed in one pass per output
// row, the same additions (faster than the two AVX2 passes); one output
// per plane (global pooling) sums four planes at a time.
func AvgPool[T Float](g *Pool2dGeom, div AvgDivisor, x, out []T) {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	rows, cols := &g.Rows, &g.Cols
	ds := divisors[T](div, g)
	if oneWindow(g) {
		avgPoolOne(g, ds[0], x, out)
		return
	}
	run := interiorRun(cols)
	if run.K == 2 && run.Stride == 2 && monotone(rows) && disjoint(inverse(rows, g.H)) {
		avgPoolPairs(g, ds, run, x, out)
		return
	}
	par.For(g.Planes, func(lo, hi int) {
		rowSum := make([]T, g.H*wo)
		for p := lo; p < hi; p++ {
			plane := x[p*hw : (p+1)*hw]
			for r := 0; r < g.H; r++ {
				windowSums(plane[r*w:(r+1)*w], cols, run, rowSum[r*wo:(r+1)*wo])
			}
			for oh := 0; oh < ho; oh++ {
				dst := out[(p*ho+oh)*wo : (p*ho+oh+1)*wo]
				n := 0
				if r0, r1 := rows.First[oh], rows.End[oh]; r0 < r1 {
					n = (r1 - r0 + rows.Step - 1) / rows.Step
					sumRows(dst, rowSum[r0*wo:], n, rows.Step*wo, ds[oh*wo:(oh+1)*wo])
				} else {
					sumRows(dst, rowSum, 0, 0, ds[oh*wo:(oh+1)*wo])
				}
			}
		}
	})
}

// avgPoolPairs is AvgPool for rows whose windows share no input row
// (ds the divisors, run the columns' interior, windows of 2 at stride
// 2): an output row over two input rows sums them in one pass, (0 + (0
// + a + b) + (0 + c + d)) / divisor, the two passes' additions in their
// order; any other output row takes the two passes.
func avgPoolPairs[T Float](g *Pool2dGeom, ds []T, run poolRun, x, out []T) {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	rows, cols := &g.Rows, &g.Cols
	par.For(g.Planes, func(lo, hi int) {
		var rowSum []T // the window sums of one output row's input rows
		for p := lo; p < hi; p++ {
			plane := x[p*hw : (p+1)*hw]
			for oh := 0; oh < ho; oh++ {
				dst := out[(p*ho+oh)*wo : (p*ho+oh+1)*wo]
				div := ds[oh*wo : (oh+1)*wo]
				r0, n := rows.First[oh], max(rows.End[oh]-rows.First[oh], 0)
				if n != 2 {
					if cap(rowSum) < n*wo {
						rowSum = make([]T, n*wo)
					}
					rowSum = rowSum[:n*wo]
					for i := 0; i < n; i++ {
						windowSums(plane[(r0+i)*w:(r0+i+1)*w], cols, run, rowSum[i*wo:(i+1)*wo])
					}
					sumRows(dst, rowSum, n, wo, div)
					continue
				}
				a, b := plane[r0*w:(r0+1)*w], plane[(r0+1)*w:(r0+2)*w]
				for o := 0; o < run.Lo; o++ {
					dst[o] = (0 + windowSum(a, cols, o) + windowSum(b, cols, o)) / div[o]
				}
				ia, ib := a[run.First:][:2*(run.Hi-run.Lo)], b[run.First:][:2*(run.Hi-run.Lo)]
				d, dv := dst[run.Lo:run.Hi], div[run.Lo:run.Hi]
				for i := pairs2(d, ia, ib, dv); i < len(d); i++ {
					d[i] = (0 + (0 + ia[2*i] + ia[2*i+1]) + (0 + ib[2*i] + ib[2*i+1])) / dv[i]
				}
				for o := run.Hi; o < wo; o++ {
					dst[o] = (0 + windowSum(a, cols, o) + windowSum(b, cols, o)) / div[o]
				}
			}
		}
	})
}

// windowSums sets sums[o] to the sum of row over output position o's
// window along cols (from 0, in column order), run being cols' interior.
func windowSums[T Float](row []T, cols *PoolAxis, run poolRun, sums []T) {
	for o := 0; o < run.Lo; o++ {
		sums[o] = windowSum(row, cols, o)
	}
	if run.Hi > run.Lo {
		in := row[run.First:]
		dst := sums[run.Lo:run.Hi]
		i := 0
		if run.Stride == 2 {
			i = windowSums2(dst, in, run.K)
		}
		for ; i < len(dst); i++ {
			var s T
			for _, v := range in[i*run.Stride:][:run.K] {
				s += v
			}
			dst[i] = s
		}
	}
	for o := max(run.Hi, run.Lo); o < len(sums); o++ {
		sums[o] = windowSum(row, cols, o)
	}
}

// windowSum is the sum of row over output position o's window along a
// (from 0, in order; 0 for an empty window).
func windowSum[T Float](row []T, a *PoolAxis, o int) T {
	var s T
	for _, v := range window(row, a, o) {
		s += v
	}
	return s
}

// sumRows sets dst[i] = (0 + src[i] + src[stride+i] + ... over n rows) /
// div[i], the additions and the division rounded in that order (AVX2 for
// float32 on amd64); div nil divides by nothing.
func sumRows[T Float](dst, src []T, n, stride int, div []T) {
	i := sumRows32(dst, src, n, stride, div)
	for ; i < len(dst); i++ {
		var s T
		for r := 0; r < n; r++ {
			s += src[r*stride+i]
		}
		if div != nil {
			s /= div[i]
		}
		dst[i] = s
	}
}

// window is the part of row that output position o's window along axis a
// reads, for an axis with Step 1 (average pooling has no dilation).
func window[T any](row []T, a *PoolAxis, o int) []T {
	if a.First[o] >= a.End[o] {
		return nil
	}
	return row[a.First[o]:a.End[o]]
}

// AvgPoolT adds gr[p, o] / divisor into every input position of o's window
// (AvgPool's transpose), separably: v = gr / divisor summed (from 0, in
// output-row order) over the output rows whose window holds input row r,
// per output column; then those added into dx[r, c] in output-column
// order over the output columns whose window holds c. With windows in
// increasing order (all but dilated ones) the outputs holding an input
// position are consecutive, and each sum is gathered there in that order;
// otherwise the sums are scattered in output order. Windows that share
// no input position (stride ≥ kernel: each input position receives at
// most one output's v) are added directly, the same sums.
func AvgPoolT[T Float](g *Pool2dGeom, div AvgDivisor, gr, dx []T) {
	avgPoolT(g, div, gr, dx, false)
}

// AvgPoolTSet is AvgPoolT into zeros: it sets every element of dx (to
// the +0 AvgPoolT would start from, plus the same sums in the same
// order) rather than adding into it.
func AvgPoolTSet[T Float](g *Pool2dGeom, div AvgDivisor, gr, dx []T) {
	avgPoolT(g, div, gr, dx, true)
}

// avgPoolT is AvgPoolT, each plane of dx cleared first if set.
func avgPoolT[T Float](g *Pool2dGeom, div AvgDivisor, gr, dx []T, set bool) {
	if wholePlane(g) {
		avgPoolTWhole(g, divisors[T](div, g)[0], gr, dx, set)
		return
	}
	if !monotone(&g.Rows) || !monotone(&g.Cols) {
		avgPoolTScatter(g, div, gr, dx, set)
		return
	}
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	ds := divisors[T](div, g)
	rlo, rhi := inverse(&g.Rows, g.H)
	clo, chi := inverse(&g.Cols, g.W)
	if disjoint(rlo, rhi) && disjoint(clo, chi) {
		avgPoolTDisjoint(g, ds, rlo, rhi, clo, chi, gr, dx, set)
		return
	}
	run := newScatterRun(&g.Cols, clo, chi)
	par.For(g.Planes, func(lo, hi int) {
		v := make([]T, ho*wo)
		colAcc := make([]T, wo)
		for p := lo; p < hi; p++ {
			src := gr[p*ho*wo : (p+1)*ho*wo]
			for oh := 0; oh < ho; oh++ {
				sumRows(v[oh*wo:(oh+1)*wo], src[oh*wo:], 1, 0, ds[oh*wo:(oh+1)*wo])
			}
			plane := dx[p*hw : (p+1)*hw]
			if set {
				clear(plane)
			}
			for r := 0; r < g.H; r++ {
				sumRows(colAcc, v[rlo[r]*wo:], rhi[r]-rlo[r], wo, nil)
				windowScatter(plane[r*w:(r+1)*w], colAcc, clo, chi, run)
			}
		}
	})
}

// scatterRun is the interior of a transposed stride-2 axis: the input
// positions c = First + 2m + q (q 0 or 1), m in [0, M), that receive from
// exactly the outputs Lo+m−J[q], ..., Lo+m (run's outputs Lo+i starting at
// First + 2i, K long). Count is M, 0 when the axis has no such run.
type scatterRun struct {
	First, Lo, Count int
	J                [2]int
}

// newScatterRun finds the longest scatterRun of a monotone axis with the
// inverse lo, hi.
func newScatterRun(a *PoolAxis, lo, hi []int) scatterRun {
	pr := interiorRun(a)
	s := scatterRun{First: pr.First, Lo: pr.Lo}
	if pr.Stride != 2 || pr.K < 2 {
		return s
	}
	s.J = [2]int{(pr.K - 1) / 2, (pr.K - 2) / 2}
	ok := func(m int) bool {
		for q := 0; q < 2; q++ {
			c := s.First + 2*m + q
			if c >= len(lo) || lo[c] != s.Lo+m-s.J[q] || hi[c] != s.Lo+m+1 {
				return false
			}
		}
		return true
	}
	// The run starts at the first m whose receivers all lie inside.
	m0 := 0
	for m0 < pr.Hi-pr.Lo && !ok(m0) {
		m0++
	}
	m1 := m0
	for m1 < pr.Hi-pr.Lo && ok(m1) {
		m1++
	}
	s.First, s.Lo, s.Count = s.First+2*m0, s.Lo+m0, m1-m0
	return s
}

// windowScatter adds into row[c] the sums acc[o] of the output positions
// o in [lo[c], hi[c]) (those whose windows hold c), in order; run is the
// axis' stride-2 interior (AVX2 for float32 on amd64).
func windowScatter[T Float](row, acc []T, lo, hi []int, run scatterRun) {
	c0, c1 := 0, 0
	if run.Count > 0 {
		c0 = run.First
		m := windowScatter2(row[c0:], acc, run)
		c1 = c0 + 2*m
	}
	for c := 0; c < c0; c++ {
		s := row[c]
		for _, v := range acc[lo[c]:hi[c]] {
			s += v
		}
		row[c] = s
	}
	for c := c1; c < len(row); c++ {
		s := row[c]
		for _, v := range acc[lo[c]:hi[c]] {
			s += v
		}
		row[c] = s
	}
}

// avgPoolTScatter is AvgPoolT for any axes: each output's v scattered
// into the rows of its window, then each row's sums into the columns of
// their windows, in output order.
func avgPoolTScatter[T Float](g *Pool2dGeom, div AvgDivisor, gr, dx []T, set bool) {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	rows, cols := &g.Rows, &g.Cols
	ds := divisors[T](div, g)
	par.For(g.Planes, func(lo, hi int) {
		colAcc := make([]T, g.H*wo)
		vrow := make([]T, wo)
		for p := lo; p < hi; p++ {
			clear(colAcc)
			src := gr[p*ho*wo : (p+1)*ho*wo]
			for oh := 0; oh < ho; oh++ {
				for ow, d := range ds[oh*wo : (oh+1)*wo] {
					vrow[ow] = src[oh*wo+ow] / d
				}
				for r := rows.First[oh]; r < rows.End[oh]; r += rows.Step {
					acc := colAcc[r*wo : (r+1)*wo]
					for ow, v := range vrow {
						acc[ow] += v
					}
				}
			}
			plane := dx[p*hw : (p+1)*hw]
			if set {
				clear(plane)
			}
			for r := 0; r < g.H; r++ {
				row, acc := plane[r*w:(r+1)*w], colAcc[r*wo:(r+1)*wo]
				for ow, v := range acc {
					seg := window(row, cols, ow)
					for i := range seg {
						seg[i] += v
					}
				}
			}
		}
	})
}

// disjoint reports whether no input position lies in two windows, given
// the inverse lo, hi of a monotone axis.
func disjoint(lo, hi []int) bool {
	for i := range lo {
		if hi[i]-lo[i] > 1 {
			return false
		}
	}
	return true
}

// avgPoolTDisjoint is avgPoolT for disjoint windows (ds the divisors,
// rlo, rhi, clo, chi the axes' inverses): dx[r, c] + (0 + v) for the one
// output whose window holds (r, c), v = (0 + gr)/divisor, as the
// separable sums of one term round; dx[r, c] + 0 where only the column
// lies in a window (the row sum of no rows); dx[r, c] where the column
// lies in none.
func avgPoolTDisjoint[T Float](g *Pool2dGeom, ds []T, rlo, rhi, clo, chi []int, gr, dx []T, set bool) {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), g.Cols.Out(), g.W
	cols := &g.Cols
	run := interiorRun(cols)
	if run.Stride != run.K {
		run.Hi = run.Lo // not a tiling of the columns: no interior run
	}
	par.For(g.Planes, func(lo, hi int) {
		v := make([]T, wo)
		for p := lo; p < hi; p++ {
			src := gr[p*ho*wo : (p+1)*ho*wo]
			plane := dx[p*hw : (p+1)*hw]
			if set {
				clear(plane)
			}
			last := -1 // the output row whose v is in v
			for r := 0; r < g.H; r++ {
				d := plane[r*w : (r+1)*w]
				if rlo[r] == rhi[r] {
					for c := range d {
						if clo[c] < chi[c] {
							d[c] += 0
						}
					}
					continue
				}
				if oh := rlo[r]; oh != last {
					sumRows(v, src[oh*wo:], 1, 0, ds[oh*wo:(oh+1)*wo])
					last = oh
				}
				disjointScatter(d, v, cols, run)
			}
		}
	})
}

// disjointScatter adds 0 + v[o] into each position of row in output o's
// window along cols (disjoint windows); run is cols' interior tiling (K
// = Stride), if any.
func disjointScatter[T Float](row, v []T, cols *PoolAxis, run poolRun) {
	for o := 0; o < run.Lo; o++ {
		addWindow(row, cols, o, v[o])
	}
	if run.Hi > run.Lo {
		in := v[run.Lo:run.Hi]
		seg := row[run.First:][:len(in)*run.K]
		if run.K == 2 {
			for i := spread2(seg, in); i < len(in); i++ {
				x := 0 + in[i]
				seg[2*i] += x
				seg[2*i+1] += x
			}
		} else {
			for i, x := range in {
				x = 0 + x
				for c := i * run.K; c < (i+1)*run.K; c++ {
					seg[c] += x
				}
			}
		}
	}
	for o := max(run.Hi, run.Lo); o < len(v); o++ {
		addWindow(row, cols, o, v[o])
	}
}

// addWindow adds 0 + x into each position of row in output o's window
// along a.
func addWindow[T Float](row []T, a *PoolAxis, o int, x T) {
	x = 0 + x
	seg := window(row, a, o)
	for i := range seg {
		seg[i] += x
	}
}
