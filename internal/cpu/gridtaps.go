package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/par"
)

// GridSample's taps for a whole batch: one per output pixel, for the
// kernels that apply, transpose or contract them.

// gridTaps are the taps of member (a, b) for every output pixel, times
// mask [N·HO·WO] when not nil, in a scratch buffer (give it back with
// tapScratch[T]().Put).
func gridTaps[T Float](g *GridSampleGeom, a, b int, grid, mask []T) []gridTap[T] {
	taps := tapScratch[T]().Get(g.N * g.HO * g.WO)
	if !g.Nearest && g.Padding == GridZeros {
		gridTapsZeros(g, a, b, grid, mask, taps)
		return taps
	}
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			pt := newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
			var m T
			if mask != nil {
				m = mask[j]
			}
			t := &taps[j]
			pt.tap(t, g.Nearest, a, b, m, mask != nil)
			if !pt.ok && !g.Nearest {
				t.i = g.zeroCell()
			}
		}
	})
	return taps
}

// gridTapsZeros is gridTaps for bilinear "zeros" padding (the default),
// newGridPoint and tap written out in one loop: the same operations in
// the same order, so the same taps, bitwise, at a fraction of the cost
// of the calls.
func gridTapsZeros[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T]) {
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	sx, sy, aligned := ax.scale, ay.scale, g.AlignCorners
	W, H, wp, zero := float64(g.W), float64(g.H), g.W+2, g.zeroCell()
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			t := &taps[j]
			x, y := T(grid[2*j]+1)*sx, T(grid[2*j+1]+1)*sy
			if !aligned {
				x -= 0.5
				y -= 0.5
			}
			// A NaN coordinate fails the test as well (source's ok).
			fx, fy := math.Floor(float64(x)), math.Floor(float64(y))
			if !(fx >= -1 && fx < W && fy >= -1 && fy < H) {
				*t = gridTap[T]{i: zero}
				continue
			}
			lx, ly := x-T(fx), y-T(fy)
			x0, x1 := 1-lx, lx
			if a == 1 {
				x0, x1 = -sx, sx
			}
			y0, y1 := 1-ly, ly
			if b == 1 {
				y0, y1 = -sy, sy
			}
			t.i, t.ok = int32((int(fy)+1)*wp+int(fx)+1), true
			if mask != nil {
				m := mask[j]
				t.w[0], t.w[1], t.w[2], t.w[3] = y0*x0*m, y0*x1*m, y1*x0*m, y1*x1*m
				continue
			}
			t.w[0], t.w[1], t.w[2], t.w[3] = y0*x0, y0*x1, y1*x0, y1*x1
		}
	})
}

// gridSoA is taps laid out as arrays, the corner indices and each
// corner's weights, for the gather kernel (gridSampleSoA32); each image's
// full blocks of 8 indices are stored in the order 0 1 4 5 2 3 6 7.
type gridSoA[T Float] struct {
	ix []int32
	w  [4][]T
}

func newGridSoA[T Float](taps []gridTap[T], p int) *gridSoA[T] {
	n := len(taps)
	s := &gridSoA[T]{ix: intKeep.A.Get(n)}
	ws := floatScratch[T]().Get(4 * n)
	for k := range s.w {
		s.w[k] = ws[k*n : (k+1)*n]
	}
	par.For(n/max(p, 1), func(lo, hi int) {
		for j := lo * p; j < hi*p; j++ {
			s.ix[j] = taps[j].i
			for k := range s.w {
				s.w[k][j] = taps[j].w[k]
			}
		}
		// The gather kernel reads each image's full blocks of 8 indices in
		// the order 0 1 4 5 2 3 6 7 (gridGatherS).
		for im := lo * p; im < hi*p; im += p {
			for b := im; b+8 <= im+p; b += 8 {
				ix := s.ix[b : b+8]
				ix[2], ix[3], ix[4], ix[5] = taps[b+4].i, taps[b+5].i, taps[b+2].i, taps[b+3].i
			}
		}
	})
	return s
}

// release gives the arrays back to their keepers.
func (s *gridSoA[T]) release() {
	intKeep.A.Put(s.ix)
	floatScratch[T]().Put(s.w[0][:4*len(s.ix)])
}

// part is the taps [lo, hi).
func (s *gridSoA[T]) part(lo, hi int) gridSoA[T] {
	return gridSoA[T]{ix: s.ix[lo:hi], w: [4][]T{s.w[0][lo:hi], s.w[1][lo:hi], s.w[2][lo:hi], s.w[3][lo:hi]}}
}

// gridTaps2 are the taps of member (a+1, b) times m1 plus those of
// member (a, b+1) times m2 (bilinear), in the kept buffer.
func gridTaps2[T Float](g *GridSampleGeom, a, b int, grid, m1, m2 []T) []gridTap[T] {
	taps := tapScratch[T]().Get(g.N * g.HO * g.WO)
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	par.For(g.N*g.HO, func(lo, hi int) {
		var u gridTap[T]
		for j := lo * g.WO; j < hi*g.WO; j++ {
			pt := newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
			t := &taps[j]
			pt.tap(t, false, a+1, b, m1[j], true)
			pt.tap(&u, false, a, b+1, m2[j], true)
			for k := range t.w {
				t.w[k] += u.w[k]
			}
			if !pt.ok {
				t.i = g.zeroCell()
			}
		}
	})
	return taps
}
