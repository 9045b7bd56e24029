package nn

import (
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/matprod"
)

// cpuProduct is the product that MatMul, Linear and the convolutions'
// kernels run (matprod.CPU: gops' own, or the OpenBLAS the program
// installed with openblas.Use; asked once per kernel run).
func cpuProduct[T gemm.Float]() cpu.Product[T] { return matprod.CPU[T]() }
