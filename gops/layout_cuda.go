//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// The layout ops' CUDA twins: internal/cuda/kernels/gops/layout.cu.

// Launch copies the input (Reshape).
func (reshapeGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := out.Shape().TotalSize()
	return c.Launch("layout_copy"+sfx, n, glue.Ptr(in[0]), glue.Ptr(out), n)
}

// Launch runs SwapAxes01, with the bias when d.bias.
func (d swap01GPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := out.Shape().TotalSize()
	if d.bias {
		return c.Launch("layout_swap01_bias"+sfx, n, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), d.a, d.b, n/max(d.a*d.b, 1))
	}
	return c.Launch("layout_swap01"+sfx, n, glue.Ptr(in[0]), glue.Ptr(out), d.a, d.b, n/max(d.a*d.b, 1))
}
