//go:build openblas

package gops

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
	"gorgonia.org/gorgonia"
)

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int num_threads);
import "C"

// With the openblas build tag, Gorgonia's matrix products (DeformConv2d's
// grouped product among them) run on OpenBLAS through cgo instead of gonum's
// pure-Go BLAS. It needs the OpenBLAS headers and library
// (Debian: apt-get install libopenblas-dev).
//
// OpenBLAS runs single-threaded here and goroutinesBLAS splits each large
// matrix product into blocks spread over GOMAXPROCS goroutines instead:
// OpenBLAS's own worker threads spin (sched_yield) for a while after every
// product, and on a small machine that spinning took the cores from the
// sampling kernels that run next (DeformConv2d v1 forward, 2 cores: 36 ms
// with OpenBLAS's threads, 26 ms split; BENCHMARKS.md has the current
// figures, rows @openblas).
func init() {
	C.openblas_set_num_threads(1)
	gorgonia.Use(goroutinesBLAS{})
}

// goroutinesBLAS is OpenBLAS (netlib) with Sgemm and Dgemm split into
// column (or row) blocks of C, spread over goroutines by parallelFor.
// OpenBLAS's rounding of an element can depend on the width of the block
// it is computed in, so the blocks depend on the product's shape only, not
// on GOMAXPROCS: results are bitwise the same for any GOMAXPROCS, as with
// the default build.
type goroutinesBLAS struct{ netlib.Implementation }

// gemmSplitMin is the product size m·n·k below which one call does all.
const gemmSplitMin = 1 << 18

// Sgemm is netlib's Sgemm over goroutines; see goroutinesBLAS.
func (b goroutinesBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, bm []float32, ldb int, beta float32, c []float32, ldc int) {
	splitGemm(m, n, k, tA, tB, lda, ldb, ldc, func(i0, m, j0, n, ao, bo, co int) {
		b.Implementation.Sgemm(tA, tB, m, n, k, alpha, a[ao:], lda, bm[bo:], ldb, beta, c[co:], ldc)
	})
}

// Dgemm is netlib's Dgemm over goroutines; see goroutinesBLAS.
func (b goroutinesBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, bm []float64, ldb int, beta float64, c []float64, ldc int) {
	splitGemm(m, n, k, tA, tB, lda, ldb, ldc, func(i0, m, j0, n, ao, bo, co int) {
		b.Implementation.Dgemm(tA, tB, m, n, k, alpha, a[ao:], lda, bm[bo:], ldb, beta, c[co:], ldc)
	})
}

// splitGemm cuts C (m×n, row-major) into blocks of whole columns (when
// n >= m) or whole rows and calls gemm on each: rows i0..i0+m, columns
// j0..j0+n, with the offsets into a, b and c where the block's operands
// start. Small or degenerate products go to one call unchanged. A panic of
// netlib over bad arguments reaches the caller (parallelFor re-raises it).
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
	const blocks = 16 // fixed: the partition, hence the result, must not depend on GOMAXPROCS
	chunk := (size + blocks - 1) / blocks
	chunk = (chunk + 15) / 16 * 16
	var ranges [][2]int
	for lo := 0; lo < size; lo += chunk {
		ranges = append(ranges, [2]int{lo, min(lo+chunk, size)})
	}
	parallelFor(len(ranges), func(lo, hi int) {
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
