package gops

import (
	"math"
	"os"
	"strings"

	"github.com/gops-dev/gops/internal/cpu"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"gorgonia.org/gorgonia"
)

// BLAS describes the implementation that runs Gorgonia's matrix products in
// this process (DeformConv2d's grouped product among them, and every
// gorgonia.Mul / BatchedMatMul), for logs and benchmark reports: either
// "openblas (NAME)", or "gonum (pure Go)" followed by why OpenBLAS is not
// used.
//
// At start-up gops looks for OpenBLAS as a shared library (Linux and macOS
// on amd64/arm64: libopenblas.so.0, libopenblas.so, libopenblas.dylib;
// Debian: apt-get install libopenblas0), loaded with
// github.com/ebitengine/purego: no C compiler or headers are needed to
// build, but the binary then links the system's C library dynamically.
// The build tag gops_nodl leaves the loader out (gonum only; a static
// binary with CGO_ENABLED=0). If OpenBLAS is there, has 32-bit integers and
// passes a self-test, it computes Gorgonia's float32/float64 matrix
// products (Sgemm/Dgemm) of at least gemmOpenBLASMin multiply-adds,
// single-threaded, each large product cut into blocks spread over
// goroutines; smaller products and all other BLAS routines stay gonum's.
// The environment variable GOPS_BLAS=gonum keeps gonum's pure-Go BLAS
// (GOPS_BLAS=openblas, or unset, the default). Either way results are
// bitwise the same for any GOMAXPROCS; they differ between the two BLAS in
// the last bits.
//
// gops sets OpenBLAS's thread count to 1 for the whole process. If the
// program later calls gorgonia.Use with another BLAS, BLAS says so.
func BLAS() string {
	if loadedOpenBLAS != nil && gorgonia.WhichBLAS() != gorgonia.BLAS(loadedOpenBLAS) {
		return "replaced by the program's gorgonia.Use (gops chose " + blasInUse + ")"
	}
	return blasInUse
}

var blasInUse = "gonum (pure Go)"

func init() {
	switch env := os.Getenv("GOPS_BLAS"); strings.ToLower(env) {
	case "", "openblas":
	case "gonum":
		blasInUse = "gonum (pure Go): GOPS_BLAS=" + env
		return
	default:
		blasInUse = "gonum (pure Go): GOPS_BLAS=" + env + " is neither gonum nor openblas"
		return
	}
	o, name, err := loadOpenBLAS()
	if err != nil {
		blasInUse = "gonum (pure Go): " + err.Error()
		return
	}
	blasInUse = "openblas (" + name + ")"
	loadedOpenBLAS = o
	gorgonia.Use(o)
}

// loadedOpenBLAS is the OpenBLAS in use, nil for gonum.
var loadedOpenBLAS *openBLAS

// CBLAS constants (cblas.h).
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
)

// openBLAS is gonum's BLAS with Sgemm and Dgemm from an OpenBLAS shared
// library (cblas_sgemm/cblas_dgemm, LP64: 32-bit integers).
type openBLAS struct {
	gonum.Implementation
	sgemm func(order, tA, tB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)
	dgemm func(order, tA, tB, m, n, k int32, alpha float64, a *float64, lda int32, b *float64, ldb int32, beta float64, c *float64, ldc int32)
}

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

// Sgemm is C = alpha·op(A)·op(B) + beta·C on OpenBLAS, split by splitGemm.
// Arguments OpenBLAS must not see (bad sizes, short slices, sizes past
// int32), empty and small products go to gonum, which panics on bad
// arguments.
func (o *openBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, o.Implementation.Sgemm, o.sgemm)
}

// Dgemm is Sgemm in float64.
func (o *openBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
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

// storedShape is the rows and columns, as stored (row-major), of an
// operand that is rows×cols after the transpose t.
func storedShape(t blas.Transpose, rows, cols int) (int, int) {
	if t == blas.NoTrans {
		return rows, cols
	}
	return cols, rows
}

// gemmArgsOK reports whether a row-major product with these sizes, leading
// dimensions and slice lengths is valid and fits OpenBLAS's 32-bit
// integers, so that OpenBLAS reads and writes only inside the slices.
func gemmArgsOK(tA, tB blas.Transpose, m, n, k, la, lda, lb, ldb, lc, ldc int) bool {
	okT := func(t blas.Transpose) bool { return t == blas.NoTrans || t == blas.Trans || t == blas.ConjTrans }
	if !okT(tA) || !okT(tB) || m < 0 || n < 0 || k < 0 {
		return false
	}
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			return false
		}
	}
	rowA, colA := storedShape(tA, m, k)
	rowB, colB := storedShape(tB, k, n)
	if lda < max(1, colA) || ldb < max(1, colB) || ldc < max(1, n) {
		return false
	}
	need := func(rows, cols, ld int) int {
		if rows == 0 || cols == 0 {
			return 0
		}
		return ld*(rows-1) + cols
	}
	return la >= need(rowA, colA, lda) && lb >= need(rowB, colB, ldb) && lc >= need(m, n, ldc)
}

// selfTest compares a small product of every transpose combination, in both
// dtypes, with gonum's, so that a library with another ABI is not used.
func (o *openBLAS) selfTest() bool {
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
// goroutines by parallelFor: rows i0..i0+m, columns j0..j0+n, with the
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
	cpu.ParallelFor(len(ranges), func(lo, hi int) {
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
