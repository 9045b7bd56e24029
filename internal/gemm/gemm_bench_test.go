package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGemm reports GFLOP/s of each kernel at square and DeformConv2d-like
// shapes (m×k by k×n: weight [Cout, C·9] by columns [C·9, H·W]).
func BenchmarkGemm(b *testing.B) {
	shapes := []struct{ m, n, k int }{{1024, 1024, 1024}, {64, 12544, 576}, {256, 1024, 2304}}
	for _, name := range kernelNames() {
		for _, s := range shapes {
			b.Run(fmt.Sprintf("%s/float32/%dx%dx%d", name, s.m, s.n, s.k), func(b *testing.B) {
				benchGemm[float32](b, name, s.m, s.n, s.k)
			})
			b.Run(fmt.Sprintf("%s/float64/%dx%dx%d", name, s.m, s.n, s.k), func(b *testing.B) {
				benchGemm[float64](b, name, s.m, s.n, s.k)
			})
		}
	}
}

func benchGemm[T Float](b *testing.B, name string, m, n, k int) {
	forced.Store(name)
	defer forced.Store("")
	r := rand.New(rand.NewPCG(1, 1))
	a, bb, c := randSlice[T](r, m*k), randSlice[T](r, k*n), make([]T, m*n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Gemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
