//go:build amd64 && !purego

package gemm

import (
	"runtime"
	"sync"
	"testing"
)

// BenchmarkPeak measures this machine's float32 FMA ceiling in GFLOP/s on
// GOMAXPROCS goroutines (float64's is half): register-only independent FMAs,
// the number BenchmarkGemm's GFLOP/s is a fraction of.
func BenchmarkPeak(b *testing.B) {
	for _, k := range []struct {
		name  string
		ok    bool
		f     func(int)
		flops float64 // per iteration
	}{{"avx512", hasAVX512, peakS512, 24 * 16 * 2}, {"avx2", hasAVX2, peakS256, 12 * 8 * 2}} {
		if !k.ok {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			const iters = 1 << 22
			procs := runtime.GOMAXPROCS(0)
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				for p := 0; p < procs; p++ {
					wg.Add(1)
					go func() { defer wg.Done(); k.f(iters) }()
				}
				wg.Wait()
			}
			b.ReportMetric(k.flops*iters*float64(procs)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
