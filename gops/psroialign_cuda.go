//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// PSRoIAlign's CUDA twin: internal/cuda/kernels/gops/psroialign.cu. The boxes are copied to
// the host, checked and gridded there by the CPU code (cpu.PSRoIAlignGrids).

// launchAlign runs PSRoIAlign's forward or transpose kernel (from psGPU.Launch,
// boxes_cuda.go).
func (d psGPU) launchAlign(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g, k := d.g, in[1].Shape()[0]
	bp, err := deviceGrids(c, sfx, in[1], nil, g)
	if err != nil {
		return err
	}
	if d.transpose {
		return c.Launch("psroialign_transpose"+sfx, g.N*g.C, glue.Ptr(in[0]), bp, glue.Ptr(out), k, g.N, g.C, g.H, g.W, g.PH, g.PW)
	}
	return c.Launch("psroialign_forward"+sfx, out.Shape().TotalSize(), glue.Ptr(in[0]), bp, glue.Ptr(out), k, g.C, g.H, g.W, g.PH, g.PW)
}
