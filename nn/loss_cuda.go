//go:build cuda

package nn

import (
	"fmt"

	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// CrossEntropy's picks and row ops on the GPU: internal/cuda/kernels/nn/loss.cu (SmoothL1Loss' family
// and Softplus are unaryGPU, activation_cuda.go).

// Launch runs Pick, Scatter, PickVec or ScatterVec. The targets are
// checked on the host first, with pickKernel's error.
func (d pickGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	n := in[1].Shape().TotalSize()
	t, err := glue.Download[int](c, glue.Ptr(in[1]), n)
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
		return c.Launch("loss_pick"+sfx, n, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), n, d.c, d.ignore, d.vec)
	case d.vec:
		return c.Launch("loss_scatter_vec"+sfx, d.c, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), n, d.c, d.ignore)
	}
	return c.Launch("loss_scatter"+sfx, n*d.c, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), n, d.c, d.ignore)
}

// Launch runs LogSumExp, NLL, Mask, LogSumExpGrad or NLLGrad, one thread
// per row (the gradients divide by their row's sum of exponentials). NLL's and NLLGrad's targets are checked on
// the host first, with checkTargets' error.
func (d lseGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if d.kind == lseNLL || d.kind == lseNLLGrad {
		ti := in[len(in)-1]
		t, err := glue.Download[int](c, glue.Ptr(ti), d.rows)
		if err != nil {
			return err
		}
		if err := checkTargets(t, d.n, d.ignore); err != nil {
			return err
		}
	}
	switch d.kind {
	case lseForward:
		return c.Launch("loss_lse"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(out), d.rows, d.n)
	case lseNLL:
		return c.Launch("loss_nll"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), d.rows, d.n, d.ignore)
	case lseMask:
		return c.Launch("loss_mask"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(out), d.rows, d.ignore)
	case lseGrad:
		return c.Launch("loss_lse_grad"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(in[2]), glue.Ptr(out), d.rows, d.n)
	}
	return c.Launch("loss_nll_grad"+sfx, d.rows, glue.Ptr(in[0]), glue.Ptr(in[1]), glue.Ptr(in[2]), glue.Ptr(out), d.rows, d.n, d.ignore)
}
