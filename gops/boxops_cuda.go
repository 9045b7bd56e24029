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

// launch runs the pointwise function d.f on one or two inputs.
func (d pointGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := glue.Size(out)
	b := cu.DevicePtr(0) // a unary function: b = 0
	if len(in) == 2 {
		b = ptr(in[1])
	}
	return c.Launch("boxops_point"+sfx, n, ptr(in[0]), b, ptr(out), n, int(d.f.Fn), d.f.P1, d.f.P2)
}

// launch runs ColumnSelect (d.fwd) or ColumnEmbed.
func (d columnGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if d.fwd {
		return c.Launch("boxops_column_select"+sfx, d.p, ptr(in[0]), ptr(out), d.p, d.c, d.j)
	}
	return c.Launch("boxops_column_embed"+sfx, d.p*d.c, ptr(in[0]), ptr(out), d.p, d.c, d.j)
}

// launch runs StackColumns: each input into its column.
func (stackGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	p := out.Shape()[0]
	for j, col := range in {
		if err := c.Launch("boxops_column_put"+sfx, p, ptr(col), ptr(out), p, len(in), j); err != nil {
			return err
		}
	}
	return nil
}

// launch runs a row gather (d.fwd) or its scatter-add, at the fixed
// indices or at those of the second input (IndexSelect's, copied to the
// host and checked there as the CPU kernel checks them).
func (d rowSelectGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
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
		return c.Launch("boxops_gather_rows"+sfx, p*d.n, ptr(in[0]), ip, ptr(out), p, d.n)
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
	return c.Launch("boxops_scatter_rows"+sfx, d.k*d.n, ptr(in[0]), sp, rp, ptr(out), d.k, d.n)
}

// launch runs one of BoxConvert's conversions, or its transpose.
func (d convertGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	k := out.Shape()[0]
	return c.Launch("boxops_convert"+sfx, k, ptr(in[0]), ptr(out), k, int(d.kind), d.transpose)
}

// launch runs ClipBoxes or, with d.mask, ClipBoxesMask.
func (d clipGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := out.Shape().TotalSize()
	return c.Launch("boxops_clip"+sfx, n, ptr(in[0]), ptr(out), n, d.bounds[0], d.bounds[1], d.mask)
}

// launch runs BoxesToRoIs: each image's boxes into its rows.
func (d roisGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	off := 0
	for i, n := range d.counts {
		if err := c.Launch("boxops_rois"+sfx, n*5, ptr(in[i]), ptr(out), off, n, i); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// launch runs RoIRowsEmbed (d.embed) or RoIRows.
func (d roiRowsGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := d.n * 4
	if d.embed {
		n = d.k * 5
	}
	return c.Launch("boxops_roi_rows"+sfx, n, ptr(in[0]), ptr(out), d.k, d.off, d.n, d.embed)
}
