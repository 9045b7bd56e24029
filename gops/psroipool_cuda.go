//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// PSRoIPool's CUDA twin: internal/cuda/kernels/gops/psroipool.cu. The boxes are copied to
// the host, checked and binned there by the CPU code (cpu.PoolBins).

// launchPool runs PSRoIPool's forward or transpose kernel (from psGPU.Launch).
func (d psGPU) launchPool(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g, k := d.g, in[1].Shape()[0]
	nb := g.PH * g.PW
	bins, err := deviceBins(c, in[1], g, false)
	if err != nil {
		return err
	}
	if d.transpose {
		return c.Launch("psroipool_transpose"+sfx, g.N*g.C, glue.Ptr(in[0]), glue.Ptr(in[1]), bins, glue.Ptr(out), k, g.N, g.C, g.H, g.W, nb)
	}
	return c.Launch("psroipool_forward"+sfx, out.Shape().TotalSize(), glue.Ptr(in[0]), glue.Ptr(in[1]), bins, glue.Ptr(out), k, g.C, g.H, g.W, nb)
}
