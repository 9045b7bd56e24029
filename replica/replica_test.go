package replica_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/replica"
)

// counter is a replica that records the jobs it ran and fails a job when
// another goroutine is inside it.
type counter struct {
	id     int
	inside atomic.Int32
	jobs   []int
	closed bool
}

func (c *counter) run(j int) error {
	if c.inside.Add(1) != 1 {
		return fmt.Errorf("replica %d used by two goroutines at once", c.id)
	}
	defer c.inside.Add(-1)
	c.jobs = append(c.jobs, j)
	runtime.Gosched()
	return nil
}

func (c *counter) Close() { c.closed = true }

func newCounters(t *testing.T, n int) (*replica.Pool[*counter], []*counter) {
	t.Helper()
	var made []*counter
	p, err := replica.NewPool(n, func(i int) (*counter, error) {
		c := &counter{id: i}
		made = append(made, c)
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, made
}

// TestRun checks that every job runs once, each replica on one goroutine
// at a time, for several replica counts, job counts and GOMAXPROCS; that
// one replica runs the jobs in order; and that the kernels' loops get
// GOMAXPROCS divided by the goroutines Run uses.
func TestRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{1, 2, 3, 8} {
			for _, jobs := range []int{0, 1, 2, 7, 50} {
				name := fmt.Sprintf("GOMAXPROCS %d, %d replicas, %d jobs", procs, n, jobs)
				p, made := newCounters(t, n)
				if p.Len() != n {
					t.Errorf("%s: Len %d", name, p.Len())
				}
				ran := make([]int, jobs)
				shares := make([]int, jobs)
				err := p.Run(jobs, func(c *counter, j int) error {
					ran[j]++
					shares[j] = par.Procs()
					return c.run(j)
				})
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
				var all []int
				for _, c := range made {
					all = append(all, c.jobs...)
				}
				slices.Sort(all)
				for j := range jobs {
					if ran[j] != 1 || all[j] != j {
						t.Fatalf("%s: job %d ran %d times (jobs by replica: %v)", name, j, ran[j], all)
					}
					if want := max(1, procs/min(n, jobs)); shares[j] != want {
						t.Errorf("%s: job %d saw par.Procs %d, want %d", name, j, shares[j], want)
					}
				}
				if n == 1 && !slices.IsSorted(made[0].jobs) {
					t.Errorf("%s: one replica ran the jobs in the order %v", name, made[0].jobs)
				}
				if err := p.Close(); err != nil {
					t.Error(err)
				}
				for _, c := range made {
					if !c.closed {
						t.Errorf("%s: Close left replica %d open", name, c.id)
					}
				}
				if got := par.Procs(); got != procs {
					t.Errorf("%s: par.Procs %d after Run", name, got)
				}
			}
		}
	}
}

// TestRunError checks that Run returns the error of the failing job with
// the lowest index, runs every job below it, and starts none above the
// first failure seen once the jobs below it are done.
func TestRunError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{1, 2, 4} {
		for round := range 20 {
			p, _ := newCounters(t, n)
			var ran sync.Map
			err := p.Run(40, func(c *counter, j int) error {
				ran.Store(j, true)
				if j == 9 || j == 13 || j == 30 {
					return fmt.Errorf("job %d failed", j)
				}
				return c.run(j)
			})
			if err == nil || err.Error() != "job 9 failed" {
				t.Fatalf("%d replicas, round %d: error %v, want job 9's", n, round, err)
			}
			for j := range 10 {
				if _, ok := ran.Load(j); !ok {
					t.Fatalf("%d replicas, round %d: job %d below the failure did not run", n, round, j)
				}
			}
			if _, ok := ran.Load(30); ok && n == 1 {
				t.Errorf("one replica ran job 30 after job 9 failed")
			}
			p.Close()
		}
	}
}

// TestRunPanic checks that a job's panic reaches Run's caller once all
// goroutines are done, and that the replicas are free again afterwards.
func TestRunPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p, _ := newCounters(t, 2)
	defer p.Close()
	got := func() (v any) {
		defer func() { v = recover() }()
		p.Run(8, func(c *counter, j int) error {
			if j == 5 {
				panic("job 5")
			}
			return c.run(j)
		})
		return nil
	}()
	if got != "job 5" {
		t.Fatalf("recovered %v, want the job's panic", got)
	}
	var ran atomic.Int32
	if err := p.Run(4, func(c *counter, j int) error { ran.Add(1); return c.run(j) }); err != nil || ran.Load() != 4 {
		t.Errorf("Run after a panic: %v, %d of 4 jobs ran", err, ran.Load())
	}
}

// TestRunConcurrent runs two Runs on one Pool at once: the replicas are
// shared between them, each still used by one goroutine at a time.
func TestRunConcurrent(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	p, made := newCounters(t, 3)
	defer p.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = p.Run(30, func(c *counter, j int) error { return c.run(j) })
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
	total := 0
	for _, c := range made {
		total += len(c.jobs)
	}
	if total != 60 {
		t.Errorf("%d jobs ran, want 60", total)
	}
}

// TestNewPoolErrors checks NewPool's default size, a failing build (the
// replicas built before it closed, the error naming the replica) and Run
// on a closed Pool.
func TestNewPoolErrors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	p, _ := newCounters(t, 0)
	if p.Len() != 3 {
		t.Errorf("NewPool(0) at GOMAXPROCS 3 has %d replicas, want 3", p.Len())
	}
	p.Close()
	if err := p.Run(1, func(*counter, int) error { return nil }); err == nil {
		t.Error("Run on a closed Pool succeeded")
	}
	if got := []int{replica.DefaultSize(0), replica.DefaultSize(2), replica.DefaultSize(10)}; !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("DefaultSize(0, 2, 10) at GOMAXPROCS 3: %v, want [1 2 3]", got)
	}
	var made []*counter
	_, err := replica.NewPool(4, func(i int) (*counter, error) {
		if i == 2 {
			return nil, errors.New("no memory")
		}
		c := &counter{id: i}
		made = append(made, c)
		return c, nil
	})
	if err == nil || !strings.Contains(err.Error(), "replica 2 of 4") || !strings.Contains(err.Error(), "no memory") {
		t.Errorf("failing build: error %v", err)
	}
	if len(made) != 2 || !made[0].closed || !made[1].closed {
		t.Errorf("failing build left the replicas built before it open")
	}
}
