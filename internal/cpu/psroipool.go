package cpu

import (
	"unsafe"

	"github.com/gops-dev/gops/internal/par"
)

// psRoIPoolBins validates the boxes and computes every box's bins with
// ps_roi_pool's geometry (roi size end - start, at least 1), clipped to
// [0, H] and [0, W] in both kernels. K×PH×PW bins.
func psRoIPoolBins[T Float](g *PoolGeom, boxes []T) ([]PoolBin, error) {
	if err := CheckBoxes("PSRoIPool", boxes, g.N); err != nil {
		return nil, err
	}
	nb := g.PH * g.PW
	bins := make([]PoolBin, 0, len(boxes)/5*nb)
	for k := 0; k < len(boxes)/5; k++ {
		bins = PoolBins(g, boxes[5*k:5*k+5], false, bins)
	}
	return bins, nil
}

// PSRoIPoolForward computes out[k, co, ph, pw] (K×C'×PH×PW), the mean of
// input[batch(k), co·PH·PW + ph·PW + pw] over bin (ph, pw) of box k; an
// empty bin gives 0; a bin's sum adds each row's sum (binSum's order,
// not torchvision's one chain: the last bits can differ). Parallel over
// input channels, each output written once, the same sum for any
// GOMAXPROCS.
func PSRoIPoolForward[T Float](g *PoolGeom, input, boxes, out []T) error {
	bins, err := psRoIPoolBins(g, boxes)
	if err != nil {
		return err
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	order, starts := boxesByImage(g, boxes)
	// Parallel over input channels, each channel's planes image by image,
	// an image's boxes in order: every box's bin of channel ci reads plane
	// ci of its image, which stays in cache for all the image's boxes
	// (box-major order read a different plane for each of a box's C
	// outputs; channel by channel with the images' boxes mixed, the
	// images' planes and the next ones' did not fit the first-level cache).
	par.For(g.C, func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			co, bin := ci/nb, ci%nb
			for n := 0; n < g.N; n++ {
				psPrefetch(g, input, ci, n, lo)
				src := input[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
				for _, k := range order[starts[n]:starts[n+1]] {
					o := &out[(int(k)*cOut+co)*nb+bin]
					b := bins[int(k)*nb+bin]
					if b.empty() {
						*o = 0
						continue
					}
					*o = binSum(src[b.HS*g.W+b.WS:], g.W, b.HE-b.HS, b.WE-b.WS) / T(b.area())
				}
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
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut, nk := g.C/nb, len(boxes)/5
	par.ForWork(g.C, g.N*g.C*plane+g.C*nk*8, func(lo, hi int) {
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
				binAdd(dst[(n*g.C+ci)*plane+b.HS*g.W+b.WS:], g.W, b.HE-b.HS, b.WE-b.WS, grad[(k*cOut+co)*nb+bin]/T(b.area()))
			}
		}
	})
	return nil
}

// psPrefetch asks for plane (n, ci) of x [N, C, H, W] when it is the
// first of a worker's range (channel lo, image 0), then for the plane
// visited after it (image n+1's, or channel ci+1's of image 0; past the
// range's end, a plane the next worker reads: harmless): the boxes read a
// plane in no order the hardware prefetchers follow.
func psPrefetch[T Float](g *PoolGeom, x []T, ci, n, lo int) {
	if ci == lo && n == 0 {
		psPrefetchPlane(g, x, n, ci)
	}
	switch {
	case n+1 < g.N:
		psPrefetchPlane(g, x, n+1, ci)
	case ci+1 < g.C:
		psPrefetchPlane(g, x, 0, ci+1)
	}
}

// psPrefetchChannel asks for channel ci's planes of every image in x
// when ci is the first of [lo, hi), then for channel ci+1's (below hi).
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
// the next row w elements on: each row's elements added from its first in
// order, the rows' sums added to +0 in order (the CUDA twin's order; rows
// four and two at a time, their sums independent chains: one chain of
// additions through the whole bin, torchvision's order, took a third
// longer). Not inlined: inside the callers' loops the compiler kept its
// counter on the stack.
//
//go:noinline
func binSum[T Float](x []T, w, rows, cols int) T {
	var s T
	if cols <= 0 {
		return s
	}
	for ; rows >= 4; rows -= 4 {
		r0, r1, r2, r3 := x[:cols], x[w:][:cols], x[2*w:][:cols], x[3*w:][:cols]
		a, b, c, d := r0[0], r1[0], r2[0], r3[0]
		for j := 1; j < len(r0); j++ {
			a += r0[j]
			b += r1[j]
			c += r2[j]
			d += r3[j]
		}
		s += a
		s += b
		s += c
		s += d
		x = x[min(4*w, len(x)):]
	}
	for ; rows >= 2; rows -= 2 {
		r0, r1 := x[:cols], x[w:][:cols]
		a, b := r0[0], r1[0]
		for j := 1; j < len(r0); j++ {
			a += r0[j]
			b += r1[j]
		}
		s += a
		s += b
		x = x[min(2*w, len(x)):]
	}
	if rows > 0 {
		r0 := x[:cols]
		a := r0[0]
		for _, v := range r0[1:] {
			a += v
		}
		s += a
	}
	return s
}

// binAdd adds d to rows rows of cols elements, the first from x[0], the
// next row w elements on (not inlined, as binSum).
//
//go:noinline
func binAdd[T Float](x []T, w, rows, cols int, d T) {
	for ; rows > 0; rows-- {
		row := x[:cols]
		for i := range row {
			row[i] += d
		}
		x = x[min(w, len(x)):]
	}
}
