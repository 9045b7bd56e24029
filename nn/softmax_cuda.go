//go:build cuda

package nn

import "gorgonia.org/gorgonia"

// Softmax, LogSoftmax, SoftmaxGrad, LogSoftmaxGrad and the axis sum and
// broadcast on the GPU: internal/cuda/kernels/nn/softmax.cu.

// launch runs Softmax or LogSoftmax, one thread per line.
func (d softmaxGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	return c.Launch("softmax_rows"+sfx, d.outer*d.inner, ptr(in[0]), ptr(out), d.outer, d.n, d.inner, d.log)
}

// launch runs SoftmaxGrad or LogSoftmaxGrad (inputs y, U), one thread per
// line.
func (d softmaxGradGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	return c.Launch("softmax_grad"+sfx, d.outer*d.inner, ptr(in[0]), ptr(in[1]), ptr(out), d.outer, d.n, d.inner, d.log)
}

// launch runs AxisSum or AxisBroadcast.
func (d axisGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if d.sum {
		return c.Launch("softmax_axis_sum"+sfx, d.outer*d.inner, ptr(in[0]), ptr(out), d.outer, d.n, d.inner)
	}
	return c.Launch("softmax_axis_broadcast"+sfx, d.outer*d.n*d.inner, ptr(in[0]), ptr(out), d.outer, d.n, d.inner)
}
