//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// RoIAlign's CUDA twin: internal/cuda/kernels/gops/roialign.cu. The boxes are copied to the
// host, checked and gridded there by the CPU code (cpu.RoIAlignGrids), so
// the GPU and CPU paths fail alike.

// Launch runs RoIAlign's forward or transpose kernel.
func (d roiAlignGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	bp, err := deviceGrids(c, sfx, in[1], g, nil)
	if err != nil {
		return err
	}
	return launchRoIAlignKernel(c, sfx, g, d.transpose, glue.Ptr(in[0]), bp, glue.Ptr(out), in[1].Shape()[0], out.Shape().TotalSize())
}

// launchRoIAlignKernel runs RoIAlign's forward kernel (x an input map,
// out [k, C, PH, PW] of outSize elements) or its transpose (x a gradient
// [k, C, PH, PW], out a map) for k boxes with packed grids bp.
func launchRoIAlignKernel(c *glue.Call, sfx string, g *cpu.RoIAlignGeom, transpose bool, x, bp, out cu.DevicePtr, k, outSize int) error {
	if transpose {
		return c.Launch("roialign_transpose"+sfx, g.N*g.C, x, bp, out, k, g.N, g.C, g.H, g.W, g.PH, g.PW)
	}
	return c.Launch("roialign_forward"+sfx, outSize, x, bp, out, k, g.C, g.H, g.W, g.PH, g.PW)
}
