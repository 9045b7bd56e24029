//go:build cuda

package nn

import (
	"github.com/gops-dev/gops/internal/cuda/glue"
	"gorgonia.org/gorgonia"
)

// MatMul's CUDA twin: one cublasGemm (conv_cuda.go: cuBLAS' Sgemm/Dgemm
// on the engine's handle) per batch.
func (d matMulGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	batch, m, n, k, err := matMulDims(in[0].Shape(), in[1].Shape(), d.transA, d.transB)
	if err != nil {
		return err
	}
	if batch == 0 || m == 0 || n == 0 {
		return nil
	}
	if k == 0 {
		// An empty inner size: a zero product, as cuBLAS' C ← 0·C.
		return fill(c, sfx, glue.Ptr(out), 0, size(out))
	}
	ds, err := denseValues(c, in[0], in[1], out)
	if err != nil {
		return err
	}
	a, b, o := devMat{ds[0], 0}, devMat{ds[1], 0}, devMat{ds[2], 0}
	lda, ldb := k, n
	if d.transA {
		lda = m
	}
	if d.transB {
		ldb = k
	}
	for i := 0; i < batch; i++ {
		if err := cublasGemm(c, d.transA, d.transB, m, n, k, a.at(i*m*k), lda, b.at(i*k*n), ldb, 0, o.at(i*m*n), n); err != nil {
			return err
		}
	}
	return c.Sync()
}
