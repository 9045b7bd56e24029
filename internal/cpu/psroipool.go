package cpu

import "github.com/gops-dev/gops/internal/par"

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
			for k := 0; k < len(boxes)/5; k++ {
				o := &out[(k*cOut+co)*nb+bin]
				b := bins[k*nb+bin]
				if b.empty() {
					*o = 0
					continue
				}
				n := int(boxes[5*k])
				x := input[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
				var s T
				for h := b.HS; h < b.HE; h++ {
					for _, v := range x[h*g.W+b.WS : h*g.W+b.WE] {
						s += v
					}
				}
				*o = s / T(b.area())
			}
		}
	})
	return nil
}

// PSRoIPoolTranspose is the adjoint of PSRoIPoolForward in its input: each
// grad[k, co, ph, pw], divided by its bin's area, is added to every pixel of
// the bin in dst [N, C, H, W]. Parallel over input channels, boxes in order.
func PSRoIPoolTranspose[T Float](g *PoolGeom, grad, boxes, dst []T) error {
	bins, err := psRoIPoolBins(g, boxes)
	if err != nil {
		return err
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	par.For(g.C, func(lo, hi int) {
		for k := 0; k < len(boxes)/5; k++ {
			n := int(boxes[5*k])
			for ci := lo; ci < hi; ci++ {
				co, bin := ci/nb, ci%nb
				b := bins[k*nb+bin]
				if b.empty() {
					continue
				}
				d := grad[(k*cOut+co)*nb+bin] / T(b.area())
				x := dst[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
				for h := b.HS; h < b.HE; h++ {
					row := x[h*g.W+b.WS : h*g.W+b.WE]
					for i := range row {
						row[i] += d
					}
				}
			}
		}
	})
	return nil
}
