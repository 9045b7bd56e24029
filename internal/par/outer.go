package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// outer is the number of goroutines that run independent jobs side by side
// (the workers of package replica's Pool.Run), summed over the callers of
// Outer still running.
var outer atomic.Int64

// Outer declares that k goroutines are about to run independent jobs
// concurrently, each of which may run kernels: until end is called, Procs
// (and so For and ForGrains, the loops' worker count) divides GOMAXPROCS
// among them, so that the jobs' loops do not start more goroutines than
// there are processors: with as many jobs as processors, each kernel runs
// its loop on its own goroutine. It is the nested parallelism of OpenMP
// with one active level. Results do not change: the loops' results are
// the same for any worker count. k < 1 counts as 1. Calls of end after
// the first do nothing; a caller that never calls end leaves the loops
// divided for good.
func Outer(k int) (end func()) {
	k = max(k, 1)
	outer.Add(int64(k))
	return sync.OnceFunc(func() { outer.Add(-int64(k)) })
}

// Procs is how many goroutines one parallel loop may use now: GOMAXPROCS,
// divided by the goroutines running jobs side by side (Outer) when there
// are several, at least 1.
func Procs() int { return share(runtime.GOMAXPROCS(0)) }

// share is one job's share of procs processors while Outer's jobs run.
func share(procs int) int {
	if k := int(outer.Load()); k > 1 {
		return max(procs/k, 1)
	}
	return procs
}
