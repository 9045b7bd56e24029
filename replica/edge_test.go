package replica_test

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gops-dev/gops/replica"
)

// TestRunGoexit: a job that ends its goroutine with runtime.Goexit (as
// testing's t.FailNow does) ends Run's caller too, as it would in a
// sequential loop, whichever goroutine ran it; Run never returns as if
// the job had finished.
func TestRunGoexit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p, _ := newCounters(t, 2)
	defer p.Close()
	for round := range 20 {
		started := make(chan struct{})
		done := make(chan struct{})
		var returned bool
		var err error
		go func() {
			defer close(done)
			err = p.Run(2, func(c *counter, j int) error {
				if j == 1 {
					close(started)
					runtime.Goexit()
				}
				select { // let job 1 start on the other goroutine
				case <-started:
				case <-time.After(time.Second):
				}
				return c.run(j)
			})
			returned = true
		}()
		<-done
		if returned {
			t.Fatalf("round %d: Run returned %v after job 1 called runtime.Goexit", round, err)
		}
	}
	var ran atomic.Int32
	if err := p.Run(4, func(c *counter, j int) error { ran.Add(1); return c.run(j) }); err != nil || ran.Load() != 4 {
		t.Errorf("Run after a Goexit: %v, %d of 4 jobs ran", err, ran.Load())
	}
}

// TestRunHugeJobs: the job count is a loop bound, not an allocation.
func TestRunHugeJobs(t *testing.T) {
	p, _ := newCounters(t, 2)
	defer p.Close()
	stop := errors.New("stop")
	err := p.Run(math.MaxInt, func(c *counter, j int) error {
		if j >= 5 {
			return stop
		}
		return c.run(j)
	})
	if err != stop {
		t.Errorf("Run(MaxInt) stopped by job 5: %v", err)
	}
}

// TestNewPoolHuge: a huge replica count fails with the build's error,
// not a panic making the free list.
func TestNewPoolHuge(t *testing.T) {
	_, err := replica.NewPool(math.MaxInt/2, func(i int) (*counter, error) {
		if i == 3 {
			return nil, errors.New("enough")
		}
		return &counter{id: i}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "replica 3") {
		t.Errorf("NewPool(MaxInt/2) failing at replica 3: %v", err)
	}
}

// TestNilFuncs: a nil build or job is an error, not a panic.
func TestNilFuncs(t *testing.T) {
	if _, err := replica.NewPool[*counter](2, nil); err == nil || !strings.Contains(err.Error(), "build") {
		t.Errorf("NewPool with a nil build: %v", err)
	}
	p, _ := newCounters(t, 2)
	defer p.Close()
	if err := p.Run(3, nil); err == nil || !strings.Contains(err.Error(), "job") {
		t.Errorf("Run with a nil job: %v", err)
	}
}

// TestCloseWaitsForRun: Close called while a Run is in progress waits for
// it instead of closing replicas that a job is using; Run fails after.
func TestCloseWaitsForRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p, made := newCounters(t, 2)
	inJob := make(chan struct{})
	var sawClosed atomic.Bool
	runErr := make(chan error)
	go func() {
		runErr <- p.Run(2, func(c *counter, j int) error {
			if j == 0 {
				close(inJob)
			}
			time.Sleep(50 * time.Millisecond)
			if c.closed {
				sawClosed.Store(true)
			}
			return c.run(j)
		})
	}()
	<-inJob
	closeErr := make(chan error)
	go func() { closeErr <- p.Close() }()
	if err := <-runErr; err != nil {
		t.Errorf("Run with a Close waiting: %v", err)
	}
	if err := <-closeErr; err != nil {
		t.Errorf("Close: %v", err)
	}
	if sawClosed.Load() {
		t.Error("a job ran on a replica that Close had closed")
	}
	for _, c := range made {
		if !c.closed {
			t.Errorf("replica %d not closed", c.id)
		}
	}
	if err := p.Run(1, func(*counter, int) error { return nil }); err == nil {
		t.Error("Run after Close succeeded")
	}
}

// TestZeroPool: a Pool not made by NewPool has no replicas; Run says so
// instead of waiting for one forever, and Close does nothing.
func TestZeroPool(t *testing.T) {
	var p replica.Pool[*counter]
	done := make(chan error, 1)
	go func() { done <- p.Run(2, func(*counter, int) error { return nil }) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "NewPool") {
			t.Errorf("Run on a zero Pool: %v, want an error pointing to NewPool", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run on a zero Pool still waiting after 5 s")
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close on a zero Pool: %v", err)
	}
}
