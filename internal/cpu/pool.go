package cpu

import (
	"math"
	"unsafe"

	"github.com/gops-dev/gops/internal/par"
)

// PoolAxis is the window of each output position along one axis of a 2-D
// pooling: output o reads input positions First[o], First[o]+Step, ...
// below End[o] (all inside [0, size)); Full[o] is the window's size
// counting padding (avg_pool2d's count_include_pad divisor factor) and
// Clip[o] its size inside the input.
type PoolAxis struct {
	First, End, Full, Clip []int
	Step                   int
}

// Out is the number of output positions.
func (a *PoolAxis) Out() int { return len(a.First) }

// PoolOutSize is torch's pooled size along one axis (its
// pooling_output_shape): ⌊(in + 2·pad − dil·(k−1) − 1 + (stride−1 if
// ceilMode)) / stride⌋ + 1, less one in ceilMode if the last window would
// then start beyond the input and its left padding. At most 0 when no
// window fits.
func PoolOutSize(in, k, stride, pad, dil int, ceilMode bool) int {
	num := in + 2*pad - dil*(k-1) - 1
	if ceilMode {
		num += stride - 1
	}
	out := floorDiv(num, stride) + 1
	if ceilMode && out > 0 && (out-1)*stride >= in+pad {
		out--
	}
	return out
}

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Empty reports whether some output position's window holds no input
// position (a window entirely in the padding, possible with dilation).
func (a *PoolAxis) Empty() bool {
	for o := range a.First {
		if a.First[o] >= a.End[o] {
			return true
		}
	}
	return false
}

// NewPoolAxis is the windows of max_pool2d / avg_pool2d along an axis of
// size in: kernel k, stride, padding pad, dilation dil, out positions.
func NewPoolAxis(in, out, k, stride, pad, dil int) PoolAxis {
	a := PoolAxis{First: make([]int, out), End: make([]int, out), Full: make([]int, out), Clip: make([]int, out), Step: dil}
	for o := 0; o < out; o++ {
		start := o*stride - pad
		// avg_pool2d's sizes (dil is 1 there): the window clipped at
		// in + pad, then at the input.
		end := min(start+dil*(k-1)+1, in+pad)
		a.Full[o] = end - start
		first := start
		for first < 0 {
			first += dil
		}
		a.First[o], a.End[o] = first, min(end, in)
		a.Clip[o] = 0
		if a.End[o] > first {
			a.Clip[o] = (a.End[o] - first + dil - 1) / dil
		}
	}
	return a
}

// NewAdaptiveAxis is the windows of adaptive pooling from in to out
// positions: [⌊o·in/out⌋, ⌈(o+1)·in/out⌉).
func NewAdaptiveAxis(in, out int) PoolAxis {
	a := PoolAxis{First: make([]int, out), End: make([]int, out), Full: make([]int, out), Clip: make([]int, out), Step: 1}
	for o := 0; o < out; o++ {
		a.First[o] = o * in / out
		a.End[o] = ((o+1)*in + out - 1) / out
		a.Full[o] = a.End[o] - a.First[o]
		a.Clip[o] = a.Full[o]
	}
	return a
}

// Pool2dGeom is a 2-D pooling (nn.MaxPool2d, AvgPool2d and the adaptive ones) of Planes = N·C planes of H×W into HO×WO.
type Pool2dGeom struct {
	Planes, H, W int
	Rows, Cols   PoolAxis
}

// MaxPoolArgmax writes, for each output position, the index (in its H×W
// plane) of the window's maximum as torch's max_pool2d picks it: the
// first of equal maxima, a NaN over any number (the last NaN), the first
// position of a window of −Inf; −1 for a window with no input position.
func MaxPoolArgmax[T Float](g *Pool2dGeom, x []T, idx []int) {
	if int64(g.H)*int64(g.W) < 1<<31-1 {
		// The fast path and the 64-bit keys hold a plane index in 32 bits,
		// the fast path also the index of a row-pass result (H·WO, WO
		// rounded up to 8).
		if t, ok := regularAxis(&g.Cols, g.W); ok && int64(g.H)*int64(g.Cols.Out()+8) < 1<<31-1 {
			switch x := any(x).(type) {
			case []float32:
				maxPoolFast[float32, int32](g, newMaxPoolLayout(g, t), x, idx)
			case []float64:
				maxPoolFast[float64, int64](g, newMaxPoolLayout(g, t), x, idx)
			}
			return
		}
		if x32, ok := any(x).([]float32); ok {
			maxPoolArgmax32(g, x32, idx)
			return
		}
	}
	hw, l := g.H*g.W, g.Rows.Out()*g.Cols.Out()
	par.For(g.Planes, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			maxPoolPlaneScan(g, x[p*hw:(p+1)*hw], idx[p*l:(p+1)*l])
		}
	})
}

// maxPoolPlaneScan is MaxPoolArgmax on one plane by torch's sequential
// scan of each window.
func maxPoolPlaneScan[T Float](g *Pool2dGeom, plane []T, out []int) {
	ho, wo, w := g.Rows.Out(), g.Cols.Out(), g.W
	rows, cols := &g.Rows, &g.Cols
	for oh := 0; oh < ho; oh++ {
		r0, r1, rs := rows.First[oh], rows.End[oh], rows.Step
		for ow := 0; ow < wo; ow++ {
			c0, c1, cs := cols.First[ow], cols.End[ow], cols.Step
			if r0 >= r1 || c0 >= c1 {
				out[oh*wo+ow] = -1 // an empty window: no input position
				continue
			}
			// torch's rule: a later value replaces the maximum if it is
			// larger or NaN, so the first of equal maxima (and of a
			// window of −Inf) and the last NaN win.
			best := r0*w + c0
			m := plane[best]
			for r := r0; r < r1; r += rs {
				row := plane[r*w : r*w+c1]
				for c := c0; c < c1; c += cs {
					if v := row[c]; v > m || v != v {
						m, best = v, r*w+c
					}
				}
			}
			out[oh*wo+ow] = best
		}
	}
}

// maxPoolArgmax32 is MaxPoolArgmax for float32 without branches on the
// data (a 3×3 window of random values mispredicts about two branches):
// each value becomes a 64-bit key, its order-preserving integer in the
// high half (−0 equal to +0, every NaN above +Inf) and a tie-break in the
// low half (larger for an earlier position, or for a later one among
// NaNs), and a window's argmax is its largest key. Keys are unique and
// their maximum is associative, so the window is reduced separably, as
// torch's sequential scan would pick: the key of each input position once,
// then every row's maximum over each output column's window, then over
// each output row's window of rows.
func maxPoolArgmax32(g *Pool2dGeom, x []float32, idx []int) {
	hw, ho, wo := g.H*g.W, g.Rows.Out(), g.Cols.Out()
	par.For(g.Planes, func(lo, hi int) {
		keys := make([]int64, hw)
		rowBest := make([]int64, g.H*wo)
		for p := lo; p < hi; p++ {
			maxPoolPlaneKeys64(g, x[p*hw:(p+1)*hw], idx[p*ho*wo:(p+1)*ho*wo], keys, rowBest)
		}
	})
}

// maxPoolPlaneKeys64 is maxPoolArgmax32 on one plane, with scratch keys
// of H·W and rowBest of H·WO elements.
func maxPoolPlaneKeys64(g *Pool2dGeom, plane []float32, out []int, keys, rowBest []int64) {
	wo, w := g.Cols.Out(), g.W
	rows, cols := &g.Rows, &g.Cols
	for i, v := range plane {
		keys[i] = argmaxKey(v, i)
	}
	for r := 0; r < g.H; r++ {
		row, best := keys[r*w:(r+1)*w], rowBest[r*wo:(r+1)*wo]
		for ow := range best {
			b := int64(math.MinInt64)
			for c := cols.First[ow]; c < cols.End[ow]; c += cols.Step {
				b = max(b, row[c])
			}
			best[ow] = b
		}
	}
	for oh := 0; oh < rows.Out(); oh++ {
		dst := out[oh*wo : (oh+1)*wo]
		r0, r1 := rows.First[oh], rows.End[oh]
		if emptyWindowRow(r0, r1, dst) {
			continue
		}
		for ow := range dst {
			if cols.First[ow] >= cols.End[ow] {
				dst[ow] = -1
				continue
			}
			b := int64(math.MinInt64)
			for r := r0; r < r1; r += rows.Step {
				b = max(b, rowBest[r*wo+ow])
			}
			dst[ow] = argmaxPos(b)
		}
	}
}

// argmaxKey is v's key for maxPoolArgmax32 at plane index i (< 2^31).
func argmaxKey(v float32, i int) int64 {
	b := int32(math.Float32bits(v))
	a := b & math.MaxInt32
	s := b >> 31
	k := (a ^ s) - s                            // the float's order; −0 → 0
	nan := int32((0x7f800000 - int64(a)) >> 63) // −1 for NaN
	k = k&^nan | nan&math.MaxInt32              // NaN above +Inf
	t := uint32(i) ^ ^uint32(nan)               // ^i (earlier wins), or i for a NaN
	return int64(k)<<32 | int64(t)
}

// argmaxPos is the plane index of the key argmaxKey made.
func argmaxPos(key int64) int {
	t := uint32(key)
	if int32(key>>32) != math.MaxInt32 {
		t = ^t
	}
	return int(t)
}

// PlaneGather writes out[p, o] = x[p, idx[p, o]] (0 where idx is −1: the
// op stays linear; nn adds −Inf there separately) for
// planes of hw input and l output elements.
func PlaneGather[T Float](x []T, idx []int, out []T, planes, hw, l int) {
	par.For(planes, func(lo, hi int) {
		// Last plane first: MaxPoolArgmax, run just before on the same
		// chunks in plane order, leaves the last planes' x and idx in
		// cache.
		for p := hi - 1; p >= lo; p-- {
			plane := x[p*hw : (p+1)*hw]
			if hw > 0 {
				// The gather's reads hop between rows; a sequential
				// prefetch of the plane first streams it in (ResNet's stem
				// pooling: its gather took about a fifth less time).
				prefetchLines(unsafe.Pointer(&plane[0]), hw*int(unsafe.Sizeof(plane[0])))
			}
			for o, i := range idx[p*l : (p+1)*l] {
				if i >= 0 {
					out[p*l+o] = plane[i]
				} else {
					out[p*l+o] = 0
				}
			}
		}
	})
}

// PlaneScatterAdd adds g[p, o] into dx[p, idx[p, o]] (PlaneGather's
// transpose), in output order within each plane.
func PlaneScatterAdd[T Float](g []T, idx []int, dx []T, planes, hw, l int) {
	par.For(planes, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			plane := dx[p*hw : (p+1)*hw]
			for o, i := range idx[p*l : (p+1)*l] {
				if i >= 0 {
					plane[i] += g[p*l+o]
				}
			}
		}
	})
}

// EmptyWindowFill sets out[o] to −Inf where idx[o] is −1 (an empty
// window of a max pooling, whose maximum torch gives as −Inf), leaving
// the other elements as they are; idx has at least len(out) elements.
// nn adds it to PlaneGather's result, which is 0 there.
func EmptyWindowFill[T Float](out []T, idx []int) {
	for i, j := range idx[:len(out)] {
		if j < 0 {
			out[i] = T(math.Inf(-1))
		}
	}
}

// emptyWindowRow reports whether an output row's windows are empty (input
// rows [r0, r1) are none) and, if so, fills its argmax row dst with -1: no
// input position.
func emptyWindowRow(r0, r1 int, dst []int) bool {
	if r0 < r1 {
		return false
	}
	for ow := range dst {
		dst[ow] = -1
	}
	return true
}
