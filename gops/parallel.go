package gops

import (
	"runtime"
	"sync"
)

// parallelFor runs body over [0, n) split into contiguous chunks, one
// goroutine per chunk, at most GOMAXPROCS of them. Kernels call it with
// iterations that write disjoint memory and accumulate in a fixed order
// inside one iteration, so results are bitwise identical for any
// GOMAXPROCS. It is the only place kernels start goroutines.
func parallelFor(n int, body func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		if n > 0 {
			body(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}
