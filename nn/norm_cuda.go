//go:build cuda

package nn

import (
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
)

// The per-channel ops on the GPU: kernels/norm.cu.

// launch runs BiasAdd, ChannelSum or ChannelBroadcast.
func (d channelGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	switch d.kind {
	case channelBiasAdd:
		return c.launch("norm_bias_add"+sfx, d.n*d.c*d.l, ptr(in[0]), ptr(in[1]), ptr(out), d.n, d.c, d.l)
	case channelSum:
		return c.launch("norm_channel_sum"+sfx, d.c, ptr(in[0]), ptr(out), d.n, d.c, d.l)
	}
	return c.launch("norm_channel_broadcast"+sfx, d.n*d.c*d.l, ptr(in[0]), ptr(out), d.n, d.c, d.l)
}

// launch runs ChannelMean; with running statistics, the kernel also
// gives each channel's mean and unbiased variance in double, which update
// them on the host as channelMeanKernel does.
func (d channelMeanGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	var stats cu.DevicePtr
	if d.stats != nil {
		var err error
		if stats, err = c.temp(int64(16 * d.c)); err != nil {
			return err
		}
	}
	if err := c.launch("norm_channel_mean"+sfx, d.c, ptr(in[0]), ptr(out), stats, d.n, d.c, d.l); err != nil || d.stats == nil {
		return err
	}
	s, err := download[float64](c, stats, 2*d.c)
	if err != nil {
		return err
	}
	for ci := 0; ci < d.c; ci++ {
		d.stats.update(ci, s[2*ci], s[2*ci+1])
	}
	return nil
}
