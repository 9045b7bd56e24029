//go:build cuda

package gops

import (
	"fmt"
	"math"

	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Host side of the kernel launches: the boxes are copied to the host and
// checked and gridded there by the CPU code (batch index, finite coordinates,
// bounded sampling grid), so the GPU and CPU paths fail alike.

// intSize is a size the kernels index with a C int.
type intSize struct {
	what string
	v    int
}

// fitInt32 checks that the inputs, the output and the given sizes fit the
// kernels' int (int32): H·W planes, packed box grids and bins, index arrays.
func (c *gpuCall) fitInt32(in []gorgonia.Value, out gorgonia.Value, sizes ...intSize) error {
	for i, v := range in {
		sizes = append(sizes, intSize{fmt.Sprintf("input %d (%v)", i, v.Shape()), v.Shape().TotalSize()})
	}
	sizes = append(sizes, intSize{fmt.Sprintf("the result (%v)", out.Shape()), out.Shape().TotalSize()})
	for _, s := range sizes {
		if s.v < 0 || s.v > math.MaxInt32 {
			return fmt.Errorf("gops: %s: %s: %d elements exceed the CUDA kernels' int range", c.name, s.what, s.v)
		}
	}
	return nil
}

// packGrids packs each box's sampling grid as the kernels read it: batch
// index, startY, startX, binH, binW, gh, gw, count.
func packGrids[T float](grids []roiAlignBox[T], boxes []T) []T {
	p := make([]T, 0, 8*len(grids))
	for k, b := range grids {
		p = append(p, boxes[5*k], b.startY, b.startX, b.binH, b.binW, T(b.gh), T(b.gw), b.count)
	}
	return p
}

// boxGrids downloads the boxes and returns their packed grids on the device.
// With nb > 0 (PSRoIAlign) a box's nb·gh·gw points must fit an int: the
// forward kernel numbers them bin·gh·gw + s.
func boxGrids[T float](c *gpuCall, boxes gorgonia.Value, nb int, grids func([]T) ([]roiAlignBox[T], error)) (cu.DevicePtr, error) {
	bx, err := download[T](c, boxes)
	if err != nil {
		return 0, err
	}
	gr, err := grids(bx)
	if err != nil {
		return 0, err
	}
	for _, b := range gr {
		if b.gh > 1<<24 || b.gw > 1<<24 {
			return 0, fmt.Errorf("gops: %s: sampling grid %dx%d too large for the GPU kernels", c.name, b.gh, b.gw)
		}
		if nb > 0 && int64(nb)*int64(b.gh)*int64(b.gw) > math.MaxInt32 {
			return 0, fmt.Errorf("gops: %s: %d bins of %dx%d sampling points exceed the CUDA kernels' int range", c.name, nb, b.gh, b.gw)
		}
	}
	return upload(c, packGrids(gr, bx))
}

func (c *gpuCall) roiAlign(g gpuRoIAlign, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if err := c.fitInt32(in, out, intSize{"H·W", g.g.h * g.g.w}, intSize{"the packed box grids", 8 * in[1].Shape()[0]}); err != nil {
		return err
	}
	var bp cu.DevicePtr
	var err error
	if sfx == "_f32" {
		bp, err = boxGrids(c, in[1], 0, func(b []float32) ([]roiAlignBox[float32], error) { return roiAlignGrids(g.g, b) })
	} else {
		bp, err = boxGrids(c, in[1], 0, func(b []float64) ([]roiAlignBox[float64], error) { return roiAlignGrids(g.g, b) })
	}
	if err != nil {
		return err
	}
	k, gg := in[1].Shape()[0], g.g
	if g.transpose {
		return c.launch("roialign_transpose"+sfx, gg.n*gg.c, ptr(in[0]), bp, ptr(out), k, gg.n, gg.c, gg.h, gg.w, gg.ph, gg.pw)
	}
	return c.launch("roialign_forward"+sfx, out.Shape().TotalSize(), ptr(in[0]), bp, ptr(out), k, gg.c, gg.h, gg.w, gg.ph, gg.pw)
}

// poolBinsOf downloads the boxes, checks them and returns every box's bins
// as 4 int32 (hs, he, ws, we) on the device.
func poolBinsOf[T float](c *gpuCall, g *poolGeom, boxes gorgonia.Value, inclusive bool) (cu.DevicePtr, error) {
	bx, err := download[T](c, boxes)
	if err != nil {
		return 0, err
	}
	if err := checkBoxes(c.name, bx, g.n); err != nil {
		return 0, err
	}
	var bins []poolBin
	for k := 0; k < len(bx)/5; k++ {
		bins = poolBins(g, bx[5*k:5*k+5], inclusive, bins)
	}
	p := make([]int32, 0, 4*len(bins))
	for _, b := range bins {
		p = append(p, int32(b.hs), int32(b.he), int32(b.ws), int32(b.we))
	}
	return upload(c, p)
}

func (c *gpuCall) psRoI(g gpuPSRoI, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	gg, k := g.g, in[1].Shape()[0]
	nb := gg.ph * gg.pw
	packed := intSize{"the packed bins", 4 * k * nb}
	if g.align {
		packed = intSize{"the packed box grids", 8 * k}
	}
	if err := c.fitInt32(in, out, intSize{"H·W", gg.h * gg.w}, packed); err != nil {
		return err
	}
	if g.align {
		var bp cu.DevicePtr
		var err error
		if sfx == "_f32" {
			bp, err = boxGrids(c, in[1], nb, func(b []float32) ([]roiAlignBox[float32], error) {
				_, gr, err := psRoIAlignGrids(gg, b)
				return gr, err
			})
		} else {
			bp, err = boxGrids(c, in[1], nb, func(b []float64) ([]roiAlignBox[float64], error) {
				_, gr, err := psRoIAlignGrids(gg, b)
				return gr, err
			})
		}
		if err != nil {
			return err
		}
		if g.transpose {
			return c.launch("psroialign_transpose"+sfx, gg.n*gg.c, ptr(in[0]), bp, ptr(out), k, gg.n, gg.c, gg.h, gg.w, gg.ph, gg.pw)
		}
		return c.launch("psroialign_forward"+sfx, out.Shape().TotalSize(), ptr(in[0]), bp, ptr(out), k, gg.c, gg.h, gg.w, gg.ph, gg.pw)
	}
	var bins cu.DevicePtr
	var err error
	if sfx == "_f32" {
		bins, err = poolBinsOf[float32](c, gg, in[1], false)
	} else {
		bins, err = poolBinsOf[float64](c, gg, in[1], false)
	}
	if err != nil {
		return err
	}
	if g.transpose {
		return c.launch("psroipool_transpose"+sfx, gg.n*gg.c, ptr(in[0]), ptr(in[1]), bins, ptr(out), k, gg.n, gg.c, gg.h, gg.w, nb)
	}
	return c.launch("psroipool_forward"+sfx, out.Shape().TotalSize(), ptr(in[0]), ptr(in[1]), bins, ptr(out), k, gg.c, gg.h, gg.w, nb)
}

func (c *gpuCall) roiPool(g gpuRoIPool, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	gg := g.g
	nb := gg.ph * gg.pw
	// in[1] is the boxes (argmax) or the indices [K, C, PH, PW], whose
	// positions the error slot holds.
	sizes := []intSize{{"H·W", gg.h * gg.w}}
	if g.kind == gpuArgmax {
		sizes = append(sizes, intSize{"the packed bins", 4 * in[1].Shape()[0] * nb})
	}
	if err := c.fitInt32(in, out, sizes...); err != nil {
		return err
	}
	switch g.kind {
	case gpuArgmax:
		var bins cu.DevicePtr
		var err error
		if sfx == "_f32" {
			bins, err = poolBinsOf[float32](c, gg, in[1], true)
		} else {
			bins, err = poolBinsOf[float64](c, gg, in[1], true)
		}
		if err != nil {
			return err
		}
		if tensor.Int.Size() != 8 {
			return fmt.Errorf("gops: %s: the GPU kernels need a 64-bit int", c.name)
		}
		return c.launch("roipool_argmax"+sfx, out.Shape().TotalSize(), ptr(in[0]), ptr(in[1]), bins, ptr(out), in[1].Shape()[0], gg.c, gg.h, gg.w, nb)
	}
	bad, err := upload(c, []int32{math.MaxInt32})
	if err != nil {
		return err
	}
	idx := in[1]
	if g.kind == gpuGather {
		err = c.launch("roipool_gather"+sfx, out.Shape().TotalSize(), ptr(in[0]), ptr(idx), ptr(out), out.Shape().TotalSize(), int64(in[0].Shape().TotalSize()), bad)
	} else {
		err = c.launch("roipool_scatteradd"+sfx, gg.n*gg.c, ptr(in[0]), ptr(idx), ptr(out), idx.Shape()[0], gg.n, gg.c, gg.h, gg.w, nb, bad)
	}
	if err != nil {
		return err
	}
	at := make([]int32, 1)
	c.ctx.MemcpyDtoH(unsafePtr(at), bad, 4)
	if err := c.sync(); err != nil {
		return err
	}
	if at[0] != math.MaxInt32 {
		ix, err := download[int](c, idx)
		if err != nil {
			return err
		}
		if g.kind == gpuGather {
			return fmt.Errorf("gops: RoIGather: index %d at %d is outside the input (%d elements)", ix[at[0]], at[0], in[0].Shape().TotalSize())
		}
		return fmt.Errorf("gops: RoIScatterAdd: index %d at %d is not in the input plane of its box and channel", ix[at[0]], at[0])
	}
	return nil
}

func (c *gpuCall) deform(d gpuDeform, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	for _, v := range []int{g.n * g.c * g.h * g.w, g.c * g.k() * g.n * g.l(), 2 * g.maskLen()} {
		if v > math.MaxInt32 {
			return fmt.Errorf("gops: %s: %d elements exceed the CUDA kernels' int range", c.name, v)
		}
	}
	// The kernels' first 15 parameters: the geometry as int scalars, in the
	// order of deform.cu's Geom (cu copies 8 bytes per parameter, so no struct).
	geom := []any{g.n, g.c, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.ho, g.wo, g.og}
	args := func(rest ...any) []any { return append(geom[:len(geom):len(geom)], rest...) }
	var mask cu.DevicePtr // 0: no mask (1)
	switch d.kind {
	case deformS:
		if len(in) == 3 {
			mask = ptr(in[2])
		}
		return c.launch("deform_s"+sfx, out.Shape().TotalSize(), args(ptr(in[0]), ptr(in[1]), mask, ptr(out), d.a, d.b)...)
	case deformT:
		if len(in) == 3 {
			mask = ptr(in[2])
		}
		return c.launch("deform_t"+sfx, g.n*g.c, args(ptr(in[0]), ptr(in[1]), mask, ptr(out), d.a, d.b)...)
	case deformC:
		return c.launch("deform_c"+sfx, out.Shape().TotalSize(), args(ptr(in[0]), ptr(in[1]), ptr(in[2]), ptr(out), d.a, d.b)...)
	default:
		if len(in) == 4 {
			mask = ptr(in[3])
		}
		return c.launch("deform_o"+sfx, g.maskLen(), args(ptr(in[0]), ptr(in[1]), ptr(in[2]), mask, ptr(out), d.a, d.b)...)
	}
}
