package cpu

import (
	"unsafe"

	"github.com/gops-dev/gops/internal/par"
)

// psRoIPoolBins validates the boxes and computes every box's bins with
// ps_roi_pool's geometry (roi size end - start, at least 1), clipped to
// [0, H] and [0, W] in both kernels: K×PH×PW bins in a buffer of
// binScratch, which the caller puts back.
func psRoIPoolBins[T Float](g *PoolGeom, boxes []T) ([]PoolBin, error) {
	if err := CheckBoxes("PSRoIPool", boxes, g.N); err != nil {
		return nil, err
	}
	nb := g.PH * g.PW
	bins := binScratch().Get(len(boxes) / 5 * nb)[:0]
	for k := 0; k < len(boxes)/5; k++ {
		bins = PoolBins(g, boxes[5*k:5*k+5], false, bins)
	}
	return bins, nil
}

// PSRoIPoolForward computes out[k, co, ph, pw] (K×C'×PH×PW), the mean of
// input[batch(k), co·PH·PW + ph·PW + pw] over bin (ph, pw) of box k; an
// empty bin gives 0. A bin's sum is binSumLanes' (torchvision adds the
// elements in one chain: the last bits can differ). Parallel over input
// channels, each output written once, the same sum for any GOMAXPROCS
// and on every machine (NaN payloads aside: the AVX2 and Go loops, and
// a GPU, can pick another NaN's).
func PSRoIPoolForward[T Float](g *PoolGeom, input, boxes, out []T) error {
	bins, err := psRoIPoolBins(g, boxes)
	if err != nil {
		return err
	}
	defer binScratch().Put(bins)
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	order, starts := boxesByImage(g, boxes)
	// Parallel over input channels, each channel's planes image by image,
	// an image's boxes in order: every box's bin of channel ci reads plane
	// ci of its image, which stays in cache for all the image's boxes
	// (box-major order read a different plane for each of a box's C
	// outputs; channel by channel with the images' boxes mixed, the
	// images' planes and the next ones' did not fit the first-level cache).
	// The next plane's lines are asked for a few a box (psSpread): asked
	// for all at once before the plane, the bins' first reads still
	// missed the cache (perf: half the kernel's time at those loads;
	// BenchmarkPSRoIPool/kernel/forward, eight alternating rounds, median
	// 3.99 → 3.02 ms).
	par.ForGrains(g.C, psGrainOf(g.C, psGrain), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			co, bin := ci/nb, ci%nb
			for n := 0; n < g.N; n++ {
				if ci == lo && n == 0 {
					psPrefetchPlane(g, input, n, ci)
				}
				next := psSpread[T]{}
				switch {
				case n+1 < g.N:
					next = newPSSpread(g, input, n+1, ci, starts[n+1]-starts[n])
				case ci+1 < hi:
					next = newPSSpread(g, input, 0, ci+1, starts[n+1]-starts[n])
				}
				src := input[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
				for _, k := range order[starts[n]:starts[n+1]] {
					next.step()
					o := &out[(int(k)*cOut+co)*nb+bin]
					b := bins[int(k)*nb+bin]
					if b.empty() {
						*o = 0
						continue
					}
					*o = binSum(src[b.HS*g.W+b.WS:], g.W, b.HE-b.HS, b.WE-b.WS) / T(b.area())
				}
				next.rest()
			}
		}
	})
	return nil
}

// boxesByImage is the boxes' indices grouped by image, each image's in
// order, image n's at order[starts[n]:starts[n+1]] (the boxes are
// checked: their images are in [0, N)).
func boxesByImage[T Float](g *PoolGeom, boxes []T) (order []int32, starts []int) {
	nk := len(boxes) / 5
	starts = make([]int, g.N+1)
	for k := 0; k < nk; k++ {
		starts[int(boxes[5*k])+1]++
	}
	for n := 0; n < g.N; n++ {
		starts[n+1] += starts[n]
	}
	order = make([]int32, nk)
	at := append([]int(nil), starts[:g.N]...)
	for k := 0; k < nk; k++ {
		n := int(boxes[5*k])
		order[at[n]] = int32(k)
		at[n]++
	}
	return order, starts
}

// PSRoIPoolTranspose is the adjoint of PSRoIPoolForward in its input: each
// grad[k, co, ph, pw], divided by its bin's area, is added to every pixel of
// the bin in dst [N, C, H, W]. Parallel over input channels, each channel's
// boxes in order, so a pixel's additions come in box order for any
// GOMAXPROCS (bitwise reproducible).
func PSRoIPoolTranspose[T Float](g *PoolGeom, grad, boxes, dst []T) error {
	return psRoIPoolT(g, grad, boxes, dst, false)
}

// PSRoIPoolTransposeSet is PSRoIPoolTranspose into a dst it overwrites:
// each plane is cleared just before its channel's additions (the bits of
// PSRoIPoolTranspose into a zeroed dst), while it is in cache, so dst is
// not cleared in a pass of its own first.
func PSRoIPoolTransposeSet[T Float](g *PoolGeom, grad, boxes, dst []T) error {
	return psRoIPoolT(g, grad, boxes, dst, true)
}

// psRoIPoolT is PSRoIPoolTranspose, clearing each plane first when set.
// Channel-major like the forward pass: a channel's planes stay in cache
// while all the boxes add into them (box-major order visited every plane
// of dst for each box). The boxes stay in their order across the images
// (the forward's image by image measured no faster here: consecutive
// boxes of one image add into overlapping pixels).
func psRoIPoolT[T Float](g *PoolGeom, grad, boxes, dst []T, set bool) error {
	bins, err := psRoIPoolBins(g, boxes)
	if err != nil {
		return err
	}
	defer binScratch().Put(bins)
	plane, nk := g.H*g.W, len(boxes)/5
	if g.N*g.C*plane+g.C*nk*8 < par.InlineWork {
		psRoIPoolTChannels(g, grad, boxes, dst, bins, set, 0, g.C)
		return nil
	}
	par.ForGrains(g.C, psGrainOf(g.C, psGrain), func(lo, hi int) { psRoIPoolTChannels(g, grad, boxes, dst, bins, set, lo, hi) })
	return nil
}

// psRoIPoolTChannels is psRoIPoolT's channels [lo, hi).
func psRoIPoolTChannels[T Float](g *PoolGeom, grad, boxes, dst []T, bins []PoolBin, set bool, lo, hi int) {
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut, nk := g.C/nb, len(boxes)/5
	for ci := lo; ci < hi; ci++ {
		co, bin := ci/nb, ci%nb
		psPrefetchChannel(g, dst, ci, lo, hi)
		if set {
			for n := 0; n < g.N; n++ {
				clear(dst[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane])
			}
		}
		for k := 0; k < nk; k++ {
			b := bins[k*nb+bin]
			if b.empty() {
				continue
			}
			n := int(boxes[5*k])
			binAdd(dst[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane][b.HS*g.W+b.WS:], g.W, b.HE-b.HS, b.WE-b.WS, grad[(k*cOut+co)*nb+bin]/T(b.area()))
		}
	}
}

// psGrain is the most channels a worker of PSRoIPool's loops takes at a
// time (par.ForGrains; psGrainOf): inside a Gorgonia run the second
// worker started 0.2–0.8 ms after the caller (its thread woken late: the
// TapeMachine's locked thread hands its processor over on every run), and
// with half the channels each the caller then waited for it.
const psGrain = 8

// psGrainOf is the grain of n iterations of the position-sensitive ops'
// loops: most, or n split evenly over the workers when that is fewer.
func psGrainOf(n, most int) int {
	procs := par.Procs()
	return max(1, min(most, (n+procs-1)/procs))
}

// psSpread asks for a plane's cache lines a few at a time, spread over
// the steps of the loop before it (newPSSpread): step asks for the next
// few, rest for all that are left.
type psSpread[T Float] struct {
	p              unsafe.Pointer
	at, bytes, per int
}

// newPSSpread is a psSpread of plane (n, c) of x over steps steps.
func newPSSpread[T Float](g *PoolGeom, x []T, n, c, steps int) psSpread[T] {
	plane := g.H * g.W
	if plane == 0 {
		return psSpread[T]{}
	}
	bytes := plane * int(unsafe.Sizeof(T(0)))
	lines := (bytes + 63) / 64
	return psSpread[T]{p: unsafe.Pointer(&x[(n*g.C+c)*plane]), bytes: bytes, per: (lines + max(1, steps) - 1) / max(1, steps) * 64}
}

func (s *psSpread[T]) step() {
	if s.at < s.bytes {
		prefetchLines(unsafe.Add(s.p, s.at), min(s.per, s.bytes-s.at))
		s.at += s.per
	}
}

func (s *psSpread[T]) rest() {
	if s.at < s.bytes {
		prefetchLines(unsafe.Add(s.p, s.at), s.bytes-s.at)
		s.at = s.bytes
	}
}

// psPrefetchChannel asks for channel ci's planes of every image in x
// when ci is the first of [lo, hi), then for channel ci+1's (below hi).
// (The forward's spread requests measured no faster in the transpose.)
func psPrefetchChannel[T Float](g *PoolGeom, x []T, ci, lo, hi int) {
	for n := 0; n < g.N; n++ {
		if ci == lo {
			psPrefetchPlane(g, x, n, ci)
		}
		if ci+1 < hi {
			psPrefetchPlane(g, x, n, ci+1)
		}
	}
}

// psPrefetchPlane asks for the cache lines of plane (n, c) of x.
func psPrefetchPlane[T Float](g *PoolGeom, x []T, n, c int) {
	if plane := g.H * g.W; plane > 0 {
		prefetchLines(unsafe.Pointer(&x[(n*g.C+c)*plane]), plane*int(unsafe.Sizeof(T(0))))
	}
}

// binSum is the sum of rows rows of cols elements, the first from x[0],
// the next row w elements on, in binSumLanes' order: by the AVX2 loop
// where the bin's blocks fit x, else by the Go loop.
func binSum[T Float](x []T, w, rows, cols int) T {
	if binFits(x, w, rows, cols) {
		return binSumFit(x, w, rows, cols)
	}
	return binSumLanes(x, w, rows, cols)
}

// binSumLanes is binSum's order, that of a vector of V lanes (8 float32,
// 4 float64: 32 bytes, on every machine): lane l adds, from +0, the
// elements of the columns j ≡ l (mod V), row by row, a row's in order;
// then the lanes are added as a tree, ((l0 + l4) + (l2 + l6)) + ((l1 +
// l5) + (l3 + l7)), or (l0 + l2) + (l1 + l3). The CUDA twin sums alike.
// One chain of additions through the bin (torchvision's order) bounded
// the forward: one core, eight alternating rounds, rows' sums in
// independent chains alone took the kernel from 7.41 to 5.20 ms least.
func binSumLanes[T Float](x []T, w, rows, cols int) T {
	var l [8]T
	v := 32 / int(unsafe.Sizeof(T(0)))
	for r := 0; r < rows; r++ {
		for j, e := range x[r*w:][:cols] {
			l[j&(v-1)] += e
		}
	}
	if v == 8 {
		return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
	}
	return (l[0] + l[2]) + (l[1] + l[3])
}

// binAdd adds d to rows rows of cols elements, the first from x[0], the
// next row w elements on: by the AVX2 loop where
// the bin's blocks fit x, which must end where the caller's own elements
// do (the loop rewrites a partial block's other elements as they were).
// Not inlined: inside the callers' loops the compiler kept its Go loop's
// counter on the stack.
//
//go:noinline
func binAdd[T Float](x []T, w, rows, cols int, d T) {
	if binAddAsm(x, w, rows, cols, d) {
		return
	}
	for ; rows > 0; rows-- {
		row := x[:cols]
		for i := range row {
			row[i] += d
		}
		x = x[min(w, len(x)):]
	}
}
