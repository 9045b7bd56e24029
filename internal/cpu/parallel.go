package cpu

import (
	"runtime"
	"sync"
)

// ParallelFor runs body over [0, n) split into contiguous chunks, one
// goroutine per chunk, at most GOMAXPROCS of them. Kernels call it with
// iterations that write disjoint memory and accumulate in a fixed order
// inside one iteration, so results are bitwise identical for any
// GOMAXPROCS. It is the only place kernels start goroutines. A panic in
// body is raised again on the caller's goroutine once all chunks are done,
// where package ad turns it into an error naming the op.
func ParallelFor(n int, body func(lo, hi int)) {
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
	var (
		wg       sync.WaitGroup
		once     sync.Once
		panicked any
	)
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked = r })
				}
			}()
			body(lo, hi)
		}()
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked) // on the caller's goroutine, where it can be recovered
	}
}
