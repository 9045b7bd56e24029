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
// Its methods may be called from several goroutines.
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
// and returns the error, naming the replica. A nil build is an error.
func NewPool[R any](n int, build func(i int) (R, error)) (*Pool[R], error) {
	if build == nil {
		return nil, errors.New("replica: NewPool: build is nil")
	}
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &Pool[R]{}
	for i := range n {
		r, err := build(i)
		if err != nil {
			err = fmt.Errorf("replica: building replica %d of %d: %w", i, n, err)
			return nil, errors.Join(err, p.closeReplicas())
		}
		p.replicas = append(p.replicas, r)
	}
	p.free = make(chan int, len(p.replicas))
	for i := range p.replicas {
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
// goroutines are done, and a job that calls runtime.Goexit (testing's
// t.FailNow) ends the caller's goroutine the same way. Runs on one Pool
// from several goroutines share its replicas. A job must not call Run on
// its own Pool (it would wait for a replica that its own caller holds),
// nor Close it. Run on a closed Pool, or one closed before Run got a
// replica, returns an error, as do a nil job and a Pool not made by
// NewPool.
func (p *Pool[R]) Run(jobs int, job func(r R, j int) error) error {
	if job == nil {
		return errors.New("replica: Run: job is nil")
	}
	if p.closed.Load() {
		return errClosed
	}
	if len(p.replicas) == 0 {
		return errors.New("replica: Run on a Pool without replicas (make it with NewPool)")
	}
	if jobs <= 0 {
		return nil
	}
	workers := min(len(p.replicas), jobs)
	defer par.Outer(workers)()
	var (
		next, done atomic.Int64
		failed     atomic.Int64 // the lowest failing job, jobs if none; −1 after a panic or Goexit
		mu         sync.Mutex   // guards firstErr and the stores to failed
		firstErr   error
		panicked   any
		goexited   bool
		wg         sync.WaitGroup
	)
	failed.Store(int64(jobs))
	fail := func(j int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		if j < failed.Load() {
			failed.Store(j)
			firstErr = err
		}
	}
	work := func() {
		defer wg.Done()
		i, ok := <-p.free
		if !ok { // closed: the jobs left unclaimed make Run fail
			return
		}
		defer func() { p.free <- i }()
		normal := false
		defer func() {
			if normal {
				return
			}
			v := recover()
			mu.Lock()
			defer mu.Unlock()
			if v == nil {
				goexited = true
			} else if panicked == nil {
				panicked = v
			}
			failed.Store(-1) // no new job starts
		}()
		for {
			j := next.Add(1) - 1
			if j >= int64(jobs) || j > failed.Load() {
				normal = true
				return
			}
			if err := job(p.replicas[i], int(j)); err != nil {
				fail(j, err)
			}
			done.Add(1)
		}
	}
	wg.Add(workers)
	defer wg.Wait() // also when a job ends the caller's goroutine (Goexit)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	switch {
	case panicked != nil:
		panic(panicked)
	case goexited:
		runtime.Goexit()
	case firstErr != nil:
		return firstErr
	case done.Load() < int64(jobs):
		return fmt.Errorf("replica: Run: Pool closed after %d of %d jobs", done.Load(), jobs)
	}
	return nil
}

var errClosed = errors.New("replica: Run on a closed Pool")

// Close waits for the Runs in progress to finish, then closes each
// replica that has a Close method (Close() error or Close()) and returns
// the errors, joined. Runs that start afterwards fail; so do those
// started before it that had not got a replica yet. Calling Close again
// does nothing. A job must not call Close: it would wait for itself.
func (p *Pool[R]) Close() error {
	if p.closed.Swap(true) || p.free == nil {
		return nil
	}
	for range p.replicas {
		<-p.free
	}
	close(p.free)
	return p.closeReplicas()
}

// closeReplicas closes the replicas that have a Close method.
func (p *Pool[R]) closeReplicas() error {
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
