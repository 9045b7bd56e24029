package cpu

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/gops-dev/gops/internal/par"
)

// RoIPoolArgmax computes, for every output element (k, c, ph, pw) of
// roi_pool (K×C×PH×PW), the flat index into input ([N, C, H, W]) of the
// maximum of input[batch(k), c] over bin (ph, pw) of box k, or -1 for an
// empty bin. The first maximum in row-major order wins ties; a NaN wins over
// any number (the first NaN), so NaN propagates.
//
// The comparison is done on integer order keys (orderKey32, orderKey64)
// held channels-last ([N, H, W, C]), so that a bin's pixels are scanned for
// all channels at once, each pixel a contiguous row, with conditional moves
// rather than branches. For float32 a key and the pixel's position are
// packed into one int64 whose maximum is the first maximum. Parallel over
// boxes; each box writes only its own indices.
func RoIPoolArgmax[T Float](g *PoolGeom, input, boxes []T, idx []int) error {
	if err := CheckBoxes("RoIPool", boxes, g.N); err != nil {
		return err
	}
	plane := g.H * g.W
	var keys []int64
	switch x := any(input).(type) {
	case []float32:
		if uint64(plane) <= math.MaxUint32 {
			roiPoolArgmaxScan(g, packedKeysChannelsLast(x, g.N, g.C, plane), boxes, idx, newPackedArgmax)
			return nil
		}
		keys = make([]int64, len(x))
		for i, v := range x {
			keys[i] = int64(orderKey32(v))
		}
	case []float64:
		keys = make([]int64, len(x))
		for i, v := range x {
			keys[i] = orderKey64(v)
		}
	default:
		return fmt.Errorf("gops: RoIPool: input %T is not float32 or float64", input)
	}
	kcl := make([]int64, len(keys))
	transposeBatch(kcl, keys, g.N, g.C, plane, false)
	roiPoolArgmaxScan(g, kcl, boxes, idx, newKeyArgmax)
	return nil
}

// orderKey32 is an integer that orders as v does under roi_pool's
// comparison: the IEEE bits with the magnitude flipped for negative numbers,
// -0 as +0 (they compare equal, so the first wins), and every NaN above
// +Inf (so the first NaN wins, and stays).
func orderKey32(v float32) int32 { return orderBits(int32(math.Float32bits(v)), v == 0, v != v) }

// orderKey64 is orderKey32 for float64.
func orderKey64(v float64) int64 { return orderBits(int64(math.Float64bits(v)), v == 0, v != v) }

// orderBits is orderKey32's key of a float of IEEE bits b (as an int32 or
// an int64), equal to zero (zero) or a NaN (nan).
func orderBits[K orderKey](b K, zero, nan bool) K {
	top := ^sentinelKey[K]() // the largest K
	k := b ^ (b >> (8*unsafe.Sizeof(b) - 1) & top)
	if zero {
		k = 0
	}
	if nan {
		k = top
	}
	return k
}

// packedKeysChannelsLast returns, channels-last ([N, H·W, C]), each input
// value's orderKey32 in the high half of an int64 and the complement of its
// position p in the plane in the low half: the larger key wins, and of
// equal keys the one at the smaller position. Parallel over images and
// bands of pixels.
func packedKeysChannelsLast(x []float32, n, c, plane int) []int64 {
	dst := make([]int64, len(x))
	const band = 64
	bands := (plane + band - 1) / band
	par.For(n*bands, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			b, p0 := t/bands, t%bands*band
			p1 := min(p0+band, plane)
			src, d := x[b*c*plane:(b+1)*c*plane], dst[b*c*plane:(b+1)*c*plane]
			for c0 := 0; c0 < c; c0 += transposeTile {
				c1 := min(c0+transposeTile, c)
				for p := p0; p < p1; p++ {
					row := d[p*c+c0 : p*c+c1]
					low := int64(^uint32(p))
					for i := range row {
						row[i] = int64(orderKey32(src[(c0+i)*plane+p]))<<32 | low
					}
				}
			}
		}
	})
	return dst
}

// binArgmaxer finds a bin's winner in every channel, fed the channels-last
// keys of the bin's pixels in row-major order, a few rows at a time.
type binArgmaxer interface {
	// reduce takes rows, the keys of the pixels at positions pos of the
	// plane; first starts a new bin.
	reduce(rows [][]int64, pos []int, first bool)
	// winners sets dst[c] to the flat index base + c·plane + p of channel
	// c's winner.
	winners(dst []int, base, plane int)
}

// argmaxRows is how many pixel rows roiPoolArgmaxScan hands a binArgmaxer
// at a time, so that a bin of any size needs no more memory.
const argmaxRows = 64

// packedArgmax is the binArgmaxer of packedKeysChannelsLast's keys: the
// maximum wins. Those keys all differ, so the order of the rows does not
// matter.
type packedArgmax struct{ m []int64 }

func newPackedArgmax(c int) binArgmaxer { return &packedArgmax{make([]int64, c)} }

func (s *packedArgmax) reduce(rows [][]int64, _ []int, first bool) {
	m := s.m
	if first {
		copy(m, rows[0])
		rows = rows[1:]
	}
	for ; len(rows) >= 4; rows = rows[4:] {
		r0, r1, r2, r3 := rows[0][:len(m)], rows[1][:len(m)], rows[2][:len(m)], rows[3][:len(m)]
		for c, v := range m {
			m[c] = max(v, r0[c], r1[c], r2[c], r3[c])
		}
	}
	for _, r := range rows {
		r = r[:len(m)]
		for c, v := range m {
			m[c] = max(v, r[c])
		}
	}
}

func (s *packedArgmax) winners(dst []int, base, plane int) {
	dst = dst[:len(s.m)]
	for c, v := range s.m {
		dst[c] = base + c*plane + int(^uint32(v))
	}
}

// keyArgmax is the binArgmaxer of plain order keys: a strictly larger key
// wins, so of equal maxima the first in row-major order stays.
type keyArgmax struct {
	m    []int64
	best []int
}

func newKeyArgmax(c int) binArgmaxer { return &keyArgmax{make([]int64, c), make([]int, c)} }

func (s *keyArgmax) reduce(rows [][]int64, pos []int, first bool) {
	m, best := s.m, s.best
	if first {
		copy(m, rows[0])
		for c := range best {
			best[c] = pos[0]
		}
		rows, pos = rows[1:], pos[1:]
	}
	for i, r := range rows {
		r, p := r[:len(m)], pos[i]
		for c, v := range r {
			mc, bc := m[c], best[c]
			if v > mc {
				bc = p
			}
			m[c], best[c] = max(mc, v), bc
		}
	}
}

func (s *keyArgmax) winners(dst []int, base, plane int) {
	dst = dst[:len(s.best)]
	for c, p := range s.best {
		dst[c] = base + c*plane + p
	}
}

// roiPoolArgmaxScan is RoIPoolArgmax over the channels-last keys x
// ([N, H·W, C]), one binArgmaxer per worker. A block of bins is gathered
// [bin, C] and written to idx transposed.
func roiPoolArgmaxScan[T Float](g *PoolGeom, x []int64, boxes []T, idx []int, newArgmaxer func(c int) binArgmaxer) {
	plane, nb := g.H*g.W, g.PH*g.PW
	block := binBlock(nb, g.C)
	par.For(len(boxes)/5, func(lo, hi int) {
		bins := make([]PoolBin, 0, nb)
		rows := make([][]int64, 0, argmaxRows)
		pos := make([]int, 0, argmaxRows)
		am := newArgmaxer(g.C)
		buf := make([]int, block*g.C) // indices of a block of bins, [bin, C]
		for k := lo; k < hi; k++ {
			bins = PoolBins(g, boxes[5*k:5*k+5], true, bins[:0])
			n := int(boxes[5*k])
			xn := x[n*plane*g.C : (n+1)*plane*g.C]
			o := idx[k*g.C*nb : (k+1)*g.C*nb]
			for i, b := range bins {
				r := i % block
				row := buf[r*g.C : (r+1)*g.C]
				if b.empty() {
					for c := range row {
						row[c] = -1
					}
				} else {
					first := true
					for h := b.HS; h < b.HE; h++ {
						for p := h*g.W + b.WS; p < h*g.W+b.WE; p++ {
							rows, pos = append(rows, xn[p*g.C:(p+1)*g.C]), append(pos, p)
							if len(rows) == argmaxRows {
								am.reduce(rows, pos, first)
								rows, pos, first = rows[:0], pos[:0], false
							}
						}
					}
					if len(rows) > 0 {
						am.reduce(rows, pos, first)
						rows, pos = rows[:0], pos[:0]
					}
					am.winners(row, n*g.C*plane, plane)
				}
				if r == block-1 || i == nb-1 {
					transpose2D(o[i-r:], nb, buf, g.C, r+1, g.C, false)
				}
			}
		}
	})
}

// firstBad records the smallest position at which a parallel kernel met a
// bad index, so that its error does not depend on scheduling.
type firstBad struct{ pos atomic.Int64 }

func newFirstBad() *firstBad {
	f := &firstBad{}
	f.pos.Store(math.MaxInt64)
	return f
}

func (f *firstBad) report(i int) {
	for {
		old := f.pos.Load()
		if int64(i) >= old || f.pos.CompareAndSwap(old, int64(i)) {
			return
		}
	}
}

// at returns the position, or -1 if nothing was reported.
func (f *firstBad) at() int {
	if p := f.pos.Load(); p != math.MaxInt64 {
		return int(p)
	}
	return -1
}

// RoIGather sets out[i] = input[idx[i]], or 0 where idx[i] is -1. Parallel
// over rows of nb elements (one box and channel each).
func RoIGather[T Float](input []T, idx []int, out []T, nb int) error {
	bad := newFirstBad()
	par.For(len(idx)/nb, func(lo, hi int) {
		ix := idx[lo*nb : hi*nb]
		o := out[lo*nb : lo*nb+len(ix)]
		for i, j := range ix {
			switch {
			case uint(j) < uint(len(input)):
				o[i] = input[j]
			case j == -1:
				o[i] = 0
			default:
				bad.report(lo*nb + i)
				return
			}
		}
	})
	if i := bad.at(); i >= 0 {
		return fmt.Errorf("gops: RoIGather: index %d at %d is outside the input (%d elements)", idx[i], i, len(input))
	}
	return nil
}

// RoIScatterAdd is the adjoint of roiGather in its input: it adds grad[i] to
// dst[idx[i]] ([N, C, H, W]) wherever idx[i] is not -1. idx is K×C×PH×PW as
// RoIPoolArgmax makes it: row (k, c) points into one plane of channel c.
// Parallel over channels, each visiting boxes in order, so sums are bitwise
// reproducible and no two goroutines write one element; an index that
// would break this is an error, not a race.
func RoIScatterAdd[T Float](g *PoolGeom, grad []T, idx []int, dst []T) error {
	plane, nb := g.H*g.W, g.PH*g.PW
	rows := len(idx) / nb
	bad := newFirstBad()
	par.For(g.C, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			for r := c; r < rows; r += g.C {
				row, gr := idx[r*nb:(r+1)*nb], grad[r*nb:(r+1)*nb]
				// The row's plane, from its first index: one division a row.
				base := -1
				for i, j := range row {
					if j >= 0 {
						if base = j - j%plane; base >= len(dst) || base/plane%g.C != c {
							bad.report(r*nb + i)
							return
						}
						break
					}
				}
				if base < 0 { // no index into the input: all must be -1
					for i, j := range row {
						if j != -1 {
							bad.report(r*nb + i)
							return
						}
					}
					continue
				}
				pl := dst[base : base+plane]
				gr = gr[:len(row)]
				for i, j := range row {
					if j == -1 {
						continue
					}
					u := uint(j - base)
					if u >= uint(len(pl)) {
						bad.report(r*nb + i)
						return
					}
					pl[u] += gr[i]
				}
			}
		}
	})
	if i := bad.at(); i >= 0 {
		return fmt.Errorf("gops: RoIScatterAdd: index %d at %d is not in the input plane of its box and channel", idx[i], i)
	}
	return nil
}
