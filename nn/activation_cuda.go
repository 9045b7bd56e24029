//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// The elementwise ops on the GPU: internal/cuda/kernels/nn/activation.cu (Sigmoid,
// Tanh, LeakyReLU, its slope and gradient, Erf) and internal/cuda/kernels/nn/loss.cu (Softplus, SmoothL1's
// family).

// Launch runs the op d.kind on every element.
func (d unaryGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := size(out)
	x, y := glue.Ptr(in[0]), glue.Ptr(out)
	switch d.kind {
	case unarySigmoid:
		return c.Launch("act_sigmoid"+sfx, n, x, y, n)
	case unaryTanh:
		return c.Launch("act_tanh"+sfx, n, x, y, n)
	case unaryLeaky:
		return c.Launch("act_leaky"+sfx, n, x, y, c.Float(d.param), d.param == 0, n)
	case unaryLeakySlope:
		return c.Launch("act_leaky_slope"+sfx, n, x, y, c.Float(d.param), n)
	case unaryLeakyGrad:
		return c.Launch("act_leaky_grad"+sfx, n, x, glue.Ptr(in[1]), y, c.Float(d.param), n)
	case unaryErf:
		return c.Launch("act_erf"+sfx, n, x, y, n)
	case unarySoftplus:
		return c.Launch("loss_softplus"+sfx, n, x, y, n)
	}
	return c.Launch("loss_smoothl1"+sfx, n, x, y, c.Float(d.param), d.order, n)
}
