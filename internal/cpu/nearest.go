package cpu

import "github.com/gops-dev/gops/internal/par"

// nearestFactor is s when the nearest axis a repeats each of its n input
// positions s times in order (I0[o] = ⌊o/s⌋, s·n outputs: an integer
// scale factor), else 0.
func nearestFactor(a *InterpAxis, n int) int {
	out := len(a.I0)
	if n == 0 || out%n != 0 {
		return 0
	}
	s := out / n
	for o, i := range a.I0 {
		if i != o/s {
			return 0
		}
	}
	return s
}

// nearestInverse is, for each of the n input positions i of a nearest
// axis (its sources never decrease), the outputs [lo[i], hi[i]) that read
// it.
func nearestInverse(a *InterpAxis, n int) (lo, hi []int) {
	lo, hi = make([]int, n), make([]int, n)
	o := 0
	for i := 0; i < n; i++ {
		lo[i] = o
		for o < len(a.I0) && a.I0[o] == i {
			o++
		}
		hi[i] = o
	}
	return lo, hi
}

// interpNearest is Interp's "nearest": out[p, oh, ow] = x[p, I0[oh],
// I0[ow]]. An output row reading the same source row as the one before
// is a copy of it; a row of an integer column scale s repeats each source
// value s times, any other reads through the index table; with s = 2, two
// rows reading one source row are written in one pass.
func interpNearest[T Float](g *InterpGeom, x, out []T) {
	hw, ho, wo := g.H*g.W, len(g.Rows.I0), len(g.Cols.I0)
	s := nearestFactor(&g.Cols, g.W)
	rows, cols := g.Rows.I0, g.Cols.I0
	nt := s == 2 && nearestStreams[T](len(out))
	par.For(g.Planes, func(lo, hi int) {
		if nt {
			defer nearestFence()
		}
		for p := lo; p < hi; p++ {
			plane := x[p*hw : (p+1)*hw]
			dst := out[p*ho*wo : (p+1)*ho*wo]
			for oh := 0; oh < ho; oh++ {
				r := rows[oh]
				d := dst[oh*wo : (oh+1)*wo]
				if oh > 0 && rows[oh-1] == r {
					copy(d, dst[(oh-1)*wo:oh*wo])
					continue
				}
				row := plane[r*g.W : (r+1)*g.W]
				if s == 2 && oh+1 < ho && rows[oh+1] == r {
					// a ×2 row pair: both rows in one pass
					if d1 := dst[(oh+1)*wo : (oh+2)*wo]; !nt || !repeat2NT(d, d1, row) {
						repeat2(d, d1, row)
					}
					oh++
					continue
				}
				if !nt || !repeat2NT(d, nil, row) {
					nearestRow(d, row, cols, s)
				}
			}
		}
	})
}

// nearestRow sets d[o] = row[idx[o]], where idx repeats each position s
// times (s > 0) or is any table (s = 0).
func nearestRow[T Float](d, row []T, idx []int, s int) {
	switch s {
	case 1:
		copy(d, row)
	case 2:
		repeat2(d, nil, row)
	case 0:
		idx = idx[:len(d)]
		for o, i := range idx {
			d[o] = row[i]
		}
	default:
		for i, v := range row {
			seg := d[i*s : (i+1)*s]
			for k := range seg {
				seg[k] = v
			}
		}
	}
}

// repeat2 sets d0[2i] = d0[2i+1] = row[i], and the same in d1 unless d1
// is nil (AVX2 blocks on amd64, then the Go loop and a copy for d1).
func repeat2[T Float](d0, d1, row []T) {
	d0 = d0[:2*len(row)]
	done := dup2(d0, d1, row)
	for i := done; i < len(row); i++ {
		v := row[i]
		d0[2*i], d0[2*i+1] = v, v
	}
	if d1 != nil {
		copy(d1[2*done:2*len(row)], d0[2*done:])
	}
}

// interpNearestT is InterpT's "nearest": each dx[p, r, c] gathers, in
// the scatter's order (by output row, then output column), the gr of
// the outputs reading it. An input row read by two output rows of an
// integer column scale 2 (a ×2 upsampling) sums its 2×2 blocks in one
// pass. With set, each plane of dx is cleared first.
func interpNearestT[T Float](g *InterpGeom, gr, dx []T, set bool) {
	wo := len(g.Cols.I0)
	if !ascending(g.Rows.I0) || !ascending(g.Cols.I0) {
		nearestScatter(g, gr, dx, set)
		return
	}
	s := nearestFactor(&g.Cols, g.W)
	rlo, rhi := nearestInverse(&g.Rows, g.H)
	clo, chi := nearestInverse(&g.Cols, g.W)
	transposePlanes(g, gr, dx, set, func(plane, src []T) {
		for r := 0; r < g.H; r++ {
			d := plane[r*g.W : (r+1)*g.W]
			oh := rlo[r]
			if s == 2 && rhi[r]-oh == 2 {
				nearestBlock2(d, src[oh*wo:(oh+1)*wo], src[(oh+1)*wo:(oh+2)*wo])
				continue
			}
			for ; oh < rhi[r]; oh++ {
				nearestRowT(d, src[oh*wo:(oh+1)*wo], clo, chi, s)
			}
		}
	})
}

// transposePlanes runs f(plane, src) on every plane of dx and of gr (the
// interpolation g's input and output planes), planes spread over
// goroutines, each plane of dx cleared first if set.
func transposePlanes[T Float](g *InterpGeom, gr, dx []T, set bool, f func(plane, src []T)) {
	hw, how := g.H*g.W, len(g.Rows.I0)*len(g.Cols.I0)
	par.For(g.Planes, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			plane := dx[p*hw : (p+1)*hw]
			if set {
				clear(plane)
			}
			f(plane, gr[p*how:(p+1)*how])
		}
	})
}

// ascending reports whether idx never decreases.
func ascending(idx []int) bool {
	for o := 1; o < len(idx); o++ {
		if idx[o] < idx[o-1] {
			return false
		}
	}
	return true
}

// nearestScatter is interpNearestT for any index tables: each gr added
// into its source, in output order (each plane of dx cleared first if
// set).
func nearestScatter[T Float](g *InterpGeom, gr, dx []T, set bool) {
	wo := len(g.Cols.I0)
	transposePlanes(g, gr, dx, set, func(plane, src []T) {
		for oh, r := range g.Rows.I0 {
			row := plane[r*g.W : (r+1)*g.W]
			for ow, v := range src[oh*wo : (oh+1)*wo] {
				row[g.Cols.I0[ow]] += v
			}
		}
	})
}

// nearestBlock2 adds into d[c] the 2×2 block a[2c], a[2c+1], b[2c],
// b[2c+1], in that order (AVX2 blocks on amd64, the same additions in
// vector lanes).
func nearestBlock2[T Float](d, a, b []T) {
	a, b = a[:2*len(d)], b[:2*len(d)]
	for c := blocks2(d, a, b); c < len(d); c++ {
		d[c] = d[c] + a[2*c] + a[2*c+1] + b[2*c] + b[2*c+1]
	}
}

// nearestRowT adds into d[c] the v[o] of the outputs [lo[c], hi[c]) that
// read c, in order; s is the axis' integer scale, or 0.
func nearestRowT[T Float](d, v []T, lo, hi []int, s int) {
	switch s {
	case 1:
		v = v[:len(d)]
		for c, x := range v {
			d[c] += x
		}
	case 2:
		v = v[:2*len(d)]
		for c := range d {
			d[c] = d[c] + v[2*c] + v[2*c+1]
		}
	default:
		lo, hi = lo[:len(d)], hi[:len(d)]
		for c := range d {
			acc := d[c]
			for _, x := range v[lo[c]:hi[c]] {
				acc += x
			}
			d[c] = acc
		}
	}
}
