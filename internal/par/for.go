package par

import (
	"runtime"
	"sync/atomic"
)

// For runs body over [0, n) split into contiguous chunks, at most
// GOMAXPROCS of them, run by the worker team and the caller's goroutine,
// or a goroutine each when the team is busy. Kernels call it with
// iterations that write disjoint memory and accumulate in a fixed order
// inside one iteration, so results are bitwise identical for any
// GOMAXPROCS. It is the only place kernels start goroutines. A panic in
// body is raised again on the caller's goroutine once all chunks are done,
// where package ad turns it into an error naming the op.
func For(n int, body func(lo, hi int)) {
	workers := share(runtime.GOMAXPROCS(0)) // divided among concurrent jobs (Outer)
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		if n > 0 {
			body(0, n)
		}
		return
	}
	chunk := (n + workers - 1) / workers
	runWorkers((n+chunk-1)/chunk, func(w int) { body(w*chunk, min((w+1)*chunk, n)) })
}

// runWorkers runs work(0), ..., work(k−1), each once, and waits for them;
// a panic in one is raised again on the caller's goroutine once all are
// done, where package ad turns it into an error naming the op. The calls
// go to the worker team: the caller's goroutine runs them too,
// taking the next unclaimed one as the team's workers do, so a worker that
// is slow to start costs at most the time the caller would have taken
// alone. When the team is busy (a nested or concurrent call) each call
// gets a goroutine of its own, as before the team.
func runWorkers(k int, work func(w int)) {
	if k <= 0 {
		return
	}
	if teamRun(k, work) {
		return
	}
	j := &teamJob{k: k, work: work}
	j.spawnRest()
	j.raise()
}

// ForGrains is For with [0, n) handed out in grains of
// grain iterations (the last may be shorter), each worker taking the next
// grain when it is done with one (with one worker, body runs once on
// [0, n)): for iterations that are cheap to split,
// on machines where a worker may be descheduled for a while. The same
// contract as For (disjoint writes, a fixed order inside an
// iteration), so results do not depend on which worker ran what.
func ForGrains(n, grain int, body func(lo, hi int)) {
	grain = max(grain, 1)
	grains := (n + grain - 1) / grain
	workers := min(share(runtime.GOMAXPROCS(0)), grains)
	if workers <= 1 {
		if n > 0 {
			body(0, n)
		}
		return
	}
	var next atomic.Int64
	runWorkers(workers, func(int) {
		for {
			lo := int(next.Add(int64(grain))) - grain
			if lo >= n {
				return
			}
			body(lo, min(lo+grain, n))
		}
	})
}
