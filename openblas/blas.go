package openblas

import (
	"math"

	gemmk "github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/par"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// CBLAS constants (cblas.h).
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// BLAS is gonum's BLAS (gonum.Implementation, which it embeds) with Sgemm
// and Dgemm from an OpenBLAS shared library (cblas_sgemm/cblas_dgemm,
// LP64: 32-bit integers), as Load returns it. It satisfies gorgonia.BLAS
// and gonum's blas.Float32 and blas.Float64. Its methods are safe for
// concurrent use. The zero value is not usable: get one from Load.
type BLAS struct {
	gonum.Implementation
	name  string // the file name it was opened by
	core  string // openblas_get_corename(), or "unknown"
	sgemm func(order, tA, tB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)
	dgemm func(order, tA, tB, m, n, k int32, alpha float64, a *float64, lda int32, b *float64, ldb int32, beta float64, c *float64, ldc int32)
}

// Name is the file name the library was opened by, such as
// "libopenblas.so.0".
func (o *BLAS) Name() string { return o.name }

// Core is the kernel family OpenBLAS chose for this CPU
// (openblas_get_corename: "SkylakeX", "Haswell", "Zen", ...; "Prescott" is
// its generic SSE3 fallback, several times slower on a recent CPU that the
// library is too old to recognise; OPENBLAS_CORETYPE, read when the library
// is loaded, overrides it), or "unknown" where the library does not say.
func (o *BLAS) Core() string { return o.core }

// describe is Use's description of o.
func (o *BLAS) describe() string { return "openblas (" + o.name + ", core " + o.core + ")" }

func cblasTranspose(t blas.Transpose) int32 {
	if t == blas.NoTrans {
		return cblasNoTrans
	}
	return cblasTrans // Trans, and ConjTrans for real matrices
}

// gemmOpenBLASMin is the product size m·n·k from which Sgemm/Dgemm call
// OpenBLAS: a call through purego costs about 1 µs, more than gonum takes
// for a product below about 16³ multiply-adds. The choice depends on the
// shape only.
const gemmOpenBLASMin = 1 << 12

// useOpenBLAS reports whether a product goes to OpenBLAS: valid arguments
// (gemmArgsOK) and at least gemmOpenBLASMin multiply-adds.
func useOpenBLAS(tA, tB blas.Transpose, m, n, k, la, lda, lb, ldb, lc, ldc int) bool {
	return gemmArgsOK(tA, tB, m, n, k, la, lda, lb, ldb, lc, ldc) && m > 0 && n > 0 && k > 0 && m*n*k >= gemmOpenBLASMin
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C (row-major, as gonum's
// Sgemm) on OpenBLAS, a large product cut into 16 blocks fixed by its shape
// and spread over goroutines. Arguments OpenBLAS must not see (bad sizes, short
// slices, sizes past int32), empty products and products of fewer than 16³
// multiply-adds go to gonum's Sgemm, which panics on bad arguments.
func (o *BLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, o.Implementation.Sgemm, o.sgemm)
}

// Dgemm is Sgemm in float64: gonum's Dgemm on OpenBLAS.
func (o *BLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, o.Implementation.Dgemm, o.dgemm)
}

// gemm is Sgemm and Dgemm: the product on gonum (fallback) or, when
// useOpenBLAS says so, on OpenBLAS (cblas) in splitGemm's blocks.
func gemm[T float32 | float64](tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int,
	fallback func(tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int),
	cblas func(order, tA, tB, m, n, k int32, alpha T, a *T, lda int32, b *T, ldb int32, beta T, c *T, ldc int32)) {
	if !useOpenBLAS(tA, tB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc) {
		fallback(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	ta, tb := cblasTranspose(tA), cblasTranspose(tB)
	splitGemm(m, n, k, tA, tB, lda, ldb, ldc, func(_, m, _, n, ao, bo, co int) {
		cblas(cblasRowMajor, ta, tb, int32(m), int32(n), int32(k), alpha, &a[ao], int32(lda), &b[bo], int32(ldb), beta, &c[co], int32(ldc))
	})
}

// gemmArgsOK reports whether a row-major product with these sizes, leading
// dimensions and slice lengths is valid (internal/gemm.Check) and fits OpenBLAS's
// 32-bit integers, so that OpenBLAS reads and writes only inside the slices.
func gemmArgsOK(tA, tB blas.Transpose, m, n, k, la, lda, lb, ldb, lc, ldc int) bool {
	okT := func(t blas.Transpose) bool { return t == blas.NoTrans || t == blas.Trans || t == blas.ConjTrans }
	if !okT(tA) || !okT(tB) {
		return false
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			return false
		}
	}
	return gemmk.Check(tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, la, lda, lb, ldb, lc, ldc) == nil
}

// selfTest compares a small product of every transpose combination, in both
// dtypes, with gonum's, so that a library with another ABI is not used.
func (o *BLAS) selfTest() bool {
	a := []float64{1, -2, 3, 0.5, 4, -1.5} // 2×3 or 3×2
	b := []float64{2, 1, -1, 3, 0.25, -2}  // 3×2 or 2×3
	c0 := []float64{1, 2, 3, 4}            // 2×2
	for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			lda, ldb := 3, 2
			if tA != blas.NoTrans {
				lda = 2
			}
			if tB != blas.NoTrans {
				ldb = 3
			}
			want := append([]float64(nil), c0...)
			gonum.Implementation{}.Dgemm(tA, tB, 2, 2, 3, 0.5, a, lda, b, ldb, 2, want, 2)
			got := append([]float64(nil), c0...)
			o.dgemm(cblasRowMajor, cblasTranspose(tA), cblasTranspose(tB), 2, 2, 3, 0.5, &a[0], int32(lda), &b[0], int32(ldb), 2, &got[0], 2)
			a32, b32 := make([]float32, len(a)), make([]float32, len(b))
			for i := range a {
				a32[i], b32[i] = float32(a[i]), float32(b[i])
			}
			got32 := []float32{1, 2, 3, 4}
			o.sgemm(cblasRowMajor, cblasTranspose(tA), cblasTranspose(tB), 2, 2, 3, 0.5, &a32[0], int32(lda), &b32[0], int32(ldb), 2, &got32[0], 2)
			for i := range want {
				// The values are exact in binary: any correct BLAS agrees.
				if got[i] != want[i] || float64(got32[i]) != want[i] {
					return false
				}
			}
		}
	}
	return true
}

// gemmSplitMin is the product size m·n·k below which one call does all.
const gemmSplitMin = 1 << 18

// gemmBlocks is the number of blocks a large product is cut into. It is
// fixed: OpenBLAS's rounding of an element can depend on the width of the
// block it is computed in, so the partition must depend on the shape only,
// not on GOMAXPROCS.
const gemmBlocks = 16

// splitGemm cuts C (m×n, row-major) into gemmBlocks blocks of whole columns
// (when n >= m) or whole rows, and calls gemm on each, spread over
// goroutines by par.For: rows i0..i0+m, columns j0..j0+n, with the
// offsets into a, b and c where the block's operands start. Small products
// go to one call. Running OpenBLAS single-threaded and splitting here beats
// OpenBLAS's own threads, which spin (sched_yield) after every product and
// took the cores from the sampling kernels that run next (DeformConv2d v1
// forward, 2 cores: 36 ms with OpenBLAS's threads, 26 ms split).
func splitGemm(m, n, k int, tA, tB blas.Transpose, lda, ldb, ldc int, gemm func(i0, m, j0, n, ao, bo, co int)) {
	if m <= 0 || n <= 0 || k <= 0 || m*n*k < gemmSplitMin {
		gemm(0, m, 0, n, 0, 0, 0)
		return
	}
	byCols := n >= m
	size := m
	if byCols {
		size = n
	}
	// Blocks of a multiple of 16 columns (rows) keep OpenBLAS's kernels on
	// full panels.
	chunk := (size + gemmBlocks - 1) / gemmBlocks
	chunk = (chunk + 15) / 16 * 16
	var ranges [][2]int
	for lo := 0; lo < size; lo += chunk {
		ranges = append(ranges, [2]int{lo, min(lo+chunk, size)})
	}
	par.For(len(ranges), func(lo, hi int) {
		for _, r := range ranges[lo:hi] {
			s, e := r[0], r[1]
			if byCols {
				bo := s // B is k×n: column s starts at s
				if tB != blas.NoTrans {
					bo = s * ldb // B is stored n×k: row s
				}
				gemm(0, m, s, e-s, 0, bo, s)
			} else {
				ao := s * lda // A is m×k: row s
				if tA != blas.NoTrans {
					ao = s // A is stored k×m: column s
				}
				gemm(s, e-s, 0, n, ao, 0, s*ldc)
			}
		}
	})
}
