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
// empty bin gives 0. Parallel over input channels, boxes in order (each
// output is written once, the same sum in the same order).
func PSRoIPoolForward[T Float](g *PoolGeom, input, boxes, out []T) error {
	bins, err := psRoIPoolBins(g, boxes)
	if err != nil {
		return err
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	// Parallel over input channels, boxes in order: every box's bin of
	// channel ci reads plane ci of its image, which stays in cache for
	// all the boxes (box-major order read a different plane for each of a
	// box's C outputs).
	par.For(g.C, func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			co, bin := ci/nb, ci%nb
			psPrefetch(g, input, ci, lo, hi)
			for k := 0; k < len(boxes)/5; k++ {
				o := &out[(k*cOut+co)*nb+bin]
				b := bins[k*nb+bin]
				if b.empty() {
					*o = 0
					continue
				}
				n := int(boxes[5*k])
				*o = binSum(input[(n*g.C+ci)*plane+b.HS*g.W+b.WS:], g.W, b.HE-b.HS, b.WE-b.WS) / T(b.area())
			}
		}
	})
	return nil
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
// of dst for each box).
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
			psPrefetch(g, dst, ci, lo, hi)
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

// psPrefetch asks for channel ci's planes of every image in x [N, C, H, W]
// when it is the first of [lo, hi), then for channel ci+1's (below hi):
// the boxes read a plane in no order the hardware prefetchers follow.
func psPrefetch[T Float](g *PoolGeom, x []T, ci, lo, hi int) {
	plane := g.H * g.W
	planes := func(c int) {
		for n := 0; n < g.N; n++ {
			prefetchLines(unsafe.Pointer(&x[(n*g.C+c)*plane]), plane*int(unsafe.Sizeof(T(0))))
		}
	}
	if plane == 0 {
		return
	}
	if ci == lo {
		planes(ci)
	}
	if ci+1 < hi {
		planes(ci + 1)
	}
}

// binSum is the sum from +0, in row-major order, of rows rows of cols
// elements, the first from x[0], the next row w elements on. Not inlined:
// inside the callers' loops the compiler kept its counter on the stack.
//
//go:noinline
func binSum[T Float](x []T, w, rows, cols int) T {
	var s T
	for ; rows > 0; rows-- {
		for _, v := range x[:cols] {
			s += v
		}
		x = x[min(w, len(x)):]
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
