//go:build cuda

package nn

import (
	"fmt"

	"github.com/gops-dev/gops/internal/cudaglue"
	"gorgonia.org/gorgonia"
)

// CrossEntropy's picks on the GPU: kernels/loss.cu (SmoothL1Loss' family
// and Softplus are unaryGPU, activation_cuda.go).

// launch runs Pick, Scatter, PickVec or ScatterVec. The targets are
// checked on the host first, with pickKernel's error.
func (d pickGPU) launch(c *gpuCall, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := in[1].Shape().TotalSize()
	t, err := cudaglue.Download[int](c, ptr(in[1]), n)
	if err != nil {
		return err
	}
	for i, ti := range t {
		if ti != d.ignore && (ti < 0 || ti >= d.c) {
			return fmt.Errorf("nn: CrossEntropy: target %d at row %d is outside [0, %d) and not IgnoreIndex %d", ti, i, d.c, d.ignore)
		}
	}
	switch {
	case d.forward:
		return c.Launch("loss_pick"+sfx, n, ptr(in[0]), ptr(in[1]), ptr(out), n, d.c, d.ignore, d.vec)
	case d.vec:
		return c.Launch("loss_scatter_vec"+sfx, d.c, ptr(in[0]), ptr(in[1]), ptr(out), n, d.c, d.ignore)
	}
	return c.Launch("loss_scatter"+sfx, n*d.c, ptr(in[0]), ptr(in[1]), ptr(out), n, d.c, d.ignore)
}
