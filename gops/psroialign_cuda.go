//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// PSRoIAlign's CUDA twin: kernels/psroialign.cu. The boxes are copied to
// the host, checked and gridded there by the CPU code (cpu.PSRoIAlignGrids).

// launch runs the forward or transpose kernel of PSRoIAlign or, when the op
// rounds its boxes, of PSRoIPool (psroipool_cuda.go).
func (d psGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g, k := d.g, in[1].Shape()[0]
	nb := g.PH * g.PW
	packed := intSize{"the packed bins", 4 * k * nb}
	if d.align {
		packed = intSize{"the packed box grids", 8 * k}
	}
	if err := c.fitInt32(in, out, intSize{"H·W", g.H * g.W}, packed); err != nil {
		return err
	}
	if !d.align {
		return d.launchPool(c, sfx, in, out)
	}
	var bp cu.DevicePtr
	var err error
	if sfx == "_f32" {
		bp, err = boxGrids(c, in[1], nb, func(b []float32) ([]cpu.RoIAlignBox[float32], error) {
			_, gr, err := cpu.PSRoIAlignGrids(g, b)
			return gr, err
		})
	} else {
		bp, err = boxGrids(c, in[1], nb, func(b []float64) ([]cpu.RoIAlignBox[float64], error) {
			_, gr, err := cpu.PSRoIAlignGrids(g, b)
			return gr, err
		})
	}
	if err != nil {
		return err
	}
	if d.transpose {
		return c.launch("psroialign_transpose"+sfx, g.N*g.C, ptr(in[0]), bp, ptr(out), k, g.N, g.C, g.H, g.W, g.PH, g.PW)
	}
	return c.launch("psroialign_forward"+sfx, out.Shape().TotalSize(), ptr(in[0]), bp, ptr(out), k, g.C, g.H, g.W, g.PH, g.PW)
}
