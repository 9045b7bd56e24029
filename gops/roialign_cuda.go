//go:build cuda

package gops

import (
	"gorgonia.org/gorgonia"
)

// RoIAlign's CUDA twin: kernels/roialign.cu. The boxes are copied to the
// host, checked and gridded there by the CPU code (cpu.RoIAlignGrids), so
// the GPU and CPU paths fail alike.

// launch runs RoIAlign's forward or transpose kernel.
func (d roiAlignGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	if err := fitInt32(c, in, out, intSize{"H·W", g.H * g.W}, intSize{"the packed box grids", 8 * in[1].Shape()[0]}); err != nil {
		return err
	}
	bp, err := deviceGrids(c, sfx, in[1], g, nil)
	if err != nil {
		return err
	}
	k := in[1].Shape()[0]
	if d.transpose {
		return c.Launch("roialign_transpose"+sfx, g.N*g.C, ptr(in[0]), bp, ptr(out), k, g.N, g.C, g.H, g.W, g.PH, g.PW)
	}
	return c.Launch("roialign_forward"+sfx, out.Shape().TotalSize(), ptr(in[0]), bp, ptr(out), k, g.C, g.H, g.W, g.PH, g.PW)
}
