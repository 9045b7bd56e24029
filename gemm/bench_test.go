package gemm_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/gemm"
	"github.com/gops-dev/gops/openblas"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// productShapes are the matrix products of DeformConv2d (and of a dense
// Conv2d of the same size, whose im2col products are the same) at
// scripts/bench.sh's sizes, and a square one.
var productShapes = []struct {
	name    string
	tA, tB  bool
	m, n, k int
}{
	// v1/v2: weight [64, 64·9] by columns [64·9, 4·56·56].
	{"v1-forward", false, false, 64, 12544, 576},
	{"v1-grad-columns", true, false, 576, 12544, 64}, // weightᵀ·G
	{"v1-grad-weight", false, true, 64, 576, 12544},  // G·columnsᵀ
	// v2-256: weight [256, 256·9] by columns [256·9, 2·32·32].
	{"v2-256-forward", false, false, 256, 2048, 2304},
	{"square", false, false, 1024, 1024, 1024},
}

// BenchmarkProducts reports the GFLOP/s of one product, C = op(A)·op(B),
// for each shape, float32 and float64, on gops' product (package gemm),
// gonum's pure-Go BLAS and OpenBLAS (package openblas: single-threaded
// OpenBLAS calls spread over GOMAXPROCS goroutines; skipped when there is
// none). scripts/gemm-table.sh runs it with -cpu 1,2, with and without
// OPENBLAS_CORETYPE, and writes the table of BENCHMARKS.md.
func BenchmarkProducts(b *testing.B) {
	impls := []struct {
		name string
		blas interface {
			blas.Float32Level3
			blas.Float64Level3
		}
	}{{"gops", gemm.Implementation{}}, {"gonum", gonum.Implementation{}}}
	if o, err := openblas.Load(); err == nil {
		impls = append(impls, struct {
			name string
			blas interface {
				blas.Float32Level3
				blas.Float64Level3
			}
		}{"openblas-" + o.Core(), o})
	} else {
		b.Logf("no OpenBLAS: %v", err)
	}
	for _, im := range impls {
		for _, s := range productShapes {
			for _, dt := range []string{"float32", "float64"} {
				b.Run(fmt.Sprintf("%s/%s/%s", im.name, dt, s.name), func(b *testing.B) {
					r := rand.New(rand.NewPCG(1, 2))
					tA, tB, lda, ldb := blas.NoTrans, blas.NoTrans, s.k, s.n
					if s.tA {
						tA, lda = blas.Trans, s.m
					}
					if s.tB {
						tB, ldb = blas.Trans, s.k
					}
					a, bb, c := make([]float64, s.m*s.k), make([]float64, s.k*s.n), make([]float64, s.m*s.n)
					for i := range a {
						a[i] = r.NormFloat64()
					}
					for i := range bb {
						bb[i] = r.NormFloat64()
					}
					run := func() { im.blas.Dgemm(tA, tB, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n) }
					if dt == "float32" {
						a32, b32, c32 := to32(a), to32(bb), make([]float32, len(c))
						run = func() { im.blas.Sgemm(tA, tB, s.m, s.n, s.k, 1, a32, lda, b32, ldb, 0, c32, s.n) }
					}
					run()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						run()
					}
					b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

func to32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}
