//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"github.com/gops-dev/gops/internal/cuda/pack"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// The CUDA twins of the box members F_ab of RoIAlign and PSRoIAlign and of
// their transposes: internal/cuda/kernels/gops/roialignbox.cu. The boxes are copied to the
// host, checked and gridded there by the CPU code (cpu.RoIAlignGrids,
// cpu.PSRoIAlignGrids), so the GPU and CPU paths fail alike.

// boxDerivGeom is the family's geometry as the kernels take it: the
// sampling geometry, the coefficient scale and alignment and the channel
// map (cpu.boxDerivFamily).
type boxDerivGeom struct {
	n, c, h, w, ph, pw       int
	cOut, cStride, binStride int
	scale                    float64
	aligned                  bool
}

func (d boxDerivGPU) geom() boxDerivGeom {
	if d.ra != nil {
		g := d.ra
		return boxDerivGeom{g.N, g.C, g.H, g.W, g.PH, g.PW, g.C, 1, 0, g.Scale, g.Aligned}
	}
	g, nb := d.ps, d.ps.PH*d.ps.PW
	return boxDerivGeom{g.N, g.C, g.H, g.W, g.PH, g.PW, g.C / nb, nb, 1, g.Scale, true}
}

// Launch runs the member's kernel or its transpose's.
func (d boxDerivGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if d.pyr != nil {
		if sfx == "_f32" {
			return launchPyramid[float32](c, sfx, d, in, out)
		}
		return launchPyramid[float64](c, sfx, d, in, out)
	}
	g, k := d.geom(), in[1].Shape()[0]
	var bp cu.DevicePtr
	var err error
	if sfx == "_f32" {
		bp, err = boxDerivGrids[float32](c, in[1], d, g)
	} else {
		bp, err = boxDerivGrids[float64](c, in[1], d, g)
	}
	if err != nil {
		return err
	}
	return d.launchKernel(c, sfx, g, glue.Ptr(in[0]), bp, glue.Ptr(out), k, out.Shape().TotalSize())
}

// launchKernel runs the member's kernel (x an input map, out [k, J·cOut,
// PH, PW] of outSize elements) or its transpose's (x [k, J·cOut, PH, PW],
// out a map of outSize elements) for k boxes with packed grids bp.
func (d boxDerivGPU) launchKernel(c *glue.Call, sfx string, g boxDerivGeom, x, bp, out cu.DevicePtr, k, outSize int) error {
	xm := 0
	if d.xMajor {
		xm = 1
	}
	if d.transpose {
		return c.Launch("roialignbox_transpose"+sfx, outSize, x, bp, out,
			k, g.n, g.c, g.h, g.w, g.ph, g.pw, g.cOut, g.cStride, g.binStride, d.a, d.b, xm, c.Float(g.scale))
	}
	return c.Launch("roialignbox_deriv"+sfx, outSize, x, bp, out,
		k, g.c, g.h, g.w, g.ph, g.pw, g.cOut, g.cStride, g.binStride, d.a, d.b, xm, c.Float(g.scale))
}

// boxDerivGrids downloads the boxes and returns their packed grids on the
// device (pack.BoxDerivGrids).
func boxDerivGrids[T cpu.Float](c *glue.Call, boxes gorgonia.Value, d boxDerivGPU, g boxDerivGeom) (cu.DevicePtr, error) {
	bx, err := download[T](c, boxes)
	if err != nil {
		return 0, err
	}
	gr, err := gridsOf(d.ra, d.ps, bx)
	if err != nil {
		return 0, err
	}
	p, err := pack.BoxDerivGrids(c.Name, bx, gr, g.scale, g.aligned)
	if err != nil {
		return 0, err
	}
	return glue.Upload(c, p)
}

// Launch runs BoxCoordEmbed's or BoxCoordSelect's kernel.
func (d boxCoordGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	embed := 0
	if d.embed {
		embed = 1
	}
	return c.Launch("roialignbox_coords"+sfx, out.Shape().TotalSize(), glue.Ptr(in[0]), glue.Ptr(out), d.k, 2-d.dir, embed)
}
