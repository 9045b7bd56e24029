// Package matprod is the one place that decides which matrix product the
// CPU kernels run: gops' own (internal/gemm) or the OpenBLAS a program
// installed with openblas.Use. nn's MatMul, Linear and convolutions, and
// detection's fused inference convolutions, take their cpu.Product from
// CPU.
package matprod

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/gemm"
	"gonum.org/v1/gonum/blas"
	"gorgonia.org/gorgonia"
)

// Which matrix product runs, for nn's MatMul (and so gops' DeformConv2d
// and box gradients) and for the convolutions (Conv2d, ConvTranspose2d
// and their gradients' products, detection's fused ones): gops' own
// (package gemm), unless the program installed OpenBLAS with openblas.Use.
// Each kernel run asks installedBLAS once and passes the answer to every
// product it computes. installedBLAS reads Gorgonia's BLAS as Gorgonia's
// own products do, without a lock: a program installs it (openblas.Use)
// before running graphs, never while they run.

// installedProduct is a BLAS installed with gorgonia.Use whose products
// replace gops' own: OpenBLAS (package openblas' BLAS, the only one with a
// Core method).
type installedProduct interface {
	Core() string
	Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
}

// installedBLAS is the OpenBLAS the program installed with openblas.Use
// (or gorgonia.Use of an *openblas.BLAS), or nil: then product runs on
// gops' own.
func installedBLAS() installedProduct {
	ext, _ := gorgonia.WhichBLAS().(installedProduct)
	return ext
}

// CPU is product on the BLAS installed now (installedBLAS, asked once),
// as the cpu.Product that cpu.MatMul and cpu.Conv call: nil, cpu's name
// for gops' own product (gemm.Gemm, which product runs without ext),
// when no OpenBLAS is installed.
func CPU[T gemm.Float]() cpu.Product[T] {
	ext := installedBLAS()
	if ext == nil {
		return nil // gops' own (cpu.Product's nil): product's, with U_ξ packed once by Winograd
	}
	return func(transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
		return product(ext, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
	}
}

// product computes c = op(a)·op(b) + beta·c (row-major, as gemm.Gemm) on
// ext if not nil, else, and for empty products, on gops' own product
// (which, with beta = 0, writes c without reading it). Bad sizes, leading
// dimensions or slice lengths are an error (gemm.Check), on either.
func product[T gemm.Float](ext installedProduct, transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) error {
	if ext == nil || m == 0 || n == 0 || k == 0 {
		return gemm.Gemm(transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
	}
	if err := gemm.Check(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc); err != nil {
		return err
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	switch a := any(a).(type) {
	case []float32:
		ext.Sgemm(tA, tB, m, n, k, 1, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		ext.Dgemm(tA, tB, m, n, k, 1, a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
	return nil
}
