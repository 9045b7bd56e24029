package par

import (
	"runtime"
	"sync"
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

// TestForWorkGrains: every iteration once, in grains of at most grain
// with more than one worker, and on the caller alone (one call over
// [0, n)) below InlineWork or with one worker.
func TestForWorkGrains(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(procs)
		for _, c := range []struct{ n, grain, work int }{{0, 1, 1 << 20}, {1, 1, 1 << 20}, {7, 1, 1 << 20}, {50, 8, 1 << 20}, {9, 4, 1 << 20}, {9, 1, InlineWork - 1}} {
			counts := make([]int, c.n)
			var calls, longest int
			var mu sync.Mutex
			ForWorkGrains(c.n, c.grain, c.work, func(lo, hi int) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				longest = max(longest, hi-lo)
				for i := lo; i < hi; i++ {
					counts[i]++
				}
			})
			for i, k := range counts {
				if k != 1 {
					t.Fatalf("GOMAXPROCS %d %+v: iteration %d ran %d times", procs, c, i, k)
				}
			}
			alone := c.work < InlineWork || procs == 1
			switch {
			case alone && c.n > 0 && (calls != 1 || longest != c.n):
				t.Errorf("GOMAXPROCS %d %+v: %d calls, longest %d; want one over [0, %d)", procs, c, calls, longest, c.n)
			case !alone && longest > c.grain:
				t.Errorf("GOMAXPROCS %d %+v: a call of %d iterations, grain %d", procs, c, longest, c.grain)
			}
		}
	}
}
