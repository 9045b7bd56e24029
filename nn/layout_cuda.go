//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// The copying layout ops and the fills on the GPU: internal/cuda/kernels/nn/layout.cu.

// Launch copies each input into its part of the result.
func (d concatGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	outer, inner := blocks(d.out, d.axis)
	row, off := d.out[d.axis]*inner, 0
	for _, x := range in {
		n := x.Shape()[d.axis] * inner
		if err := c.Launch("layout_concat_copy"+sfx, outer*n, glue.Ptr(x), glue.Ptr(out), outer, n, row, off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// Launch runs Narrow or NarrowEmbed.
func (d narrowGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n, full := d.length*d.inner, d.size*d.inner
	if d.fwd {
		return c.Launch("layout_narrow"+sfx, d.outer*n, glue.Ptr(in[0]), glue.Ptr(out), d.outer, n, full, d.start*d.inner)
	}
	return c.Launch("layout_narrow_embed"+sfx, d.outer*full, glue.Ptr(in[0]), glue.Ptr(out), d.outer, n, full, d.start*d.inner)
}

// Launch fills the result with d.v.
func (d fillGPU) Launch(c *glue.Call, sfx string, _ []gorgonia.Value, out gorgonia.Value) error {
	return fill(c, sfx, glue.Ptr(out), d.v, size(out))
}

// fill writes v into the n elements of the op's float dtype at p.
func fill(c *glue.Call, sfx string, p cu.DevicePtr, v float64, n int) error {
	return c.Launch("layout_fill"+sfx, n, p, c.Float(v), n)
}

// size is a value's number of elements (1 for a scalar).
func size(v gorgonia.Value) int { return glue.Size(v) }
