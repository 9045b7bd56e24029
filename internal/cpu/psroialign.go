package cpu

import (
	"fmt"

	"github.com/gops-dev/gops/internal/par"
)

// Position-sensitive pooling: output channel co of bin b (row-major over
// PH×PW) reads input channel co·PH·PW + b, so input channel ci belongs to
// output channel ci / (PH·PW) and bin ci % (PH·PW) of every box.

// PSRoIAlignGrids validates the boxes and computes every box's sampling grid
// with torchvision's ps_roi_align geometry: coordinates times spatial_scale
// in the working dtype, minus 0.5, no roi size clamp, the adaptive grid and
// bilinear rule of roi_align. The returned RoIAlignGeom describes that grid
// for roiAlignBoxGrid and taps.
func PSRoIAlignGrids[T Float](g *PoolGeom, boxes []T) (*RoIAlignGeom, []RoIAlignBox[T], error) {
	if err := CheckBoxes("PSRoIAlign", boxes, g.N); err != nil {
		return nil, nil, err
	}
	// roiAlignBoxGrid scales in float64; ps_roi_align multiplies in T. The
	// boxes are therefore scaled here, in T, and handed over with scale 1:
	// T(float64(v) - 0.5) is then the T subtraction exactly (rounding twice
	// through float64 is harmless for one subtraction of float32 values).
	ag := &RoIAlignGeom{N: g.N, C: g.C, H: g.H, W: g.W, PH: g.PH, PW: g.PW,
		Scale: 1, SamplingRatio: g.SamplingRatio, Aligned: true}
	scale := T(g.Scale)
	grids := make([]RoIAlignBox[T], len(boxes)/5)
	for k := range grids {
		b := boxes[5*k : 5*k+5]
		scaled := [5]T{b[0], T(b[1] * scale), T(b[2] * scale), T(b[3] * scale), T(b[4] * scale)}
		var err error
		if grids[k], err = roiAlignBoxGrid(ag, scaled[:]); err != nil {
			return nil, nil, fmt.Errorf("gops: PSRoIAlign: box %d: %w", k, err)
		}
	}
	return ag, grids, nil
}

// insideTaps appends to dst the taps of points that are inside the input
// (ps_roi_align reads and writes nothing for the others).
func insideTaps[T Float](dst, taps []bilinearTap[T]) []bilinearTap[T] {
	for i := range taps {
		if !outsideTap(&taps[i]) {
			dst = append(dst, taps[i])
		}
	}
	return dst
}

// PSRoIAlignForward computes out[k, co, ph, pw] (K×C'×PH×PW, C' = C/(PH·PW)),
// the average of the bilinear samples of input[batch(k), co·PH·PW + ph·PW +
// pw] in bin (ph, pw) of box k; a bin without samples gives 0. For each bin,
// its inside points are read from the C' planes of the bin in turn (planes
// PH·PW apart, at the same offsets). Parallel over boxes; each box writes
// only its own output.
func PSRoIAlignForward[T Float](g *PoolGeom, input, boxes, out []T) error {
	ag, grids, err := PSRoIAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	par.For(len(grids), func(lo, hi int) {
		var taps, in []bilinearTap[T]
		var spans []binSpan
		for k := lo; k < hi; k++ {
			b := &grids[k]
			n := int(boxes[5*k])
			o := out[k*cOut*nb : (k+1)*cOut*nb]
			if b.GH*b.GW == 0 {
				clear(o)
				continue
			}
			b.sampleChunks(ag, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
				for _, sp := range spans {
					in = insideTaps(in[:0], taps[sp.lo:sp.hi])
					co := 0
					// Two channels at once: independent chains of additions.
					for ; co+2 <= cOut; co += 2 {
						ci := co*nb + sp.bin
						x0 := input[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
						x1 := input[(n*g.C+ci+nb)*plane : (n*g.C+ci+nb+1)*plane]
						var v0, v1 T
						for i := range in {
							t := &in[i]
							p0, p1, p2, p3 := t.pos[0], t.pos[1], t.pos[2], t.pos[3]
							w0, w1, w2, w3 := t.w[0], t.w[1], t.w[2], t.w[3]
							v0 += w0*x0[p0] + w1*x0[p1] + w2*x0[p2] + w3*x0[p3]
							v1 += w0*x1[p0] + w1*x1[p1] + w2*x1[p2] + w3*x1[p3]
						}
						psFinish(o[co*nb+sp.bin:], sp, v0, b.Count)
						psFinish(o[(co+1)*nb+sp.bin:], sp, v1, b.Count)
					}
					for ; co < cOut; co++ {
						ci := co*nb + sp.bin
						x := input[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
						var v T
						for i := range in {
							t := &in[i]
							v += t.w[0]*x[t.pos[0]] + t.w[1]*x[t.pos[1]] + t.w[2]*x[t.pos[2]] + t.w[3]*x[t.pos[3]]
						}
						psFinish(o[co*nb+sp.bin:], sp, v, b.Count)
					}
				}
			})
		}
	})
	return nil
}

// psFinish stores v, a chunk's sum for a bin, at o[0]: added to the sum of
// the bin's earlier chunks, divided by count when the bin is complete.
func psFinish[T Float](o []T, sp binSpan, v, count T) {
	if !sp.first {
		v += o[0]
	}
	if sp.last {
		v /= count
	}
	o[0] = v
}

// PSRoIAlignTranspose is the adjoint of PSRoIAlignForward in its input: it
// scatters grad[k, co, ph, pw] back onto dst [N, C, H, W] with the same
// weights. Parallel over input channels taken bin by bin (all channels of
// bin 0, then of bin 1, ...), so that each worker samples only its bins'
// points; each channel visits boxes in order, so sums are bitwise
// reproducible.
func PSRoIAlignTranspose[T Float](g *PoolGeom, grad, boxes, dst []T) error {
	ag, grids, err := PSRoIAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	par.For(g.C, func(lo, hi int) { // [lo, hi) of bin·C' + co
		var taps, in []bilinearTap[T]
		var spans []binSpan
		for k := range grids {
			b := &grids[k]
			n := int(boxes[5*k])
			div := newDivider(b)
			b.sampleBinChunks(ag, lo/cOut, (hi-1)/cOut+1, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
				for _, sp := range spans {
					in = insideTaps(in[:0], taps[sp.lo:sp.hi])
					co, co1 := max(lo-sp.bin*cOut, 0), min(hi-sp.bin*cOut, cOut)
					// As torchvision: (g·w)/count, here for two channels at
					// once (independent chains of additions).
					for ; co+2 <= co1; co += 2 {
						ci := co*nb + sp.bin
						g0, g1 := grad[(k*cOut+co)*nb+sp.bin], grad[(k*cOut+co+1)*nb+sp.bin]
						x0 := dst[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
						x1 := dst[(n*g.C+ci+nb)*plane : (n*g.C+ci+nb+1)*plane]
						for i := range in {
							t := &in[i]
							for j, p := range t.pos {
								if div.exact {
									x0[p] += g0 * t.w[j] * div.inv
									x1[p] += g1 * t.w[j] * div.inv
								} else {
									x0[p] += g0 * t.w[j] / div.count
									x1[p] += g1 * t.w[j] / div.count
								}
							}
						}
					}
					for ; co < co1; co++ {
						ci := co*nb + sp.bin
						gv := grad[(k*cOut+co)*nb+sp.bin]
						x := dst[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
						for i := range in {
							t := &in[i]
							for j, p := range t.pos {
								if div.exact {
									x[p] += gv * t.w[j] * div.inv
								} else {
									x[p] += gv * t.w[j] / div.count
								}
							}
						}
					}
				}
			})
		}
	})
	return nil
}
