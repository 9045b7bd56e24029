// Package gemm exports gops' matrix product (internal/gemm: packing in Go,
// micro-kernels in Go assembly, AVX-512 or AVX2/FMA chosen from the CPU's
// features on amd64 and NEON on arm64, a portable Go kernel elsewhere; no
// cgo, no system library), the one nn.MatMul and nn's convolutions use, as
// a gonum BLAS implementation, for a Gorgonia user's own products:
//
//	gorgonia.Use(gemm.Implementation{})
//
// Implementation embeds gonum's pure-Go BLAS and overrides Sgemm and Dgemm;
// every other routine is gonum's. Kernel names the micro-kernel in use.
// Products are bitwise identical for any
// GOMAXPROCS and between the assembly kernels. Using it is the
// caller's choice: importing this package changes no global state.
package gemm

import (
	gemmk "github.com/gops-dev/gops/internal/gemm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation is gonum's blas64/blas32 implementation with gops' Sgemm
// and Dgemm. It satisfies gorgonia.BLAS (blas.Float32 and blas.Float64).
type Implementation struct {
	gonum.Implementation
}

// Kernel names the micro-kernel the products run on this CPU: "avx512",
// "avx2" (amd64), "neon" (arm64) or "go".
func Kernel() string { return gemmk.Kernel() }

func trans(name string, t blas.Transpose) bool {
	switch t {
	case blas.NoTrans:
		return false
	case blas.Trans, blas.ConjTrans:
		return true
	}
	panic("gemm: bad " + name + " transpose")
}

// Sgemm computes C ← alpha·op(A)·op(B) + beta·C in float32, row-major, with
// gonum's (and the reference BLAS's) arguments and semantics: op(A) is m×k,
// op(B) k×n, C m×n; beta = 0 ignores C's values, alpha = 0 reads neither A
// nor B. Like every gonum BLAS routine it panics on bad arguments (a bad
// transpose, negative sizes, a leading dimension or slice too short), with
// one difference: when m, n or k is 0 the lengths of A and B are not
// checked (they are not read), where gonum's Sgemm rejects a short A or B
// with k = 0.
func (Implementation) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if err := gemmk.Gemm(trans("A", tA), trans("B", tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		panic(err.Error())
	}
}

// Dgemm is Sgemm in float64.
func (Implementation) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if err := gemmk.Gemm(trans("A", tA), trans("B", tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		panic(err.Error())
	}
}
