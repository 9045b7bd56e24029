//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// The per-channel ops and the row normalisation on the GPU:
// internal/cuda/kernels/nn/norm.cu.

// Launch runs BiasAdd, ChannelSum or ChannelBroadcast.
func (d channelGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	switch d.kind {
	case channelBiasAdd:
		return c.Launch("norm_bias_add"+sfx, d.n*d.c*d.l, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), d.n, d.c, d.l)
	case channelSum:
		return c.Launch("norm_channel_sum"+sfx, d.c, glue.Ptr(in[0]), glue.Ptr(out), d.n, d.c, d.l)
	}
	return c.Launch("norm_channel_broadcast"+sfx, d.n*d.c*d.l, glue.Ptr(in[0]), glue.Ptr(out), d.n, d.c, d.l)
}

// Launch runs ChannelMean; with running statistics, the kernel also
// gives each channel's mean and unbiased variance in double, which update
// them on the host as channelMeanKernel does.
func (d channelMeanGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	var stats cu.DevicePtr
	if d.stats != nil {
		var err error
		if stats, err = c.Temp(int64(16 * d.c)); err != nil {
			return err
		}
	}
	if err := c.Launch("norm_channel_mean"+sfx, d.c, glue.Ptr(in[0]), glue.Ptr(out), stats, d.n, d.c, d.l); err != nil || d.stats == nil {
		return err
	}
	s, err := glue.Download[float64](c, stats, 2*d.c)
	if err != nil {
		return err
	}
	for ci := 0; ci < d.c; ci++ {
		d.stats.update(ci, s[2*ci], s[2*ci+1])
	}
	return nil
}

// Launch runs RowNorm, RowNormGrad (inputs x, u) or RowInvStd, one thread
// per row.
func (d rowNormGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	switch d.kind {
	case rowNormGrad:
		return c.Launch("norm_rows_grad"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), d.rows, d.n, d.eps)
	case rowNormInvStd:
		return c.Launch("norm_rows_invstd"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(out), d.rows, d.n, d.eps)
	}
	return c.Launch("norm_rows"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(out), d.rows, d.n, d.eps)
}

// Launch runs GroupNorm's fused op: RowNorm into out, then ChannelAffine
// from out into out (elementwise, so in place is safe).
func (d groupNormAffineGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if err := d.row.Launch(c, sfx, in[:1], out); err != nil {
		return err
	}
	return d.aff.Launch(c, sfx, append([]gorgonia.Value{out}, in[1:]...), out)
}

// Launch runs one of GroupNorm's gradient ops. With the statistics:
// GroupNormStats and GroupNormGradX one thread per row, GroupNormGradW and
// GroupNormGradB one per channel. Without: GroupNormGradX as
// ChannelAffine(u, w) into a temporary, then RowNormGrad; GroupNormGradW
// as RowNorm(x) into a temporary, then ChannelDot with u.
func (d groupNormGradGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	rg, cg := d.rg, d.cg
	if d.stats {
		switch d.kind {
		case groupNormStatsKind:
			return c.Launch("norm_group_stats"+sfx, rg.rows, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), rg.rows, rg.n, cg.inner, rg.eps)
		case groupNormGradXKind:
			return c.Launch("norm_group_grad_x"+sfx, rg.rows, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(in[2]), glue.Ptr(in[3]), glue.Ptr(out), rg.rows, rg.n, cg.inner, cg.c)
		case groupNormGradWKind:
			return c.Launch("norm_group_stats_total"+sfx, cg.c, glue.Ptr(in[2]), glue.Ptr(out), rg.rows, cg.outer, cg.c, 1)
		}
		return c.Launch("norm_group_stats_total"+sfx, cg.c, glue.Ptr(in[1]), glue.Ptr(out), rg.rows, cg.outer, cg.c, 0)
	}
	tmp, err := c.TempTensor(rg.rows * rg.n)
	if err != nil {
		return err
	}
	row := rowNormGPU{rg.rows, rg.n, rg.eps, rowNormForward}
	if d.kind == groupNormGradXKind {
		if err := (channelAffineGPU{cg, true, false}).Launch(c, sfx, in[1:3], tmp); err != nil {
			return err
		}
		row.kind = rowNormGrad
		return row.Launch(c, sfx, []gorgonia.Value{in[0], tmp}, out)
	}
	if err := row.Launch(c, sfx, in[1:2], tmp); err != nil {
		return err
	}
	return (channelReduceGPU{cg, true}).Launch(c, sfx, []gorgonia.Value{in[0], tmp}, out)
}

// Launch runs ChannelAffine; an absent weight or bias is a null pointer.
func (d channelAffineGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	var w, b cu.DevicePtr
	next := 1
	if d.hasW {
		w = glue.Ptr(in[next])
		next++
	}
	if d.hasB {
		b = glue.Ptr(in[next])
	}
	g := d.g
	return c.Launch("norm_channel_affine"+sfx, g.outer*g.c*g.inner, glue.Ptr(in[0]), w, b, glue.Ptr(out), g.outer, g.c, g.inner)
}

// Launch runs ChannelDot (inputs u, y) or ChannelTotal (y a null pointer),
// one thread per channel.
func (d channelReduceGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	var y cu.DevicePtr
	if d.dot {
		y = glue.Ptr(in[1])
	}
	g := d.g
	return c.Launch("norm_channel_dot"+sfx, g.c, glue.Ptr(in[0]), y, glue.Ptr(out), g.outer, g.c, g.inner)
}
