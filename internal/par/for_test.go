package par

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"
)

// TestForPanic checks that a panic in one chunk of For
// reaches the caller's goroutine, where recover sees it, instead of killing
// the process from a worker goroutine.
func TestForPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	got := recovered(func() {
		For(8, func(lo, hi int) {
			if lo <= 5 && 5 < hi {
				panic("chunk with 5")
			}
		})
	})
	if got != "chunk with 5" {
		t.Fatalf("recovered %v, want the chunk's panic", got)
	}
}

// TestForGrains checks that ForGrains covers [0, n) once,
// in ranges of at most grain (or all of it at GOMAXPROCS 1), at several
// GOMAXPROCS, and passes a panic on.
func TestForGrains(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, tc := range []struct{ n, grain int }{{0, 4}, {1, 4}, {7, 1}, {10, 3}, {256, 8}, {5, 0}} {
			seen := make([]int, tc.n)
			ForGrains(tc.n, tc.grain, func(lo, hi int) {
				if procs > 1 && hi-lo > max(tc.grain, 1) || lo >= hi {
					t.Errorf("n %d grain %d: range [%d, %d)", tc.n, tc.grain, lo, hi)
				}
				for i := lo; i < hi; i++ {
					seen[i]++ // disjoint ranges: no race
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("GOMAXPROCS %d n %d grain %d: iteration %d ran %d times", procs, tc.n, tc.grain, i, c)
				}
			}
		}
	}
	runtime.GOMAXPROCS(4)
	got := recovered(func() {
		ForGrains(8, 2, func(lo, hi int) {
			if lo <= 5 && 5 < hi {
				panic("grain with 5")
			}
		})
	})
	if got != "grain with 5" {
		t.Fatalf("recovered %v, want the grain's panic", got)
	}
}

// TestForTeam checks the worker team under load: callers on
// several goroutines at once (one gets the team, the others fall back to
// goroutines of their own), bodies that call For again (nested:
// the team is busy), parked workers woken after an idle pause, and a panic
// in a call that a worker may have run; every iteration runs exactly once.
func TestForTeam(t *testing.T) {
	for _, policy := range []string{"", "PASSIVE"} {
		t.Run("policy="+policy, func(t *testing.T) {
			defer teamSpin.Store(teamSpin.Load())
			spin := waitPolicy(policy)
			if (spin == 0) != (policy != "") {
				t.Fatalf("GOPS_WAIT_POLICY %q: spin %v", policy, spin)
			}
			teamSpin.Store(int64(spin))
			testTeam(t)
		})
	}
}

func testTeam(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 150 {
				n := 1 + (it*7+c)%37
				seen := make([]atomic.Int32, n*3)
				For(n, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						For(3, func(a, b int) {
							for k := a; k < b; k++ {
								seen[i*3+k].Add(1)
							}
						})
					}
				})
				for i := range seen {
					if v := seen[i].Load(); v != 1 {
						t.Errorf("caller %d run %d n %d: iteration %d ran %d times", c, it, n, i, v)
						return
					}
				}
				if it%50 == 49 {
					time.Sleep(400 * time.Microsecond) // the workers park
				}
			}
		}()
	}
	wg.Wait()
	for range 20 {
		got := recovered(func() {
			For(4, func(lo, hi int) {
				if lo == 3 {
					panic("last chunk")
				}
			})
		})
		if got != "last chunk" {
			t.Fatalf("recovered %v, want the last chunk's panic", got)
		}
	}
}

// goid is the calling goroutine's id, from its stack trace's header.
func goid() string {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	return s[:strings.IndexByte(s, ' ')]
}

// TestForGoexit checks runtime.Goexit (t.FailNow, t.SkipNow) in a
// chunk, which before the team ended the chunk's own goroutine only. On a
// team worker it must not leave the caller waiting for that worker
// forever, and the team must replace the worker; on the caller's
// goroutine, the goroutine ends, but only once the other chunks are done
// (none of them runs on after For's caller is gone).
func TestForGoexit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const k = 4
	// waitWorker, in the caller's chunk, gives the workers a second to
	// take a chunk; it reports whether one did.
	waitWorker := func(onWorker *atomic.Bool) bool {
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Microsecond) {
			if onWorker.Load() {
				return true
			}
		}
		return false
	}
	for it := range 10 {
		// A worker's chunk calls Goexit.
		done := make(chan struct{})
		go func() {
			defer close(done)
			caller := goid()
			var onWorker atomic.Bool
			For(k, func(lo, hi int) {
				if goid() != caller {
					if onWorker.CompareAndSwap(false, true) {
						runtime.Goexit()
					}
					return
				}
				waitWorker(&onWorker)
			})
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: For never returned after a Goexit in a worker's chunk", it)
		}
		// The caller's own chunk calls Goexit.
		var finished, exited atomic.Int32
		var atExit int32
		done = make(chan struct{})
		go func() {
			defer close(done)
			defer func() { atExit = finished.Load() + exited.Load() }()
			caller := goid()
			For(k, func(lo, hi int) {
				if goid() == caller {
					exited.Add(1)
					runtime.Goexit()
				}
				time.Sleep(time.Millisecond)
				finished.Add(1)
			})
		}()
		<-done
		if atExit != k {
			t.Fatalf("run %d: the caller's goroutine ended with %d of %d chunks done", it, atExit, k)
		}
	}
	// The team still has workers: one of them takes a chunk.
	caller := goid()
	var onWorker atomic.Bool
	For(k, func(lo, hi int) {
		if goid() != caller {
			onWorker.Store(true)
		} else if !waitWorker(&onWorker) {
			t.Errorf("no worker took a chunk: the team lost its workers")
		}
	})
}

// TestForStress runs For from three goroutines at once,
// nested two or three deep, some runs with a panic at one iteration of
// some level, while GOMAXPROCS flips between 1 and 8 and the wait policy
// between active and passive: every run must do each iteration once, or,
// with a panic, raise that panic on its caller, and none may hang.
func TestForStress(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer teamSpin.Store(teamSpin.Load())
	var stop atomic.Bool
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		for i := 0; !stop.Load(); i++ {
			runtime.GOMAXPROCS([]int{2, 1, 3, 8, 4}[i%5])
			teamSpin.Store(int64(waitPolicy([]string{"", "passive"}[i%3/2])))
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for it := range 500 {
				depth := 1 + r.IntN(3)
				sizes := []int{r.IntN(40), 1 + r.IntN(5), 1 + r.IntN(3)}[:depth]
				want := 0
				for d, p := 0, 1; d < depth; d++ {
					p *= sizes[d]
					want += p
				}
				// The panic, if any, at the first iteration of a level
				// below that runs with index at.
				pd, at := -1, 0
				if sizes[0] > 0 && r.IntN(4) == 0 {
					pd, at = r.IntN(depth), r.IntN(sizes[0])
				}
				var hits atomic.Int64
				var level func(d, outer int)
				level = func(d, outer int) {
					For(sizes[d], func(lo, hi int) {
						for i := lo; i < hi; i++ {
							hits.Add(1)
							if d == pd && (d == 0 && i == at || d > 0 && i == 0 && outer == at) {
								panic(fmt.Sprint("level ", d))
							}
							if d+1 < depth {
								level(d+1, outer+i*(1-min(d, 1)))
							}
						}
					})
				}
				got := recovered(func() { level(0, 0) })
				switch {
				case pd < 0 && got != nil:
					t.Errorf("caller %d run %d: unexpected panic %v", c, it, got)
				case pd >= 0 && got != fmt.Sprint("level ", pd):
					t.Errorf("caller %d run %d: recovered %v, want the panic at level %d", c, it, got, pd)
				case pd < 0 && hits.Load() != int64(want):
					t.Errorf("caller %d run %d sizes %v: %d iterations ran, want %d", c, it, sizes, hits.Load(), want)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-flipped
}

// TestForReleases checks that the team keeps nothing of a
// finished For alive: the memory its body refers to is freed at
// the next collection, not only once another For replaces it.
func TestForReleases(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	buf := make([]float64, 1<<16)
	p := weak.Make(&buf[0])
	For(len(buf), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			buf[i] = float64(i)
		}
	})
	for range 20 {
		runtime.GC()
		if p.Value() == nil {
			return
		}
		time.Sleep(time.Millisecond) // a late worker may still look at the job
	}
	t.Fatal("the body's memory is still reachable after For returned")
}

// TestForTeamShrinks checks that the team gives back the workers
// beyond GOMAXPROCS − 1 once GOMAXPROCS is lowered: each would otherwise
// poll after every job for a processor that the caller's goroutines need.
func TestForTeamShrinks(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	For(8, func(lo, hi int) {})
	runtime.GOMAXPROCS(2)
	for deadline := time.Now().Add(time.Second); team.workers.Load() > 1; time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers at GOMAXPROCS 2, want at most 1", team.workers.Load())
		}
		For(2, func(lo, hi int) {})
	}
}

// recovered runs f and returns the value of the panic that ended it (nil
// when f returned).
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestForWork: below InlineWork the loop runs once, on [0, n), on the
// caller's goroutine; above, For's split (each index once).
func TestForWork(t *testing.T) {
	var calls [][2]int
	ForWork(5, InlineWork-1, func(lo, hi int) { calls = append(calls, [2]int{lo, hi}) })
	if len(calls) != 1 || calls[0] != [2]int{0, 5} {
		t.Errorf("small loop ran as %v, want [[0 5]]", calls)
	}
	ForWork(0, 0, func(lo, hi int) { t.Errorf("empty loop ran [%d, %d)", lo, hi) })
	seen := make([]atomic.Int32, 1000)
	ForWork(len(seen), InlineWork, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			seen[i].Add(1)
		}
	})
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("index %d ran %d times", i, c)
		}
	}
}
