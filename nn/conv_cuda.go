//go:build cuda

package nn

import (
	"fmt"

	"github.com/gops-dev/gops/internal/cuda/glue"
	"gonum.org/v1/gonum/blas"
	"gorgonia.org/cu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Conv2d's family on the GPU: internal/cuda/kernels/nn/conv.cu's im2col and col2im, and
// cuBLAS' Sgemm/Dgemm on the engine's handle for the products, per sample
// and group as convKernel (one columns buffer; the weight gradient sums
// the samples in order, beta 0 for the first). The products are cuBLAS',
// not internal/gemm's: results agree with the CPU's to rounding, not
// bitwise; im2col and col2im are bitwise.

// Launch runs the member d.mode of the family.
func (d convGPU) Launch(c *glue.Call, sfx string, in []gorgonia.Value, out gorgonia.Value) error {
	g := d.g
	if g.N == 0 {
		if d.mode == convWeight {
			return fill(c, sfx, glue.Ptr(out), 0, size(out)) // no samples: a zero gradient
		}
		return nil
	}
	ds, err := denseValues(c, in[0], in[1], out)
	if err != nil {
		return err
	}
	x, w, o := devMat{ds[0], 0}, devMat{ds[1], 0}, devMat{ds[2], 0}
	chw, l, cog, rows := g.C*g.H*g.W, g.L(), g.Cout/g.Groups, g.Rows()
	elem := cu.DevicePtr(c.Dt.Size())
	geom := []any{g.C, g.H, g.W, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.HO, g.WO}
	var cols *tensor.Dense
	if !g.Pointwise() {
		if cols, err = c.TempTensor(g.C * g.K() * l); err != nil {
			return err
		}
	}
	for n := 0; n < g.N; n++ {
		switch d.mode {
		case convForward, convWeight:
			src := devMat{ds[0], n * chw}
			if cols != nil {
				args := append([]any{glue.Ptr(in[0]) + cu.DevicePtr(n*chw)*elem, cu.DevicePtr(cols.Uintptr())}, geom...)
				if err := c.Launch("conv_im2col"+sfx, g.C*g.K()*l, args...); err != nil {
					return err
				}
				src = devMat{cols, 0}
			}
			for gi := 0; gi < g.Groups; gi++ {
				var err error
				if d.mode == convForward {
					err = cublasGemm(c, false, false, cog, l, rows, w.at(gi*cog*rows), rows, src.at(gi*rows*l), l, 0, o.at(n*g.Cout*l+gi*cog*l), l)
				} else {
					gn := devMat{ds[1], n*g.Cout*l + gi*cog*l} // G is the second input
					err = cublasGemm(c, false, true, cog, rows, l, gn, l, src.at(gi*rows*l), l, float64(min(n, 1)), o.at(gi*cog*rows), rows)
				}
				if err != nil {
					return err
				}
			}
		case convInput:
			dst := o.at(n * chw)
			if cols != nil {
				dst = devMat{cols, 0}
			}
			for gi := 0; gi < g.Groups; gi++ {
				if err := cublasGemm(c, true, false, rows, l, cog, w.at(gi*cog*rows), rows, x.at(n*g.Cout*l+gi*cog*l), l, 0, dst.at(gi*rows*l), l); err != nil {
					return err
				}
			}
			if cols != nil {
				args := append([]any{cu.DevicePtr(cols.Uintptr()), glue.Ptr(out) + cu.DevicePtr(n*chw)*elem}, geom...)
				if err := c.Launch("conv_col2im"+sfx, chw, args...); err != nil {
					return err
				}
			}
		}
	}
	if d.bias {
		// BiasAdd's kernel in place, as Conv2d's forward on the CPU adds
		// the bias to each sample's product.
		if err := c.Launch("norm_bias_add"+sfx, g.N*g.Cout*l, glue.Ptr(out), glue.Ptr(in[2]), glue.Ptr(out), g.N, g.Cout, l); err != nil {
			return err
		}
	}
	return c.Sync()
}

// denseValues are vs as *tensor.Dense, which cuBLAS' products take (as Go
// slices of device memory).
func denseValues(c *glue.Call, vs ...gorgonia.Value) ([]*tensor.Dense, error) {
	ds := make([]*tensor.Dense, len(vs))
	for i, v := range vs {
		t, ok := v.(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("nn: %s: CUDA value %d is a %T, want *tensor.Dense", c.Name, i, v)
		}
		ds[i] = t
	}
	return ds, nil
}

// devMat is a matrix operand in device memory: a tensor and the offset of
// its first element.
type devMat struct {
	t   *tensor.Dense
	off int
}

func (m devMat) at(off int) devMat { return devMat{m.t, m.off + off} }

// cublasGemm is the row-major C ← op(A)·op(B) + beta·C (C m×n, K = k) on
// cuBLAS, which is column-major: computed as Cᵀ = op(B)ᵀ·op(A)ᵀ, the
// operands swapped, flags kept. Conv2d's family and MatMul's twin
// (matmul_cuda.go) use it.
func cublasGemm(c *glue.Call, transA, transB bool, m, n, k int, a devMat, lda int, b devMat, ldb int, beta float64, cm devMat, ldc int) error {
	if m == 0 || n == 0 || k == 0 {
		return fmt.Errorf("nn: %s: an empty product %dx%dx%d on the GPU", c.Name, m, n, k)
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	c.E.DoWork()
	bl := c.E.BLASContext()
	switch c.Dt {
	case tensor.Float32:
		as, bs, cs := a.t.Float32s()[a.off:], b.t.Float32s()[b.off:], cm.t.Float32s()[cm.off:]
		c.Ctx.Do(func() error {
			bl.Sgemm(tB, tA, n, m, k, 1, bs, ldb, as, lda, float32(beta), cs, ldc)
			return nil
		})
	default:
		as, bs, cs := a.t.Float64s()[a.off:], b.t.Float64s()[b.off:], cm.t.Float64s()[cm.off:]
		c.Ctx.Do(func() error {
			bl.Dgemm(tB, tA, n, m, k, 1, bs, ldb, as, lda, beta, cs, ldc)
			return nil
		})
	}
	if err := bl.Err(); err != nil {
		return fmt.Errorf("nn: %s: cuBLAS: %w", c.Name, err)
	}
	return nil
}
