//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// Linear's CUDA twin: MatMul's (one cublasGemm, weight read transposed),
// then BiasAdd's kernel in place on [N, out] (norm.cu's norm_bias_add with
// L = 1), as Conv2d's forward adds its bias.
func (d linearGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	if err := (matMulGPU{transA: false, transB: true}).Launch(c, sfx, in[:2], out); err != nil {
		return err
	}
	s := out.Shape()
	if !d.bias || s[0]*s[1] == 0 {
		return nil
	}
	if err := c.Launch("norm_bias_add"+sfx, s[0]*s[1], glue.Ptr(out), glue.Ptr(in[2]), glue.Ptr(out), s[0], s[1], 1); err != nil {
		return err
	}
	return c.Sync()
}
