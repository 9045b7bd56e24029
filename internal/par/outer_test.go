package par

import (
	"runtime"
	"sync"
	"testing"
)

// TestOuter checks the loops' share of the processors while jobs run
// side by side: Procs for several GOMAXPROCS and Outer counts, For and
// ForGrains running their loop as one range on the caller's goroutine
// when the jobs take every processor, and the count restored by end.
func TestOuter(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct{ procs, jobs, want int }{
		{1, 1, 1}, {2, 1, 2}, {2, 2, 1}, {4, 2, 2}, {4, 3, 1}, {8, 3, 2}, {2, 4, 1}, {4, 0, 4},
	} {
		runtime.GOMAXPROCS(tc.procs)
		end := Outer(tc.jobs)
		if got := Procs(); got != tc.want {
			t.Errorf("GOMAXPROCS %d, Outer(%d): Procs %d, want %d", tc.procs, tc.jobs, got, tc.want)
		}
		end()
		if got := Procs(); got != tc.procs {
			t.Errorf("GOMAXPROCS %d after Outer(%d) ended: Procs %d, want %d", tc.procs, tc.jobs, got, tc.procs)
		}
	}
	// Two callers of Outer add up.
	runtime.GOMAXPROCS(4)
	end1, end2 := Outer(2), Outer(2)
	if got := Procs(); got != 1 {
		t.Errorf("GOMAXPROCS 4, Outer(2) twice: Procs %d, want 1", got)
	}
	end1()
	if got := Procs(); got != 2 {
		t.Errorf("GOMAXPROCS 4, one Outer(2) left: Procs %d, want 2", got)
	}
	end2()

	// Two jobs on two processors: each loop is one call on [0, n) on the
	// job's own goroutine.
	runtime.GOMAXPROCS(2)
	end := Outer(2)
	defer end()
	var wg sync.WaitGroup
	for job := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name, loop := range map[string]func(int, func(int, int)){
				"For":       For,
				"ForGrains": func(n int, body func(int, int)) { ForGrains(n, 3, body) },
			} {
				var calls [][2]int
				loop(40, func(lo, hi int) { calls = append(calls, [2]int{lo, hi}) })
				if len(calls) != 1 || calls[0] != [2]int{0, 40} {
					t.Errorf("job %d: %s(40) under Outer(2) at GOMAXPROCS 2 ran %v, want one call on [0, 40)", job, name, calls)
				}
			}
		}()
	}
	wg.Wait()
}

// TestOuterEndTwice: a second call of end changes nothing, so a caller
// that ends twice (a defer beside an early end) cannot take another
// caller's jobs off the count.
func TestOuterEndTwice(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	other := Outer(2)
	defer other()
	end := Outer(2)
	end()
	end()
	if got := Procs(); got != 2 {
		t.Errorf("GOMAXPROCS 4, Outer(2) running and another Outer(2) ended twice: Procs %d, want 2", got)
	}
}

// TestForWorkNegative: negative work runs the loop inline; a negative
// count runs nothing, whatever the work.
func TestForWorkNegative(t *testing.T) {
	calls := 0
	ForWork(5, -1, func(lo, hi int) {
		if lo != 0 || hi != 5 {
			t.Errorf("ForWork(5, -1) ran [%d, %d)", lo, hi)
		}
		calls++
	})
	ForWork(-3, 1<<20, func(int, int) { calls += 10 })
	ForWork(-3, -1, func(int, int) { calls += 10 })
	if calls != 1 {
		t.Errorf("ForWork(5, -1), ForWork(-3, 1<<20), ForWork(-3, -1): %d calls, want 1", calls)
	}
}
