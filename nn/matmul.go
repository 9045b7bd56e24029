package nn

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/gemm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MatMul is the matrix product op(a)·op(b), where op(x) is x or, when its
// flag is set, x transposed in its last two axes: torch.matmul(a, b) for
// matrices and torch.bmm for batches of them (with a.mT, b.mT for the
// flags), Gorgonia's Mul and BatchedMatMul(a, b, transA, transB).
//
// Shapes: a and b both of rank 2, op(a) [m, k] and op(b) [k, n], result
// [m, n]; or both of rank 3 with the same batch size B, op(a) [B, m, k],
// op(b) [B, k, n], result [B, m, n]. Both float32 or both float64. Sizes
// may be 0 (k = 0 gives zeros).
//
// It runs on gops' own matrix product (Go assembly where the CPU has a
// kernel for it, nothing to install; package gemm), not on the BLAS given
// to gorgonia.Use, unless the program installed OpenBLAS there
// (openblas.Use): then on OpenBLAS, as Conv2d's products. Either way the
// result is bitwise the same for any GOMAXPROCS. The product is
// differentiable to every order w.r.t. both inputs: its gradients are
// further MatMuls (the four transpose cases are one closed family). In the
// cuda build it runs on cuBLAS.
//
// Errors when the node is built: a nil input, a dtype other than float32
// or float64 or differing between a and b, ranks other than 2 and 2 or 3
// and 3, batch sizes or inner sizes that differ.
func MatMul(a, b *gorgonia.Node, transA, transB bool) (*gorgonia.Node, error) {
	const name = "MatMul"
	for _, x := range []struct {
		n    *gorgonia.Node
		name string
	}{{a, "a"}, {b, "b"}} {
		if x.n == nil {
			return nil, fmt.Errorf("nn: %s: %s is nil", name, x.name)
		}
		if dt := x.n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
			return nil, fmt.Errorf("nn: %s: %s dtype %v, want float32 or float64", name, x.name, dt)
		}
	}
	if a.Dtype() != b.Dtype() {
		return nil, fmt.Errorf("nn: %s: b dtype %v differs from a dtype %v", name, b.Dtype(), a.Dtype())
	}
	dims := a.Shape().Dims()
	if a.IsScalar() || b.IsScalar() || (dims != 2 && dims != 3) || b.Shape().Dims() != dims {
		return nil, fmt.Errorf("nn: %s: a and b must both have rank 2 or both rank 3, got shapes %v and %v", name, a.Shape(), b.Shape())
	}
	return ad.Apply(matMulSpec(dims, transA, transB), a, b)
}

// matMulDims returns the batch size (1 for rank 2) and m, n, k of
// op(a)·op(b), or an error naming the mismatch.
func matMulDims(sa, sb tensor.Shape, transA, transB bool) (batch, m, n, k int, err error) {
	batch = 1
	if len(sa) == 3 {
		if sa[0] != sb[0] {
			return 0, 0, 0, 0, fmt.Errorf("nn: MatMul: batch sizes differ: a %v, b %v", sa, sb)
		}
		batch, sa, sb = sa[0], sa[1:], sb[1:]
	}
	m, k = sa[0], sa[1]
	if transA {
		m, k = k, m
	}
	kb, n := sb[0], sb[1]
	if transB {
		kb, n = n, kb
	}
	if k != kb {
		return 0, 0, 0, 0, fmt.Errorf("nn: MatMul: inner sizes differ: op(a) has %d columns, op(b) %d rows (a %v, b %v, transA %v, transB %v)", k, kb, sa, sb, transA, transB)
	}
	return batch, m, n, k, nil
}

// matMulSpec is the product op for rank-dims inputs. Backward, for the
// upstream gradient G of op(a)·op(b):
//
//	d a = G·op(b)ᵀ             (a as is)      or op(b)·Gᵀ (a transposed),
//	d b = op(a)ᵀ·G             (b as is)      or Gᵀ·op(a) (b transposed),
//
// each a MatMul of the same family.
func matMulSpec(dims int, transA, transB bool) ad.OpSpec {
	return withCUDA(ad.OpSpec{
		Name:       "MatMul",
		Params:     fmt.Sprintf("transA=%v transB=%v", transA, transB),
		InputDims:  []int{dims, dims},
		OutputDims: dims,
		Shape: func(s []tensor.Shape) (tensor.Shape, error) {
			batch, m, n, _, err := matMulDims(s[0], s[1], transA, transB)
			if err != nil {
				return nil, err
			}
			if dims == 3 {
				return tensor.Shape{batch, m, n}, nil
			}
			return tensor.Shape{m, n}, nil
		},
		Kernel: ad.Floats(matMulKernel[float32](transA, transB), matMulKernel[float64](transA, transB)),
		// Every product has beta 0: product writes c without reading it.
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			a, b := in[0], in[1]
			var da, db *gorgonia.Node
			var err error
			if transA {
				da, err = ad.Apply(matMulSpec(dims, transB, true), b, grad)
			} else {
				da, err = ad.Apply(matMulSpec(dims, false, !transB), grad, b)
			}
			if err != nil {
				return nil, err
			}
			if transB {
				db, err = ad.Apply(matMulSpec(dims, true, transA), grad, a)
			} else {
				db, err = ad.Apply(matMulSpec(dims, !transA, false), a, grad)
			}
			if err != nil {
				return nil, err
			}
			return gorgonia.Nodes{da, db}, nil
		},
	}, matMulGPU{transA: transA, transB: transB})
}

// matMulKernel is cpu.MatMul with the product that product (product.go)
// picks (cpuProduct, asking for the installed BLAS once per run).
func matMulKernel[T gemm.Float](transA, transB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		batch, m, n, k, err := matMulDims(in[0].Shape, in[1].Shape, transA, transB)
		if err != nil {
			return err
		}
		if err := cpu.MatMul(batch, m, n, k, transA, transB, cpuProduct[T](), out.Data, in[0].Data, in[1].Data); err != nil {
			return fmt.Errorf("nn: MatMul: %w", err)
		}
		return nil
	}
}

// matMulGPU is what MatMul's CUDA twin needs (matmul_cuda.go).
type matMulGPU struct{ transA, transB bool }
