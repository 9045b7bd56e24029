//go:build cuda

package gops

import "gorgonia.org/gorgonia"

// The layout ops' CUDA twins: internal/cuda/kernels/gops/layout.cu.

// launch copies the input (Reshape).
func (reshapeGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := out.Shape().TotalSize()
	return c.Launch("layout_copy"+sfx, n, ptr(in[0]), ptr(out), n)
}

// launch runs SwapAxes01, with the bias when d.bias.
func (d swap01GPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := out.Shape().TotalSize()
	if d.bias {
		return c.Launch("layout_swap01_bias"+sfx, n, ptr(in[0]), ptr(in[1]), ptr(out), d.a, d.b, n/max(d.a*d.b, 1))
	}
	return c.Launch("layout_swap01"+sfx, n, ptr(in[0]), ptr(out), d.a, d.b, n/max(d.a*d.b, 1))
}
