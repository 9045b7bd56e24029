//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// avgOne2S and avgOne2D (poolglobal_amd64.s, written by
// scripts/gen_avgone.py) compute out[p] = (Σ over rows r0 ≤ r < r1 of
// (Σ over columns c0 ≤ c < c1 of x[p·hw + r·w + c])) / d in AVX2 for the
// 8·groups (float32) or 4·groups (float64) planes of hw elements from x,
// each sum from +0 in order, with tmp (hw rounded up to 8 or 4, times 8 or
// 4 elements) holding a group's planes transposed.
//
//go:generate python3 ../../scripts/gen_avgone.py poolglobal_amd64.s
//go:noescape
func avgOne2S(out, x, tmp *float32, groups, hw, w, r0, r1, c0, c1 int, d float32)

//go:noescape
func avgOne2D(out, x, tmp *float64, groups, hw, w, r0, r1, c0, c1 int, d float64)

// avgOne2PairS and avgOne2PairD are avgOne2S and avgOne2D for pairs
// groups of planes a call (16 float32 or 8 float64 planes a step), tmp
// rows of 16 or 8 elements: two groups' sums as independent chains, which
// the one-group kernels' dependent additions left waiting.
//
//go:noescape
func avgOne2PairS(out, x, tmp *float32, pairs, hw, w, r0, r1, c0, c1 int, d float32)

//go:noescape
func avgOne2PairD(out, x, tmp *float64, pairs, hw, w, r0, r1, c0, c1 int, d float64)

// avgOne2WholePairD is avgOne2PairD for a window that is each plane
// whole (rows [0, hw/w), columns [0, w)), without tmp: each block of 4
// elements of the 8 planes is transposed in registers and added at once,
// a row's sum closed into its plane's where the row ends — the same
// additions in the same order. x holds 8·pairs planes of hw elements.
//
//go:noescape
func avgOne2WholePairD(out, x *float64, pairs, hw, w int, d float64)

// avgOneChunk is about the most elements of x one call of avgOne2S,
// avgOne2D or their pairs' kernels reads.
const avgOneChunk = 1 << 18

// avgOneAVX2 enables the AVX2 kernels (tests switch them off). They run
// on AVX-512 CPUs too: AVX-512 kernels of 16 float32 (8 float64) planes
// a step, one chain of sums, ran 1.6× (float32) and 2× (float64) slower
// than the pairs' two chains on a Zen 4 VM (BenchmarkAvgPoolOne, one core)
// and were dropped.
var avgOneAVX2 = cpu.X86.HasAVX2

// avgOneLanes is the number of planes avgOneVec takes a step for T: 8
// in float32 and 4 in float64 with AVX2, else 0 (the Go loops do every
// plane).
func avgOneLanes[T Float](hw int) int {
	if hw <= 0 || !avgOneAVX2 {
		return 0
	}
	return int(32 / unsafe.Sizeof(T(0)))
}

// avgOneVec is avgPoolOne's loop for avgOneLanes·groups planes from x
// (hw elements each) into out: the window rows [r0, r1), columns
// [c0, c1) of planes w wide, divided by d.
func avgOneVec[T Float](out, x []T, groups, hw, w, r0, r1, c0, c1 int, d T) {
	lanes := avgOneLanes[T](hw)
	if groups <= 0 || lanes == 0 {
		return
	}
	_, _ = out[groups*lanes-1], x[groups*lanes*hw-1]
	// a pair of groups' planes transposed (2·lanes values an element)
	tmp := make([]T, 2*((hw+lanes-1)/lanes*lanes)*lanes)
	// A call at a time reads about avgOneChunk elements (or one group's
	// planes): the collector cannot stop a goroutine inside the assembly;
	// an even number of groups where two or more fit, for avgOne2's pairs.
	per := avgOneChunk / (lanes * hw)
	if per >= 2 {
		per &^= 1
	} else {
		per = 1
	}
	for g0 := 0; g0 < groups; g0 += per {
		n, o, xs := min(per, groups-g0), out[g0*lanes:], x[g0*lanes*hw:]
		avgOne2(o, xs, tmp, n, lanes, hw, w, r0, r1, c0, c1, d)
	}
}

// avgOne2 is avgOneVec's AVX2 call for groups groups of lanes planes:
// pairs of groups by avgOne2PairS or avgOne2PairD (avgOne2WholePairD
// where the window is each plane whole), an odd last group by avgOne2S
// or avgOne2D.
func avgOne2[T Float](out, x, tmp []T, groups, lanes, hw, w, r0, r1, c0, c1 int, d T) {
	whole := r0 == 0 && c0 == 0 && c1 == w && r1*w == hw
	call := func(pair bool, out, x []T, n int) {
		switch f32 := unsafe.Sizeof(T(0)) == 4; {
		case !f32 && pair && whole:
			avgOne2WholePairD(&asF64(out)[0], &asF64(x)[0], n, hw, w, float64(d))
		case f32 && pair:
			avgOne2PairS(&asF32(out)[0], &asF32(x)[0], &asF32(tmp)[0], n, hw, w, r0, r1, c0, c1, float32(d))
		case f32:
			avgOne2S(&asF32(out)[0], &asF32(x)[0], &asF32(tmp)[0], n, hw, w, r0, r1, c0, c1, float32(d))
		case pair:
			avgOne2PairD(&asF64(out)[0], &asF64(x)[0], &asF64(tmp)[0], n, hw, w, r0, r1, c0, c1, float64(d))
		default:
			avgOne2D(&asF64(out)[0], &asF64(x)[0], &asF64(tmp)[0], n, hw, w, r0, r1, c0, c1, float64(d))
		}
	}
	pairs := groups / 2
	if pairs > 0 {
		call(true, out, x, pairs)
	}
	if groups%2 == 1 {
		call(false, out[2*pairs*lanes:], x[2*pairs*lanes*hw:], 1)
	}
}
