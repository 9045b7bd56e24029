package cpu

import (
	"math"
	"runtime"

	"github.com/gops-dev/gops/internal/par"
)

// GridSample's contractions C_ab and O_ab (gridsample.go): the sums over
// channels that give the derivatives w.r.t. the grid.

// GridSampleC computes C_ab(x, grid, gr) = Σ_c gr ⊙ K_ab(x), [N, HO, WO].
// Parallel over blocks of pixels, each summing channels in order.
func GridSampleC[T Float](g *GridSampleGeom, a, b int, x, grid, gr, out []T) {
	if g.Bicubic {
		cubicGrid(g, "C", a, b, [4][]T{x, grid, gr}, out)
		return
	}
	taps := gridTaps(g, a, b, grid, nil)
	defer tapScratch[T]().Put(taps)
	p := g.HO * g.WO
	gridContract(g, x, gr, func(n, j0, j1, c0, c1 int, planes []T, ps, wp int, grs []T) {
		o, tp := out[n*p:], taps[n*p:]
		for j := j0; j < j1; j++ {
			t := &tp[j]
			if g.Nearest && !t.ok {
				continue
			}
			var acc T
			for c := c0; c < c1; c++ {
				plane := planes[c*ps : (c+1)*ps]
				if g.Nearest {
					acc += grs[c*p+j] * (t.w[0] * plane[t.i])
				} else {
					acc += grs[c*p+j] * t.value(plane, wp)
				}
			}
			o[j] += acc
		}
	})
}

// GridSampleO computes O_ab(x, grid, gr, mask) = (mask ⊙ C_(a+1)b,
// mask ⊙ C_a(b+1)) interleaved into out [N, HO, WO, 2] (x first, as the
// grid); a half whose member is of order above MaxOrder is zero; mask may
// be nil (1). For a = b = 0 and no mask it is the gradient of
// <gr, grid_sample(x, grid)> w.r.t. the grid, summed as torch's: per
// channel ((ne − nw)·s + (se − sw)·n)·g in x, ((sw − nw)·e + (se − ne)·w)·g
// in y (s, n, e, w the weights of the other coordinate at its order),
// times the chain factors kx^(a+1)·ky^b (resp. kx^a·ky^(b+1)) and mask
// once the channels are summed. Parallel over blocks of pixels.
func GridSampleO[T Float](g *GridSampleGeom, a, b int, x, grid, gr, mask, out []T) {
	if g.Bicubic {
		cubicGrid(g, "O", a, b, [4][]T{x, grid, gr, mask}, out)
		return
	}
	mo := g.MaxOrder()
	hasX, hasY := a+1 <= mo && b <= mo, a <= mo && b+1 <= mo
	if !hasX && !hasY {
		return
	}
	// Per pixel: its corner and the other coordinate's factors (fx for
	// the y half, fy for the x half), and the halves' final scales.
	n := g.N * g.HO * g.WO
	taps, scale := tapScratch[T]().Get(n), floatScratch[T]().Get(2*n)
	defer tapScratch[T]().Put(taps)
	defer floatScratch[T]().Put(scale)
	gridOTaps(g, a, b, grid, mask, taps, scale)
	if t32, ok := any(taps).([]gridTap[float32]); ok && gridChannelsLast(g) {
		gridContractOCL32(g, t32, any(x).([]float32), any(gr).([]float32), any(scale).([]float32), any(out).([]float32))
		return
	}
	p := g.HO * g.WO
	nb := p / 8 // an image's full blocks of 8 pixels, for the AVX2 gathers
	var ob *gridOBlocks
	if t32, ok := any(taps).([]gridTap[float32]); ok && gridAVX2 && nb > 0 {
		ob = newGridOBlocks(t32, g.N, p)
		defer ob.release()
	}
	gridContract(g, x, gr, func(n, j0, j1, c0, c1 int, planes []T, ps, wp int, grs []T) {
		o, tp := out[2*n*p:], taps[n*p:]
		js := j0
		if ob != nil && j0 < nb*8 {
			// j0 is a multiple of 8 (gridContract's blocks are).
			je := min(j1, nb*8)
			k := n*nb + j0/8
			gridContractO32(ob.acc[16*k:], ob.f[32*k:], ob.idx[8*k:], any(planes[c0*ps:]).([]float32),
				any(grs[c0*p+j0:]).([]float32), (je-j0)/8, c1-c0, ps, p, wp)
			js = je
		}
		for j := js; j < j1; j++ {
			t := &tp[j]
			i := int(t.i)
			var sx, sy T
			for c := c0; c < c1; c++ {
				plane := planes[c*ps : (c+1)*ps]
				q, r := plane[i:i+2], plane[i+wp:i+wp+2]
				nw, ne, sw, se := q[0], q[1], r[0], r[1]
				gv := grs[c*p+j]
				sx += ((ne-nw)*t.w[2] + (se-sw)*t.w[3]) * gv
				sy += ((sw-nw)*t.w[0] + (se-ne)*t.w[1]) * gv
			}
			o[2*j] += sx
			o[2*j+1] += sy
		}
	})
	par.For(g.N, func(lo, hi int) {
		if ob != nil {
			o := any(out).([]float32)
			for n := lo; n < hi; n++ {
				for j := 0; j < nb*8; j++ {
					a := ob.acc[16*(n*nb+j/8)+j%8:]
					o[2*(n*p+j)], o[2*(n*p+j)+1] = a[0], a[8]
				}
			}
		}
		for j := 2 * lo * p; j < 2*hi*p; j++ {
			if s := scale[j]; s == 0 {
				out[j] = 0 // a half that is zero, or a pixel that samples nothing
			} else {
				out[j] *= s
			}
		}
	})
}

// gridOTaps computes GridSampleO's per-pixel taps (corner, the factors
// fx0, fx1, fy0, fy1) and the halves' final scales (2 per pixel) into taps
// and scale (the CUDA kernels' table too, GridOTable).
func gridOTaps[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T], scale []T) {
	if !g.Nearest && !g.Bicubic && g.Padding == GridZeros {
		gridOTapsZeros(g, a, b, grid, mask, taps, scale)
		return
	}
	gridOTapsPoints(g, a, b, grid, mask, taps, scale)
}

// gridOTapsZeros is gridOTaps for bilinear "zeros" padding, the point
// computed inline as gridTapsZeros: the same taps and scales, bitwise, as
// gridOTapsPoints.
func gridOTapsZeros[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T], scale []T) {
	hasX, hasY := a == 0 && b <= 1, a <= 1 && b == 0
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	sx, sy, aligned := ax.scale, ay.scale, g.AlignCorners
	// kx^a·ky^b (kx = sx, ky = sy under "zeros"), as pow's factors.
	pa, pb := T(1), T(1)
	if a == 1 {
		pa = sx
	}
	if b == 1 {
		pb = sy
	}
	W, H, wp, zero := float64(g.W), float64(g.H), g.W+2, g.zeroCell()
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			x, y := T(grid[2*j]+1)*sx, T(grid[2*j+1]+1)*sy
			if !aligned {
				x -= 0.5
				y -= 0.5
			}
			scale[2*j], scale[2*j+1] = 0, 0
			fx, fy := math.Floor(float64(x)), math.Floor(float64(y))
			if !(fx >= -1 && fx < W && fy >= -1 && fy < H) {
				taps[j] = gridTap[T]{i: zero} // reads zeros; its scale is 0
				continue
			}
			taps[j].setO(int32((int(fy)+1)*wp+int(fx)+1), x-T(fx), y-T(fy), a, b)
			m := maskAt(mask, j)
			if hasX {
				scale[2*j] = sx * pa * pb * m
			}
			if hasY {
				scale[2*j+1] = sy * pa * pb * m
			}
		}
	})
}

// setO sets t to GridSampleO's tap of a point in cell i at fractions
// (lx, ly): w holds the factors fx0, fx1, fy0, fy1, that is (1 − l, l)
// per coordinate, or (−1, 1) for a coordinate differentiated (a, resp. b,
// is 1).
func (t *gridTap[T]) setO(i int32, lx, ly T, a, b int) {
	t.i, t.ok = i, true
	t.w[0], t.w[1], t.w[2], t.w[3] = 1-lx, lx, 1-ly, ly
	if a == 1 {
		t.w[0], t.w[1] = -1, 1
	}
	if b == 1 {
		t.w[2], t.w[3] = -1, 1
	}
}

// maskAt is mask[j], or 1 where there is no mask.
func maskAt[T Float](mask []T, j int) T {
	if mask == nil {
		return 1
	}
	return mask[j]
}

// gridOTapsPoints is gridOTaps through newGridPoint, for every mode and
// padding.
func gridOTapsPoints[T Float](g *GridSampleGeom, a, b int, grid, mask []T, taps []gridTap[T], scale []T) {
	mo := g.MaxOrder()
	hasX, hasY := a+1 <= mo && b <= mo, a <= mo && b+1 <= mo
	ax, ay := newGridAxis[T](g.W, g.Padding, g.AlignCorners), newGridAxis[T](g.H, g.Padding, g.AlignCorners)
	pow := func(k T, e int) T {
		if e == 1 {
			return k
		}
		return 1
	}
	par.For(g.N*g.HO, func(lo, hi int) {
		for j := lo * g.WO; j < hi*g.WO; j++ {
			pt := newGridPoint(g, &ax, &ay, grid[2*j], grid[2*j+1])
			scale[2*j], scale[2*j+1] = 0, 0
			if !pt.ok {
				taps[j] = gridTap[T]{i: g.zeroCell()} // reads zeros; its scale is 0
				continue
			}
			taps[j].setO(pt.i, pt.lx, pt.ly, a, b)
			m := maskAt(mask, j)
			if hasX {
				scale[2*j] = pt.kx * pow(pt.kx, a) * pow(pt.ky, b) * m
			}
			if hasY {
				scale[2*j+1] = pt.ky * pow(pt.kx, a) * pow(pt.ky, b) * m
			}
		}
	})
}

// gridOBlocks are GridSampleO's float32 taps in blocks of 8 pixels for
// gridGatherO: per block, the corner indices idx[8] (pixels in the order
// 0 1 4 5 2 3 6 7), the factors f[32]
// (fx0, fx1, fy0, fy1, 8 pixels each) and the sums acc[16] (x, then y),
// for every image's full blocks (N·⌊p/8⌋).
type gridOBlocks struct {
	idx    []int32
	f, acc []float32
}

func newGridOBlocks(taps []gridTap[float32], n, p int) *gridOBlocks {
	nb := p / 8
	b := &gridOBlocks{idx: intKeep.A.Get(8 * n * nb), f: floatKeep.A.Get(32 * n * nb), acc: floatKeep.A.Get(16 * n * nb)}
	par.For(n, func(lo, hi int) {
		clear(b.acc[16*lo*nb : 16*hi*nb])
		for im := lo; im < hi; im++ {
			for j := 0; j < nb*8; j++ {
				t, k := &taps[im*p+j], im*nb+j/8
				b.idx[8*k+[8]int{0, 1, 4, 5, 2, 3, 6, 7}[j%8]] = t.i // gridGatherO's order
				for q := 0; q < 4; q++ {
					b.f[32*k+8*q+j%8] = t.w[q]
				}
			}
		}
	})
	return b
}

func (b *gridOBlocks) release() {
	intKeep.A.Put(b.idx)
	floatKeep.A.Put(b.f)
	floatKeep.A.Put(b.acc)
}

// gridContract calls body(n, j0, j1, c0, c1, planes, ps, wp, grs) for
// every block [j0, j1) of image n's output pixels and every chunk
// [c0, c1) of gridChunk channels in order, with image n's planes of x
// (bilinear: zero-framed, row stride wp; plane size ps) and of gr; the
// blocks run in parallel, so each output pixel is summed over the channels
// in a fixed order by one worker. The framed planes are copied once, in
// parallel, to a scratch buffer.
func gridContract[T Float](g *GridSampleGeom, x, gr []T, body func(n, j0, j1, c0, c1 int, planes []T, ps, wp int, grs []T)) {
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W
	if p == 0 || g.N == 0 {
		return // no pixels (the block sizes below divide by both)
	}
	planes, ps := x, hw
	if !g.Nearest {
		wp, ps = g.W+2, g.framedSize()
		planes = floatScratch[T]().Get(g.N * g.C * ps)
		defer floatScratch[T]().Put(planes)
		par.For(g.N*g.C, func(lo, hi int) {
			for nc := lo; nc < hi; nc++ {
				padPlane(planes[nc*ps:(nc+1)*ps], x[nc*hw:(nc+1)*hw], g.H, g.W)
			}
		})
	}
	// Every block of pixels reads all of its image's planes, so the blocks
	// are as large as the workers allow: an image each when there are
	// enough, otherwise a few per worker. The sums do not depend on it.
	blocks := min(max(1, (2*runtime.GOMAXPROCS(0)+g.N-1)/g.N), max(1, p/64))
	size := ((p+blocks-1)/blocks + 7) &^ 7 // a multiple of 8: GridSampleO's AVX2 blocks
	blocks = (p + size - 1) / size
	par.For(g.N*blocks, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			n, j0 := k/blocks, k%blocks*size
			j1 := min(j0+size, p)
			for c0 := 0; c0 < g.C; c0 += gridChunk {
				body(n, j0, j1, c0, min(c0+gridChunk, g.C), planes[n*g.C*ps:(n+1)*g.C*ps], ps, wp, gr[n*g.C*p:(n+1)*g.C*p])
			}
		}
	})
}

// gridChunk is the number of channels GridSampleC and GridSampleO sum in
// registers before adding to a pixel's result (a fixed grouping, so the
// rounding does not depend on the threads).
const gridChunk = 8

// GridSampleO2 computes O_(a+1)b(x, grid, gr, m1) + O_a(b+1)(x, grid, gr,
// m2) into out [N, HO, WO, 2] (zero on entry), the pair of grid terms in
// the derivatives of O_ab. Its halves are the contractions C_(a+2)b,
// C_(a+1)(b+1), C_a(b+2): x = m1·C_(a+2)b + m2·C_(a+1)(b+1), y =
// m1·C_(a+1)(b+1) + m2·C_a(b+2); when the outer two are zero (bilinear)
// one pass computes the shared one.
func GridSampleO2[T Float](g *GridSampleGeom, a, b int, x, grid, gr, m1, m2, out []T) {
	mo := g.MaxOrder()
	n := len(out) / 2
	ta := make([]T, len(out)) // (C_(a+2)b, C_(a+1)(b+1))
	GridSampleO(g, a+1, b, x, grid, gr, nil, ta)
	tb := ta // (C_(a+1)(b+1), C_a(b+2)): only the shared member when C_a(b+2) is zero
	outer := a+2 <= mo || b+2 <= mo
	if outer {
		tb = make([]T, len(out))
		GridSampleO(g, a, b+1, x, grid, gr, nil, tb)
	}
	par.For(g.N, func(lo, hi int) {
		for j := lo * n / g.N; j < hi*n/g.N; j++ {
			c2 := ta[2*j+1]
			if outer {
				out[2*j] = m1[j]*ta[2*j] + m2[j]*tb[2*j]
				out[2*j+1] = m1[j]*c2 + m2[j]*tb[2*j+1]
				continue
			}
			out[2*j], out[2*j+1] = m2[j]*c2, m1[j]*c2
		}
	})
}
