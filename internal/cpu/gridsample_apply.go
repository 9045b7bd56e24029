package cpu

import (
	"strings"

	"github.com/gops-dev/gops/internal/par"
)

// GridSample's S_ab and T_ab (gridsample.go): the taps applied to the
// input planes, and scattered back by the transpose.

// GridSampleS computes S_ab(x, grid, mask) = mask ⊙ K_ab(x) (file comment)
// into out [N, C, HO, WO] (every element written); mask [N, HO, WO] may be
// nil (1). S_00 without mask is grid_sample. Parallel over planes (n, c), each output written
// once; a worker copies its plane into a zero frame, so that every corner
// is read without a test.
func GridSampleS[T Float](g *GridSampleGeom, a, b int, x, grid, mask, out []T) {
	gridApply(g, "S", a, b, [4][]T{x, grid, mask}, out)
}

// GridSampleS2 computes S_(a+1)b(x, grid, m1) + S_a(b+1)(x, grid, m2), the
// pair of members that the derivatives of O_ab sum, in one pass: its taps
// are the sums of the two members' (m1, m2 [N, HO, WO]). Bilinear only.
func GridSampleS2[T Float](g *GridSampleGeom, a, b int, x, grid, m1, m2, out []T) {
	gridApply(g, "S2", a, b, [4][]T{x, grid, m1, m2}, out)
}

// gridApply computes kind ("S", "S2", "T" or "T2") of in[0] (x for S, gr
// for T) with grid in[1] and masks in[2], in[3] into out: through
// cubicGrid for bicubic, else through the taps of one member (gridTaps)
// or of a pair (gridTaps2).
func gridApply[T Float](g *GridSampleGeom, kind string, a, b int, in [4][]T, out []T) {
	if g.Bicubic {
		cubicGrid(g, kind, a, b, in, out)
		return
	}
	var taps []gridTap[T]
	if strings.HasSuffix(kind, "2") {
		taps = gridTaps2(g, a, b, in[1], in[2], in[3])
	} else {
		taps = gridTaps(g, a, b, in[1], in[2])
	}
	defer tapScratch[T]().Put(taps)
	t32, cl := any(taps).([]gridTap[float32])
	cl = cl && gridChannelsLast(g)
	switch {
	case kind[0] == 'S' && cl:
		gridSampleCL32(g, t32, any(in[0]).([]float32), any(out).([]float32))
	case kind[0] == 'S':
		gridSampleTaps(g, taps, in[0], out)
	case cl:
		gridScatterCL32(g, t32, any(in[0]).([]float32), any(out).([]float32))
	default:
		gridScatterTaps(g, taps, in[0], out)
	}
}

// gridFrame is a worker's zero-framed plane for the bilinear loops;
// nearest reads the plane itself (nil).
func gridFrame[T Float](g *GridSampleGeom) []T {
	if g.Nearest {
		return nil
	}
	return make([]T, g.framedSize())
}

// gridSampleTaps is S with the taps given, planes first (gridApply takes
// the channels-last case).
func gridSampleTaps[T Float](g *GridSampleGeom, taps []gridTap[T], x, out []T) {
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	var soa *gridSoA[float32] // float32 taps for the AVX2 gathers
	if t32, ok := any(taps).([]gridTap[float32]); ok && gridAVX2 && !g.Nearest {
		soa = newGridSoA(t32, p)
		defer soa.release()
	}
	par.For(g.N*g.C, func(lo, hi int) {
		pp := gridFrame[T](g)
		for nc := lo; nc < hi; nc++ {
			plane, o, tp := x[nc*hw:(nc+1)*hw], out[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			if soa != nil {
				padPlane(pp, plane, g.H, g.W)
				n := nc / g.C
				img := soa.part(n*p, (n+1)*p)
				gridSampleSoA32(any(o).([]float32), any(pp).([]float32), &img, wp)
				continue
			}
			if g.Nearest {
				for j := range o {
					if t := &tp[j]; t.ok {
						o[j] = t.w[0] * plane[t.i]
					} else {
						o[j] = 0
					}
				}
				continue
			}
			padPlane(pp, plane, g.H, g.W)
			for j := range o {
				o[j] = tp[j].value(pp, wp)
			}
		}
	})
}

// GridSampleT computes T_ab(gr, grid, mask) = K_abᵀ(mask ⊙ gr), S_ab's
// transpose in its first input: gr [N, C, HO, WO] scattered onto dst
// [N, C, H, W], which must be zero on entry (bilinear overwrites it). Parallel over planes (n, c):
// each worker owns its input planes and adds pixels in order (into a
// zero-framed plane, whose interior it then copies out), so the sums do
// not depend on the threads.
func GridSampleT[T Float](g *GridSampleGeom, a, b int, gr, grid, mask, dst []T) {
	gridApply(g, "T", a, b, [4][]T{gr, grid, mask}, dst)
}

// GridSampleT2 is GridSampleS2's transpose in x: T_(a+1)b(gr, grid, m1) +
// T_a(b+1)(gr, grid, m2) in one pass (dst zero on entry). Bilinear only.
func GridSampleT2[T Float](g *GridSampleGeom, a, b int, gr, grid, m1, m2, dst []T) {
	gridApply(g, "T2", a, b, [4][]T{gr, grid, m1, m2}, dst)
}

// gridScatterTaps is T with the taps given, planes first (gridApply takes
// the channels-last case).
func gridScatterTaps[T Float](g *GridSampleGeom, taps []gridTap[T], gr, dst []T) {
	hw, p, wp := g.H*g.W, g.HO*g.WO, g.W+2
	par.For(g.N*g.C, func(lo, hi int) {
		pp := gridFrame[T](g)
		for nc := lo; nc < hi; nc++ {
			plane, src, tp := dst[nc*hw:(nc+1)*hw], gr[nc*p:(nc+1)*p], taps[nc/g.C*p:][:p]
			if g.Nearest {
				for j, v := range src {
					if t := &tp[j]; t.ok {
						plane[t.i] += t.w[0] * v
					}
				}
				continue
			}
			clear(pp)
			for j, v := range src {
				t := &tp[j]
				i := int(t.i)
				q, r := pp[i:i+2], pp[i+wp:i+wp+2]
				q[0] += t.w[0] * v
				q[1] += t.w[1] * v
				r[0] += t.w[2] * v
				r[1] += t.w[3] * v
			}
			for y := 0; y < g.H; y++ {
				copy(plane[y*g.W:(y+1)*g.W], pp[(y+1)*wp+1:])
			}
		}
	})
}
