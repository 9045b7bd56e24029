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
// pw] in bin (ph, pw) of box k; a bin without samples gives 0. Parallel
// over bins and blocks of output channels (psBinMajor): for each bin, all
// the boxes read its points from the bin's planes (C' an image, PH·PW
// apart), which stay in cache meanwhile (box by box, every box read all C
// planes at a few points each). Each output is one bin's sum in the order
// of its points (in sampleChunks' pieces), each channel by the same loop
// whatever the goroutines' ranges, so the result is bitwise the same for
// any GOMAXPROCS.
func PSRoIAlignForward[T Float](g *PoolGeom, input, boxes, out []T) error {
	ag, grids, err := PSRoIAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	psBinMajor(g, ag, grids, boxes, func(k, n int, sp binSpan, in []bilinearTap[T], empty bool, co, co1 int) {
		o := out[k*cOut*nb : (k+1)*cOut*nb]
		if empty { // a box without sample points
			for ; co < co1; co++ {
				o[co*nb+sp.bin] = 0
			}
			return
		}
		count := grids[k].Count
		// Four channels at once, then two: independent chains of
		// additions, and more of the planes' loads in flight.
		for ; co+4 <= co1; co += 4 {
			ci := co*nb + sp.bin
			x0 := input[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
			x1 := input[(n*g.C+ci+nb)*plane : (n*g.C+ci+nb+1)*plane]
			x2 := input[(n*g.C+ci+2*nb)*plane : (n*g.C+ci+2*nb+1)*plane]
			x3 := input[(n*g.C+ci+3*nb)*plane : (n*g.C+ci+3*nb+1)*plane]
			var v0, v1, v2, v3 T
			for i := range in {
				t := &in[i]
				p0, p1, p2, p3 := t.pos[0], t.pos[1], t.pos[2], t.pos[3]
				w0, w1, w2, w3 := t.w[0], t.w[1], t.w[2], t.w[3]
				v0 += w0*x0[p0] + w1*x0[p1] + w2*x0[p2] + w3*x0[p3]
				v1 += w0*x1[p0] + w1*x1[p1] + w2*x1[p2] + w3*x1[p3]
				v2 += w0*x2[p0] + w1*x2[p1] + w2*x2[p2] + w3*x2[p3]
				v3 += w0*x3[p0] + w1*x3[p1] + w2*x3[p2] + w3*x3[p3]
			}
			psFinish(o[co*nb+sp.bin:], sp, v0, count)
			psFinish(o[(co+1)*nb+sp.bin:], sp, v1, count)
			psFinish(o[(co+2)*nb+sp.bin:], sp, v2, count)
			psFinish(o[(co+3)*nb+sp.bin:], sp, v3, count)
		}
		for ; co+2 <= co1; co += 2 {
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
			psFinish(o[co*nb+sp.bin:], sp, v0, count)
			psFinish(o[(co+1)*nb+sp.bin:], sp, v1, count)
		}
		for ; co < co1; co++ {
			ci := co*nb + sp.bin
			x := input[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane]
			var v T
			for i := range in {
				t := &in[i]
				v += t.w[0]*x[t.pos[0]] + t.w[1]*x[t.pos[1]] + t.w[2]*x[t.pos[2]] + t.w[3]*x[t.pos[3]]
			}
			psFinish(o[co*nb+sp.bin:], sp, v, count)
		}
	}, nil)
	return nil
}

// psBinMajor runs the goroutines over ranges of (bin, block of
// psChannelBlock output channels) units, bin by bin (C' = C/(PH·PW) output
// channels; channel co of bin b reads input channel co·PH·PW + b): for each
// bin of its range start(bin, co, co1) once (nil: none), for its channels
// [co, co1), then for every box k in order (image n) each piece of the
// bin's points sampleChunks cuts, fn(k, n, span, inside points, empty,
// co, co1); a box without sample points (empty) gets one call. The
// ranges start and end on block boundaries (or at C'), so which of fn's loops
// (four, two or one channel at a time) does a channel depends on the
// channel alone, not on GOMAXPROCS: the compiler may order an addition's
// operands differently in each, which picks a NaN's payload.
func psBinMajor[T Float](g *PoolGeom, ag *RoIAlignGeom, grids []RoIAlignBox[T], boxes []T, fn func(k, n int, sp binSpan, in []bilinearTap[T], empty bool, co, co1 int), start func(bin, co, co1 int)) {
	nb := g.PH * g.PW
	cOut := g.C / nb
	blocks := (cOut + psChannelBlock - 1) / psChannelBlock // a bin's
	// A bin a grain (par.ForGrains; fewer units when there are fewer bins
	// than workers): a worker late to start (inside a Gorgonia run,
	// 0.2–0.8 ms) leaves the caller the bins it has not reached, where
	// halves of the units left the caller waiting. Grains count whole
	// blocks, so ranges stay on block boundaries.
	par.ForGrains(nb*blocks, psGrainOf(nb*blocks, blocks), func(lo, hi int) {
		var taps, in []bilinearTap[T]
		var spans []binSpan
		for bin := lo / blocks; bin*blocks < hi; bin++ {
			co := max(lo-bin*blocks, 0) * psChannelBlock
			co1 := min(min(hi-bin*blocks, blocks)*psChannelBlock, cOut)
			if start != nil {
				start(bin, co, co1)
			}
			for k := range grids {
				b := &grids[k]
				n := int(boxes[5*k])
				if b.GH*b.GW == 0 {
					fn(k, n, binSpan{bin: bin, first: true, last: true}, nil, true, co, co1)
					continue
				}
				b.sampleBinChunks(ag, bin, bin+1, &taps, &spans, func(taps []bilinearTap[T], spans []binSpan) {
					for _, sp := range spans {
						in = insideTaps(in[:0], taps[sp.lo:sp.hi])
						fn(k, n, sp, in, false, co, co1)
					}
				})
			}
		}
	})
}

// psChannelBlock is psBinMajor's unit of output channels: PSRoIAlign's
// forward sums four channels at once, its transpose two, so it must stay a
// multiple of four for a channel's loop to be independent of GOMAXPROCS.
const psChannelBlock = 4

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
// weights. Bin by bin as the forward pass (psBinMajor); each plane takes
// its boxes' additions in box order, so sums are bitwise reproducible.
func PSRoIAlignTranspose[T Float](g *PoolGeom, grad, boxes, dst []T) error {
	return psRoIAlignT(g, grad, boxes, dst, false)
}

// PSRoIAlignTransposeSet is PSRoIAlignTranspose into a dst it overwrites:
// each bin's planes are cleared just before their additions (the bits of
// PSRoIAlignTranspose into a zeroed dst).
func PSRoIAlignTransposeSet[T Float](g *PoolGeom, grad, boxes, dst []T) error {
	return psRoIAlignT(g, grad, boxes, dst, true)
}

// psRoIAlignT is PSRoIAlignTranspose, clearing each plane first when set.
func psRoIAlignT[T Float](g *PoolGeom, grad, boxes, dst []T, set bool) error {
	ag, grids, err := PSRoIAlignGrids(g, boxes)
	if err != nil {
		return err
	}
	plane, nb := g.H*g.W, g.PH*g.PW
	cOut := g.C / nb
	var start func(bin, co, co1 int)
	if set {
		start = func(bin, co, co1 int) {
			for n := 0; n < g.N; n++ {
				for c := co; c < co1; c++ {
					ci := c*nb + bin
					clear(dst[(n*g.C+ci)*plane : (n*g.C+ci+1)*plane])
				}
			}
		}
	}
	divs := make([]divider[T], len(grids)) // each box's, once (psBinMajor visits a box once a bin)
	for k := range grids {
		divs[k] = newDivider(&grids[k])
	}
	psBinMajor(g, ag, grids, boxes, func(k, n int, sp binSpan, in []bilinearTap[T], _ bool, co, co1 int) {
		div := divs[k]
		// As torchvision: (g·w)/count, here for two channels at once
		// (independent chains of additions).
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
	}, start)
	return nil
}
