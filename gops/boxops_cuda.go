//go:build cuda

package gops

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// The CUDA twins of the box functions' small closed ops (boxprims.go,
// boxops.go, indexselect.go, BoxesToRoIs' in multiscale.go): the kernels
// of internal/cuda/kernels/gops/boxops.cu, one thread per output element (per box row for
// BoxConvert). Row indices are checked on the host with the CPU's check
// (checkRowIndices), so an IndexSelect error is the CPU path's, and the
// scatter-adds get their inverse index (each destination row's source
// rows, in increasing order, CSR) from the host: no atomics, the CPU's
// sums. BoxEmpty (ad.EmptyResult: the result of an op on an input without
// elements, a constant fill, possibly a scalar) stays on the host.

// Launch runs the pointwise function d.f on one or two inputs.
func (d pointGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := glue.Size(out)
	b := cu.DevicePtr(0) // a unary function: b = 0
	if len(in) == 2 {
		b = glue.Ptr(in[1])
	}
	return c.Launch("boxops_point"+sfx, n, glue.Ptr(in[0]), b, glue.Ptr(out), n, int(d.f.Fn), d.f.P1, d.f.P2)
}

// Launch runs ColumnSelect (d.fwd) or ColumnEmbed.
func (d columnGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if d.fwd {
		return c.Launch("boxops_column_select"+sfx, d.p, glue.Ptr(in[0]), glue.Ptr(out), d.p, d.c, d.j)
	}
	return c.Launch("boxops_column_embed"+sfx, d.p*d.c, glue.Ptr(in[0]), glue.Ptr(out), d.p, d.c, d.j)
}

// Launch runs StackColumns: each input into its column.
func (stackGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	p := out.Shape()[0]
	for j, col := range in {
		if err := c.Launch("boxops_column_put"+sfx, p, glue.Ptr(col), glue.Ptr(out), p, len(in), j); err != nil {
			return err
		}
	}
	return nil
}

// Launch runs a row gather (d.fwd) or its scatter-add, at the fixed
// indices or at those of the second input (IndexSelect's, copied to the
// host and checked there as the CPU kernel checks them).
func (d rowSelectGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	idx, name := d.fixed, c.Name
	if idx == nil {
		var err error
		if idx, err = download[int](c, in[1]); err != nil {
			return err
		}
		name = "IndexSelect" // the CPU's error, for both directions
	}
	if err := checkRowIndices(name, idx, d.k); err != nil {
		return err
	}
	p := len(idx)
	if d.fwd {
		ip, err := glue.Upload(c, int64s(idx))
		if err != nil {
			return err
		}
		return c.Launch("boxops_gather_rows"+sfx, p*d.n, glue.Ptr(in[0]), ip, glue.Ptr(out), p, d.n)
	}
	start, rows := inverseRows(idx, d.k)
	sp, err := glue.Upload(c, start)
	if err != nil {
		return err
	}
	rp, err := glue.Upload(c, rows)
	if err != nil {
		return err
	}
	return c.Launch("boxops_scatter_rows"+sfx, d.k*d.n, glue.Ptr(in[0]), sp, rp, glue.Ptr(out), d.k, d.n)
}

// Launch runs one of BoxConvert's conversions, or its transpose.
func (d convertGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	k := out.Shape()[0]
	return c.Launch("boxops_convert"+sfx, k, glue.Ptr(in[0]), glue.Ptr(out), k, int(d.kind), d.transpose)
}

// Launch runs ClipBoxes or, with d.mask, ClipBoxesMask.
func (d clipGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := out.Shape().TotalSize()
	return c.Launch("boxops_clip"+sfx, n, glue.Ptr(in[0]), glue.Ptr(out), n, d.bounds[0], d.bounds[1], d.mask)
}

// Launch runs BoxesToRoIs: each image's boxes into its rows.
func (d roisGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	off := 0
	for i, n := range d.counts {
		if err := c.Launch("boxops_rois"+sfx, n*5, glue.Ptr(in[i]), glue.Ptr(out), off, n, i); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// Launch runs RoIRowsEmbed (d.embed) or RoIRows.
func (d roiRowsGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := d.n * 4
	if d.embed {
		n = d.k * 5
	}
	return c.Launch("boxops_roi_rows"+sfx, n, glue.Ptr(in[0]), glue.Ptr(out), d.k, d.off, d.n, d.embed)
}
