//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// Dropout's mask on the GPU: internal/cuda/kernels/nn/dropout.cu. The keep decisions are
// drawn on the host by cpu.DropoutKept (PCG(seed, run), the run counter
// shared with the CPU kernel), so the mask is bitwise the CPU's.

// Launch draws the next run's decisions and writes the mask.
func (d dropoutGPU) Launch(c *glue.Call, sfx string, _ []gorgonia.Value, out gorgonia.Value) error {
	n := size(out)
	kept := make([]uint8, n)
	cpu.DropoutKept(d.p, d.seed, d.runs.Add(1)-1, kept)
	keep := 0.0
	if d.p < 1 {
		keep = 1 / (1 - d.p)
	}
	p, err := glue.Upload(c, kept)
	if err != nil {
		return err
	}
	return c.Launch("dropout_mask"+sfx, n, p, glue.Ptr(out), c.Float(keep), n)
}
