package cpu

import (
	"math"
	"unsafe"

	"github.com/gops-dev/gops/internal/par"
)

// The fast path of MaxPoolArgmax: a plane's windows reduced separably,
// with order keys of the value's size (int32 for float32, int64 for
// float64) and the plane index of each running maximum carried along (no
// tie-break in the keys, as maxPoolArgmax32's 64-bit ones have).
//
// Each input row r is first turned into keys (maxKey32, maxKey64), split
// by column phase (column c goes to phase c mod s, slot c/s; s the column
// stride) so that tap j of every output column is a contiguous run of one
// phase; then the row pass keeps, for each output column, the largest key
// over its window's taps in column order and the plane index of the
// first one (only a strictly larger key replaces it), and the column pass
// does the same over each output row's window of rows, in row order. The
// first maximum of the first row that holds the window's maximum is
// torch's row-major first maximum. Positions outside the input hold
// sentinelKey, below every key, so that every output column has the same
// taps. −0 and +0 have the same key. A plane with a NaN (which wins, the
// last one) is left to maxPoolPlaneKeys64 (float32) or maxPoolPlaneScan.
// float32 runs AVX2 loops where the CPU has them (maxpool_amd64.s).

// maxPoolMaxStride is the largest column stride of the fast path (its
// phase buffer holds stride phases of a row).
const maxPoolMaxStride = 16

// maxKey32 is v's order key, v not NaN: the float's order as an int32
// with −0 and +0 both 0 (|v|'s bits, negated for a negative sign).
func maxKey32(v float32) int32 {
	b := int32(math.Float32bits(v))
	s := b >> 31
	return (b&math.MaxInt32 ^ s) - s
}

// regularTaps is a column axis whose output o reads the columns
// o·S + Q0 + j·Dil for j < K that lie in [0, in): a max_pool2d axis
// (Q0 = −padding) or an adaptive one that happens to be regular.
type regularTaps struct {
	S, Q0, K, Dil int
}

// regularAxis finds the taps of axis a over in positions, if its windows
// are regular with a stride of at most maxPoolMaxStride: the stride from
// the starts or the ends of the last two windows (one of them may be
// clipped), checked against every window exactly.
func regularAxis(a *PoolAxis, in int) (regularTaps, bool) {
	n := a.Out()
	if n == 0 || a.Step < 1 || a.First[n-1] >= a.End[n-1] {
		return regularTaps{}, false
	}
	if n == 1 {
		return a.regularTaps(in, 1)
	}
	if t, ok := a.regularTaps(in, a.First[n-1]-a.First[n-2]); ok {
		return t, true
	}
	return a.regularTaps(in, a.End[n-1]-a.End[n-2])
}

// regularTaps is regularAxis for stride s.
func (a *PoolAxis) regularTaps(in, s int) (regularTaps, bool) {
	n, dil := a.Out(), a.Step
	if s < 1 || s > maxPoolMaxStride {
		return regularTaps{}, false
	}
	// The start of the last window, which may be clipped at 0 only if
	// all are.
	t := regularTaps{S: s, Dil: dil, Q0: a.First[n-1] - (n-1)*s, K: 1}
	// K: enough taps from each window's start to its last position.
	for o := 0; o < n; o++ {
		if a.First[o] < a.End[o] {
			last := a.First[o] + (a.End[o]-1-a.First[o])/dil*dil
			t.K = max(t.K, (last-(o*s+t.Q0))/dil+1)
		}
	}
	for o := 0; o < n; o++ {
		// The taps inside [0, in): j from jlo to jhi.
		start := o*s + t.Q0
		jlo := 0
		if start < 0 {
			jlo = (-start + dil - 1) / dil
		}
		jhi := t.K - 1
		if end := start + jhi*dil; end >= in {
			jhi -= (end - in + dil) / dil
		}
		if a.First[o] >= a.End[o] {
			if jlo <= jhi {
				return regularTaps{}, false
			}
			continue
		}
		last := a.First[o] + (a.End[o]-1-a.First[o])/dil*dil
		if jlo > jhi || start+jlo*dil != a.First[o] || start+jhi*dil != last {
			return regularTaps{}, false
		}
	}
	return t, true
}

// maxPoolLayout is the scratch layout of the fast path for one geometry:
// the phase buffer of one row (S phases of PL keys, slot t of phase ph at
// ph·PL + M + t) and the row pass's results, H rows of WOP (the output
// width rounded up to 8) keys and plane indices.
type maxPoolLayout struct {
	taps      regularTaps
	M, PL     int
	WO, WOP   int
	tapOff    []int32  // tap j of output column o reads phase buffer [tapOff[j] + o]
	tapCol    []int32  // and is column o·S + tapCol[j]
	tapPairs  []int32  // tapOff[j], tapCol[j] for each j (the AVX2 loop's table)
	colBase   [9]int32 // S·i for i < 8, and 8·S (the AVX2 loop's)
	windows   []int32  // for each output row, (first row · WOP, rows) or (0, 0) if empty
	emptyCols []int    // output columns whose window holds no column
	pairs     bool     // every window is 2×2, at (2·oh, 2·ow): maxPoolPairs applies
}

// pairAxis reports whether every window of a is the two positions 2·o
// and 2·o + 1.
func pairAxis(a *PoolAxis) bool {
	for o := range a.First {
		if a.First[o] != 2*o || a.End[o] != 2*o+2 {
			return false
		}
	}
	return a.Step == 1 && a.Out() > 0
}

// newMaxPoolLayout is the layout of geometry g with column taps t.
func newMaxPoolLayout(g *Pool2dGeom, t regularTaps) *maxPoolLayout {
	wo := g.Cols.Out()
	l := &maxPoolLayout{taps: t, WO: wo, WOP: (wo + 7) &^ 7}
	dmin := floorDiv(t.Q0, t.S)
	dmax := floorDiv(t.Q0+(t.K-1)*t.Dil, t.S)
	l.M = max(0, -dmin)
	// Room for the reads of the taps, and for the keys of a row with 8
	// slots to spare (the AVX2 loop's last block and sentinel stores).
	l.PL = (l.M + max(l.WOP+max(dmax, 0), (g.W+t.S-1)/t.S) + 8 + 7) &^ 7
	for j := 0; j < t.K; j++ {
		q := t.Q0 + j*t.Dil
		ph, d := q-floorDiv(q, t.S)*t.S, floorDiv(q, t.S)
		l.tapOff = append(l.tapOff, int32(ph*l.PL+l.M+d))
		l.tapCol = append(l.tapCol, int32(q))
		l.tapPairs = append(l.tapPairs, int32(ph*l.PL+l.M+d), int32(q))
	}
	for i := range 8 {
		l.colBase[i] = int32(t.S * i)
	}
	l.colBase[8] = int32(8 * t.S)
	rows := &g.Rows
	for oh := 0; oh < rows.Out(); oh++ {
		if r0, r1 := rows.First[oh], rows.End[oh]; r0 < r1 {
			l.windows = append(l.windows, int32(r0*l.WOP), int32((r1-r0+rows.Step-1)/rows.Step))
		} else {
			l.windows = append(l.windows, 0, 0)
		}
	}
	for o := 0; o < wo; o++ {
		if g.Cols.First[o] >= g.Cols.End[o] {
			l.emptyCols = append(l.emptyCols, o)
		}
	}
	l.pairs = pairAxis(&g.Rows) && pairAxis(&g.Cols)
	return l
}

// orderKey is the integer type of a float's order keys: int32 for
// float32, int64 for float64.
type orderKey interface{ ~int32 | ~int64 }

// sentinelKey is the key of a column outside the input: the smallest K,
// below the key of −Inf, so it never replaces a key and any key replaces
// it.
func sentinelKey[K orderKey]() K {
	k := K(-1)
	return k << (8*unsafe.Sizeof(k) - 1)
}

// maxPoolScratch is one worker's buffers, from the kernels' scratch
// keepers: the phase buffer (sentinels outside the row's slots, which
// every row overwrites), the row pass's keys and plane indices, the column
// pass's running maxima, and the 64-bit keys of float32's NaN path (taken
// when a plane first needs them).
type maxPoolScratch[K orderKey] struct {
	phase, rowKey, colKey []K
	rowPos, colPos        []int32
	keys, rowBest         []int64
}

// getMaxPoolScratch returns a worker's buffers sized for l and g.
func getMaxPoolScratch[K orderKey](l *maxPoolLayout, g *Pool2dGeom) *maxPoolScratch[K] {
	ks := intScratch[K]()
	s := &maxPoolScratch[K]{
		phase:  ks.Get(l.taps.S * l.PL),
		rowKey: ks.Get(g.H * l.WOP),
		colKey: ks.Get(l.WOP),
		rowPos: intKeep.A.Get(g.H * l.WOP),
		colPos: intKeep.A.Get(l.WOP),
	}
	sentinel := sentinelKey[K]()
	for i := range s.phase {
		s.phase[i] = sentinel
	}
	return s
}

// release gives the buffers back.
func (s *maxPoolScratch[K]) release() {
	ks := intScratch[K]()
	ks.Put(s.phase)
	ks.Put(s.rowKey)
	ks.Put(s.colKey)
	intKeep.A.Put(s.rowPos)
	intKeep.A.Put(s.colPos)
	if s.keys != nil {
		intKeep.B.Put(s.keys)
		intKeep.B.Put(s.rowBest)
	}
}

// maxPoolFast is MaxPoolArgmax for planes of fewer than 2³¹ elements
// whose column axis is regular (layout l), with keys K of T's size.
func maxPoolFast[T Float, K orderKey](g *Pool2dGeom, l *maxPoolLayout, x []T, idx []int) {
	hw, ho, wo, w := g.H*g.W, g.Rows.Out(), l.WO, g.W
	rows := &g.Rows
	x32, _ := any(x).([]float32)
	par.For(g.Planes, func(lo, hi int) {
		s := getMaxPoolScratch[K](l, g)
		defer s.release()
		s32, _ := any(s).(*maxPoolScratch[int32])
		for p := lo; p < hi; p++ {
			plane := x[p*hw : (p+1)*hw]
			out := idx[p*ho*wo : (p+1)*ho*wo]
			done, nan := false, false
			if p+1 < hi && hw > 0 {
				// The next plane streams in while this one is reduced.
				prefetchLines(unsafe.Pointer(&x[(p+1)*hw]), hw*int(unsafe.Sizeof(x[0])))
			}
			if l.pairs {
				if maxPoolPairs(plane, out, w, ho, wo) {
					continue
				}
				done, nan = true, true // a NaN: the NaN path below
			}
			if x32 != nil && s32 != nil && !done {
				done, nan = maxPoolPlaneAsm(s32.phase, s32.rowKey, s32.rowPos, l, x32, p*hw, g.H, w)
			}
			if !done {
				for r := 0; r < g.H; r++ {
					nan = maxPoolPhases(s.phase, plane[r*w:(r+1)*w], l) || nan
					maxPoolRowPass(s.rowKey[r*l.WOP:(r+1)*l.WOP], s.rowPos[r*l.WOP:(r+1)*l.WOP], s.phase, l, int32(r*w))
				}
			} else if nan {
				nan = hasNaN(plane) // it may have read a NaN past the plane
			}
			if nan {
				if x32 != nil {
					if s.keys == nil {
						s.keys, s.rowBest = intKeep.B.Get(hw), intKeep.B.Get(g.H*wo)
					}
					maxPoolPlaneKeys64(g, x32[p*hw:(p+1)*hw], out, s.keys, s.rowBest)
				} else {
					maxPoolPlaneScan(g, plane, out)
				}
				continue
			}
			n := 0
			if s32 != nil {
				n = maxPoolColsAsm(out, s32.rowKey, s32.rowPos, l.windows, wo, l.WOP, rows.Step)
			}
			for oh := 0; oh < ho; oh++ {
				dst := out[oh*wo : (oh+1)*wo]
				r0, r1 := rows.First[oh], rows.End[oh]
				if emptyWindowRow(r0, r1, dst) {
					continue
				}
				if n < wo {
					maxPoolColPass(dst, s, l.WOP, r0, r1, rows.Step, n)
				}
				for _, ow := range l.emptyCols {
					dst[ow] = -1
				}
			}
		}
	})
}

// maxPoolPairs is the argmax of the 2×2 windows at (2·oh, 2·ow) of a
// plane of width w without a NaN (false at the first NaN: the plane is
// then left to the NaN path): the first of equal maxima in row-major order,
// as torch's scan (the order keys: −0 equal to +0).
// The windows hold no key conversion or row pass worth its setup: MNIST's
// [64, 16, 28, 28] took 3 ms of CPU through the separable path, a quarter
// of that here.
func maxPoolPairs[T Float](plane []T, out []int, w, ho, wo int) bool {
	for oh := 0; oh < ho; oh++ {
		base := 2 * oh * w
		r0, r1 := plane[base:base+2*wo], plane[base+w:base+w+2*wo]
		dst := out[oh*wo : (oh+1)*wo]
		for ow := range dst {
			c := 2 * ow
			a, b, d, e := r0[c], r0[c+1], r1[c], r1[c+1]
			if a != a || b != b || d != d || e != e {
				return false
			}
			// Integer keys: the compiler's conditional moves, no branch to
			// mispredict on random data.
			top, at := pairKey(a), base+c
			if k := pairKey(b); k > top {
				top, at = k, base+c+1
			}
			if k := pairKey(d); k > top {
				top, at = k, base+w+c
			}
			if pairKey(e) > top {
				at = base + w + c + 1
			}
			dst[ow] = at
		}
	}
	return true
}

// pairKey is v's order key (maxKey32 or maxKey64), v not NaN, as an
// int64.
func pairKey[T Float](v T) int64 {
	if unsafe.Sizeof(v) == 4 {
		return int64(maxKey32(float32(v)))
	}
	return maxKey64(float64(v))
}

// hasNaN reports whether x holds a NaN.
func hasNaN[T Float](x []T) bool {
	for _, v := range x {
		if v != v {
			return true
		}
	}
	return false
}

// maxPoolPhases writes the keys of row into the phase buffer and reports
// whether it holds a NaN.
func maxPoolPhases[T Float, K orderKey](phase []K, row []T, l *maxPoolLayout) bool {
	switch r := any(row).(type) {
	case []float32:
		return maxPoolPhases32(any(phase).([]int32), r, l)
	case []float64:
		return maxPoolPhases64(any(phase).([]int64), r, l)
	}
	return false
}

// maxPoolPhases32 is maxPoolPhases for float32.
func maxPoolPhases32(phase []int32, row []float32, l *maxPoolLayout) bool {
	c0, nan := maxPoolPhasesAsm(phase, row, l)
	s := l.taps.S
	for ph := range s {
		// Column c = t·s + ph of phase ph, from the first not done.
		t := (c0 - ph + s - 1) / s
		dst := phase[ph*l.PL+l.M:]
		for c := t*s + ph; c < len(row); c += s {
			v := row[c]
			nan = nan || v != v
			dst[t] = maxKey32(v)
			t++
		}
	}
	return nan
}

// maxPoolPhases64 is maxPoolPhases for float64.
func maxPoolPhases64(phase []int64, row []float64, l *maxPoolLayout) bool {
	nan := false
	s := l.taps.S
	for ph := range s {
		dst := phase[ph*l.PL+l.M:]
		t := 0
		for c := ph; c < len(row); c += s {
			v := row[c]
			nan = nan || v != v
			dst[t] = maxKey64(v)
			t++
		}
	}
	return nan
}

// maxKey64 is maxKey32 for float64.
func maxKey64(v float64) int64 {
	b := int64(math.Float64bits(v))
	s := b >> 63
	return (b&math.MaxInt64 ^ s) - s
}

// maxPoolRowPass is the row pass of one input row starting at plane index
// base: for each output column (and up to WOP), the largest key over its
// taps in order, the first one kept among equals, and its plane index.
func maxPoolRowPass[K orderKey](key []K, pos []int32, phase []K, l *maxPoolLayout, base int32) {
	if k32, ok := any(key).([]int32); ok && maxPoolRowPassAsm(k32, pos, any(phase).([]int32), l, base) {
		return
	}
	s := int32(l.taps.S)
	off := int(l.tapOff[0])
	copy(key, phase[off:off+len(key)])
	for o, c := 0, base+l.tapCol[0]; o < len(pos); o, c = o+1, c+s {
		pos[o] = c
	}
	pos = pos[:len(key)]
	for j := 1; j < len(l.tapOff); j++ {
		off := int(l.tapOff[j])
		taps := phase[off : off+len(key)]
		c := base + l.tapCol[j]
		for o, k := range taps {
			// Locals and a plain if: conditional moves, no branch on the
			// data.
			b, p := key[o], pos[o]
			if k > b {
				b, p = k, c
			}
			key[o], pos[o] = b, p
			c += s
		}
	}
}

// maxPoolColPass is the column pass of one output row whose window is
// rows r0, r0+step, ... below r1 (at least one), for output columns from
// on: dst[o] is the plane index of the first largest key of the rows'
// row-pass results.
func maxPoolColPass[K orderKey](dst []int, s *maxPoolScratch[K], wop, r0, r1, step, from int) {
	n := len(dst) - from
	best, at := s.colKey[:n], s.colPos[:n]
	copy(best, s.rowKey[r0*wop+from:])
	copy(at, s.rowPos[r0*wop+from:])
	for r := r0 + step; r < r1; r += step {
		keys, pos := s.rowKey[r*wop+from:][:n], s.rowPos[r*wop+from:][:n]
		for o, k := range keys {
			b, p, q := best[o], at[o], pos[o]
			if k > b {
				b, p = k, q
			}
			best[o], at[o] = b, p
		}
	}
	for o, p := range at {
		dst[from+o] = int(p)
	}
}
