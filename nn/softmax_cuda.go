//go:build cuda

package nn

import (
	"gorgonia.org/gorgonia"

	"github.com/gops-dev/gops/internal/cuda/glue"
)

// Softmax, LogSoftmax, SoftmaxGrad, LogSoftmaxGrad and the axis sum and
// broadcast on the GPU: internal/cuda/kernels/nn/softmax.cu.

// Launch runs Softmax or LogSoftmax, one thread per line.
func (d softmaxGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	return c.Launch("softmax_rows"+sfx, d.outer*d.inner, glue.Ptr(in[0]), glue.Ptr(out), d.outer, d.n, d.inner, d.log)
}

// Launch runs SoftmaxGrad or LogSoftmaxGrad (inputs y, U), one thread per
// line.
func (d softmaxGradGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	return c.Launch("softmax_grad"+sfx, d.outer*d.inner, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), d.outer, d.n, d.inner, d.log)
}

// Launch runs AxisSum or AxisBroadcast.
func (d axisGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if d.sum {
		return c.Launch("softmax_axis_sum"+sfx, d.outer*d.inner, glue.Ptr(in[0]), glue.Ptr(out), d.outer, d.n, d.inner)
	}
	return c.Launch("softmax_axis_broadcast"+sfx, d.outer*d.n*d.inner, glue.Ptr(in[0]), glue.Ptr(out), d.outer, d.n, d.inner)
}
