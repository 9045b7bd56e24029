//go:build cuda

package nn

import (
	"fmt"

	"github.com/gops-dev/gops/internal/cuda/glue"
	"gonum.org/v1/gonum/blas"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MatMul's CUDA twin: cuBLAS' Sgemm/Dgemm on the engine's handle, one call
// per batch. cuBLAS is column-major, so the row-major C = op(A)·op(B) is
// computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swapped, flags kept.
func (d matMulGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	batch, m, n, k, err := matMulDims(in[0].Shape(), in[1].Shape(), d.transA, d.transB)
	if err != nil {
		return err
	}
	if batch == 0 || m == 0 || n == 0 {
		return nil
	}
	var ds [3]*tensor.Dense
	for i, v := range []gorgonia.Value{in[0], in[1], out} {
		t, ok := v.(*tensor.Dense)
		if !ok {
			return fmt.Errorf("nn: MatMul: CUDA value %d is a %T, want *tensor.Dense", i, v)
		}
		ds[i] = t
	}
	lda, ldb := max(k, 1), max(n, 1)
	if d.transA {
		lda = max(m, 1)
	}
	if d.transB {
		ldb = max(k, 1)
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if d.transA {
		tA = blas.Trans
	}
	if d.transB {
		tB = blas.Trans
	}
	c.E.DoWork()
	bl := c.E.BLASContext()
	for i := 0; i < batch; i++ {
		// With k = 0, A and B are empty and not read: C's memory stands in.
		ao, bo, co := i*m*k, i*k*n, i*m*n
		switch sfx {
		case "_f32":
			a, b, cc := ds[0].Float32s(), ds[1].Float32s(), ds[2].Float32s()[co:co+m*n]
			if k == 0 {
				a, b, ao, bo = cc, cc, 0, 0
			}
			c.Ctx.Do(func() error {
				bl.Sgemm(tB, tA, n, m, k, 1, b[bo:], ldb, a[ao:], lda, 0, cc, n)
				return nil
			})
		default:
			a, b, cc := ds[0].Float64s(), ds[1].Float64s(), ds[2].Float64s()[co:co+m*n]
			if k == 0 {
				a, b, ao, bo = cc, cc, 0, 0
			}
			c.Ctx.Do(func() error {
				bl.Dgemm(tB, tA, n, m, k, 1, b[bo:], ldb, a[ao:], lda, 0, cc, n)
				return nil
			})
		}
		if err := bl.Err(); err != nil {
			return fmt.Errorf("nn: MatMul: cuBLAS: %w", err)
		}
	}
	return c.Sync()
}
