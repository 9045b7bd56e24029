package cpu

import (
	"runtime"
	"testing"
)

// TestParallelForPanic checks that a panic in one chunk of ParallelFor
// reaches the caller's goroutine, where recover sees it, instead of killing
// the process from a worker goroutine.
func TestParallelForPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	got := func() (r any) {
		defer func() { r = recover() }()
		ParallelFor(8, func(lo, hi int) {
			if lo <= 5 && 5 < hi {
				panic("chunk with 5")
			}
		})
		return nil
	}()
	if got != "chunk with 5" {
		t.Fatalf("recovered %v, want the chunk's panic", got)
	}
}
