// Package replica runs independent jobs side by side on replicas of a
// compiled graph: a Pool holds n replicas built by the caller (each, for
// example, a Gorgonia ExprGraph, its TapeMachine and its input nodes), and
// Run spreads jobs 0..jobs−1 over them, one goroutine per replica in use.
// It is torch.nn.DataParallel's replicate-and-scatter on one machine's
// cores, for work made of many small graph runs (MAML's tasks of a
// meta-step, the batches of an evaluation), whose kernels' loops are too
// small to split well: while Run's goroutines work, the kernels' parallel
// loops (package internal/par) divide GOMAXPROCS among them instead of
// each splitting its loop over every processor.
//
// Run combines nothing: job j writes its results into the caller's slot
// j, and the caller combines the slots in job order once Run returns, so
// the combined result is bitwise that of a sequential loop over the jobs,
// for any replica count and any GOMAXPROCS, as long as a replica's
// results do not depend on the jobs it ran before (those of a Gorgonia
// TapeMachine, reset before each run, do not).
package replica

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gops-dev/gops/internal/par"
)

// Pool is a fixed set of replicas, each used by one goroutine at a time.
// Its methods may be called from several goroutines, except Close.
type Pool[R any] struct {
	replicas []R
	free     chan int // indices of the replicas no Run is using
	closed   atomic.Bool
}

// NewPool builds n replicas, calling build(0), ..., build(n−1) in order on
// the caller's goroutine (graph construction need not be safe for
// concurrent use); n ≤ 0 means runtime.GOMAXPROCS(0), one replica per
// processor: more would only queue behind each other. Callers with a
// known number of jobs per Run pass at most that many (DefaultSize). If a
// build fails, NewPool closes the replicas built before it (see Close)
// and returns the error, naming the replica.
func NewPool[R any](n int, build func(i int) (R, error)) (*Pool[R], error) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool[R]{free: make(chan int, n)}
	for i := range n {
		r, err := build(i)
		if err != nil {
			err = fmt.Errorf("replica: building replica %d of %d: %w", i, n, err)
			return nil, errors.Join(err, p.Close())
		}
		p.replicas = append(p.replicas, r)
		p.free <- i
	}
	return p, nil
}

// DefaultSize is the replica count for runs of the given number of jobs:
// GOMAXPROCS, at most jobs, at least 1.
func DefaultSize(jobs int) int { return max(1, min(runtime.GOMAXPROCS(0), jobs)) }

// Len is the number of replicas.
func (p *Pool[R]) Len() int { return len(p.replicas) }

// Run calls job(r, j) for j in [0, jobs), each once, r a replica that no
// other goroutine uses meanwhile, and returns once all calls are done.
// min(Len, jobs) goroutines (the caller's among them) each take a free
// replica and claim the next job until none is left; with one replica
// the jobs run in order on the caller's goroutine. The error is that of
// the failing job with the lowest index, as a sequential loop would
// return: after a failure, no job with a higher index starts. A panic in
// a job is raised again on the caller's goroutine once the other
// goroutines are done. A job must not call Run on its own Pool, nor Close
// it. Run on a closed Pool returns an error.
func (p *Pool[R]) Run(jobs int, job func(r R, j int) error) error {
	if p.closed.Load() {
		return errors.New("replica: Run on a closed Pool")
	}
	if jobs <= 0 {
		return nil
	}
	workers := min(len(p.replicas), jobs)
	defer par.Outer(workers)()
	var (
		next     atomic.Int64
		failed   atomic.Int64 // the lowest failing job, jobs if none
		errs     = make([]error, jobs)
		once     sync.Once
		panicked any
		wg       sync.WaitGroup
	)
	failed.Store(int64(jobs))
	work := func() {
		defer wg.Done()
		defer func() {
			if v := recover(); v != nil {
				once.Do(func() { panicked = v })
				failed.Store(-1) // no new job starts
			}
		}()
		i := <-p.free
		defer func() { p.free <- i }()
		for {
			j := next.Add(1) - 1
			if j >= int64(jobs) || j > failed.Load() {
				return
			}
			if err := job(p.replicas[i], int(j)); err != nil {
				errs[j] = err
				for f := failed.Load(); j < f; f = failed.Load() {
					if failed.CompareAndSwap(f, j) {
						break
					}
				}
			}
		}
	}
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	if f := failed.Load(); f < int64(jobs) {
		return errs[f]
	}
	return nil
}

// Close closes each replica that has a Close method (Close() error or
// Close()) and returns the errors, joined. It must not be called while a
// Run is in progress; Run fails afterwards.
func (p *Pool[R]) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, r := range p.replicas {
		switch c := any(r).(type) {
		case interface{ Close() error }:
			errs = append(errs, c.Close())
		case interface{ Close() }:
			c.Close()
		}
	}
	return errors.Join(errs...)
}
