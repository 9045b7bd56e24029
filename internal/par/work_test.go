package par

import (
	"testing"
	"time"
)

// BenchmarkForJoin times For over 2 iterations that do nothing: the cost
// of waking and joining the team (hot: back to back, the workers still
// polling; gap: 50 µs of sleep between loops, as between two kernels of
// a graph run with Gorgonia's overhead in between, timed without it;
// inline: the body called directly).
func BenchmarkForJoin(b *testing.B) {
	var sink [2]int
	body := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sink[i]++
		}
	}
	b.Run("inline", func(b *testing.B) {
		for b.Loop() {
			body(0, 2)
		}
	})
	b.Run("hot", func(b *testing.B) {
		for b.Loop() {
			For(2, body)
		}
	})
	b.Run("gap", func(b *testing.B) {
		var d time.Duration
		for i := 0; i < b.N; i++ {
			time.Sleep(50 * time.Microsecond)
			t := time.Now()
			For(2, body)
			d += time.Since(t)
		}
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "loop-ns")
	})
}
