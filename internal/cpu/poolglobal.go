package cpu

import "github.com/gops-dev/gops/internal/par"

// Average pooling with one output per plane (global average pooling,
// AdaptiveAvgPool2d(1)): the separable passes' sums without their
// per-row calls.

// oneWindow reports whether g has one output per plane.
func oneWindow(g *Pool2dGeom) bool { return g.Rows.Out() == 1 && g.Cols.Out() == 1 }

// avgPoolOne is AvgPool for one output per plane (Step 1), d its divisor:
// each input row's window sum from 0 in column order, those from 0 in
// row order, divided by d, as the two passes. On amd64 with AVX-512, 16
// planes (8 in float64) at a time, one a lane (avgOneVec), with AVX2 8
// (4); the rest four
// planes at a time, their four sums interleaved (independent chains, each
// in its order).
func avgPoolOne[T Float](g *Pool2dGeom, d T, x, out []T) {
	hw, w := g.H*g.W, g.W
	r0, r1 := g.Rows.First[0], max(g.Rows.End[0], g.Rows.First[0])
	c0, c1 := g.Cols.First[0], max(g.Cols.End[0], g.Cols.First[0])
	first := 0 // the first plane the Go loops do
	if lanes := avgOneLanes[T](hw); lanes > 0 && g.Planes >= lanes {
		groups := g.Planes / lanes
		par.ForWork(groups, groups*lanes*hw, func(lo, hi int) {
			avgOneVec(out[lo*lanes:], x[lo*lanes*hw:], hi-lo, hw, w, r0, r1, c0, c1, d)
		})
		first = groups * lanes
	}
	if first == g.Planes {
		return
	}
	x, out = x[first*hw:], out[first:]
	planes := g.Planes - first
	// mean is one plane's.
	mean := func(plane []T) T {
		var s T
		for r := r0; r < r1; r++ {
			var t T
			for _, v := range plane[r*w+c0 : r*w+c1] {
				t += v
			}
			s += t
		}
		return s / d
	}
	par.For((planes+3)/4, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			p := 4 * q
			if p+4 > planes {
				for ; p < planes; p++ {
					out[p] = mean(x[p*hw : (p+1)*hw])
				}
				continue
			}
			var s0, s1, s2, s3 T
			for r := r0; r < r1; r++ {
				a := x[p*hw+r*w+c0 : p*hw+r*w+c1]
				b := x[(p+1)*hw+r*w+c0:][:len(a)]
				c := x[(p+2)*hw+r*w+c0:][:len(a)]
				e := x[(p+3)*hw+r*w+c0:][:len(a)]
				var t0, t1, t2, t3 T
				for i, v := range a {
					t0 += v
					t1 += b[i]
					t2 += c[i]
					t3 += e[i]
				}
				s0 += t0
				s1 += t1
				s2 += t2
				s3 += t3
			}
			out[p], out[p+1], out[p+2], out[p+3] = s0/d, s1/d, s2/d, s3/d
		}
	})
}

// wholePlane reports whether g's one window is each plane whole.
func wholePlane(g *Pool2dGeom) bool {
	return oneWindow(g) && g.Rows.Step == 1 && g.Cols.Step == 1 &&
		g.Rows.First[0] == 0 && g.Rows.End[0] == g.H && g.Cols.First[0] == 0 && g.Cols.End[0] == g.W
}

// avgPoolTWhole is AvgPoolT where each plane is its one window, d the
// divisor: every dx of plane p gets 0 + (0 + gr[p])/d, the separable
// sums' one term (set: dx is +0 plus that, which is that).
func avgPoolTWhole[T Float](g *Pool2dGeom, d T, gr, dx []T, set bool) {
	hw := g.H * g.W
	par.For(g.Planes, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			v := 0 + (0+gr[p])/d
			plane := dx[p*hw : (p+1)*hw]
			if set {
				for i := range plane {
					plane[i] = v
				}
				continue
			}
			for i := range plane {
				plane[i] += v
			}
		}
	})
}
