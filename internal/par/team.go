package par

import (
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The worker team behind runWorkers (For, ForGrains).
//
// Starting a goroutine per chunk, as runWorkers did, makes the Go runtime
// wake a parked OS thread for it, which on a virtual machine takes tens of
// microseconds (measured: 13–25 µs per wake on the 2-core VM of
// BENCHMARKS.md), as long as a whole softmax over [256, 1000]. Like
// OpenMP's threads under torch, the team's workers instead stay awake for
// a while after each parallel region (teamSpin), polling for the next one,
// and only then park. The caller runs chunks too, claiming them from the
// same counter as the workers, so results never wait on a worker that has
// not started yet. Which goroutine runs which chunk does not change the
// results: the kernels' chunks write disjoint memory.

// teamSpin is how long an idle worker polls for new work before it parks:
// long enough to cover the gap between two kernels of one graph run and
// Gorgonia's per-run overhead (about 40 µs on that VM), short enough that
// an idle process soon stops using CPU. GOPS_WAIT_POLICY=passive in the
// environment makes it 0 (workers park at once), for machines shared with
// other busy processes, where polling takes a core from them: OpenMP's
// OMP_WAIT_POLICY=passive.
// An atomic so that tests can change it while workers poll.
var teamSpin atomic.Int64 // time.Duration

func init() { teamSpin.Store(int64(waitPolicy(os.Getenv("GOPS_WAIT_POLICY")))) }

// waitPolicy is teamSpin for a GOPS_WAIT_POLICY value: "passive" 0,
// anything else 200 µs.
func waitPolicy(v string) time.Duration {
	if strings.EqualFold(v, "passive") {
		return 0
	}
	return 200 * time.Microsecond
}

// teamJob is one runWorkers call on the team.
type teamJob struct {
	k     int
	procs int // GOMAXPROCS when it was published
	work  func(w int)
	next  atomic.Int64 // the next unclaimed call
	// active counts the goroutines inside the job: the caller, from the
	// start, and each worker that joined (only while active > 0, so none
	// joins a finished job); whoever brings it to 0 closes done.
	active   atomic.Int64
	done     chan struct{}
	once     sync.Once
	panicked any
}

// run claims and runs calls until none is left.
func (j *teamJob) run() {
	for {
		w := int(j.next.Add(1)) - 1
		if w >= j.k {
			return
		}
		j.call(w)
	}
}

// call runs work(w), keeping the first panic for the caller.
func (j *teamJob) call(w int) {
	defer func() {
		if r := recover(); r != nil {
			j.once.Do(func() { j.panicked = r })
		}
	}()
	j.work(w)
}

// spawnRest runs each call not yet claimed on a goroutine of its own and
// waits for them: runWorkers' way when the team is busy, and the team's
// caller's after a runtime.Goexit in one of its calls.
func (j *teamJob) spawnRest() {
	var wg sync.WaitGroup
	for w := int(j.next.Add(1)) - 1; w < j.k; w = int(j.next.Add(1)) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.call(w)
		}()
	}
	wg.Wait()
}

// raise panics with the first call's panic, if any, on the caller's
// goroutine, where it can be recovered.
func (j *teamJob) raise() {
	if p := j.panicked; p != nil {
		j.panicked = nil
		panic(p)
	}
}

// leave drops one goroutine from the job and reports whether it was the
// last.
func (j *teamJob) leave() bool {
	if j.active.Add(-1) == 0 {
		close(j.done)
		return true
	}
	return false
}

// wait drops the caller from the job and waits for the workers still
// inside (running their last call). It then forgets work: team.job keeps
// the job until the next one, which must not keep the memory that work
// refers to alive (no worker calls it any more).
//
// It polls first, for as long as a worker polls for work: blocking on done
// parked the caller's goroutine, and the worker that closed done then
// readied it on its own processor, behind its own polling (measured: a
// [256, 1000] softmax's median run 130–350 µs against a minimum of 60).
func (j *teamJob) wait() {
	if !j.leave() {
		deadline := time.Now().Add(time.Duration(teamSpin.Load()))
		for spins := 1; j.active.Load() != 0; spins++ {
			if spins%1024 == 0 && time.Now().After(deadline) {
				<-j.done
				break
			}
		}
	}
	j.work = nil
}

var team struct {
	busy sync.Mutex // held by the caller of the job in progress
	// workers counts the workers alive: teamRun adds them, under busy; a
	// worker whose call ended in runtime.Goexit takes itself off, and so
	// does one beyond GOMAXPROCS − 1 (GOMAXPROCS lowered) after a job.
	workers atomic.Int64
	gen     atomic.Uint64
	job     atomic.Pointer[teamJob]
	// parked workers wait on wake; parked counts them (under mu when it
	// grows) so that a caller signals only when someone sleeps.
	mu     sync.Mutex
	wake   *sync.Cond
	parked atomic.Int64
}

func init() { team.wake = sync.NewCond(&team.mu) }

// teamRun runs k calls of work on the team and the caller's goroutine, and
// reports false, having run nothing, when the team is busy.
func teamRun(k int, work func(w int)) bool {
	if !team.busy.TryLock() {
		return false
	}
	defer team.busy.Unlock()
	procs := runtime.GOMAXPROCS(0)
	for want := int64(min(procs, k) - 1); team.workers.Load() < want; team.workers.Add(1) {
		go teamWorker(team.gen.Load())
	}
	j := &teamJob{k: k, procs: procs, work: work, done: make(chan struct{})}
	j.active.Store(1)
	// A runtime.Goexit in one of the caller's calls (t.FailNow) ends the
	// caller's goroutine, but only once the other calls are done: the
	// caller, in its deferred call, still claims the rest, each run on a
	// goroutine of its own (where a Goexit ends only that one, as before
	// the team), and waits for them and the workers' (the team staying
	// busy until then).
	returned := false
	defer func() {
		if !returned {
			j.spawnRest()
			j.wait()
		}
	}()
	team.job.Store(j)
	team.gen.Add(1)
	if team.parked.Load() > 0 {
		team.mu.Lock()
		team.wake.Broadcast()
		team.mu.Unlock()
	}
	j.run()
	returned = true
	j.wait()
	j.raise()
	return true
}

// teamWorker joins each new job it sees, polling for teamSpin after its
// last one before it parks.
func teamWorker(seen uint64) {
	for {
		spin := time.Duration(teamSpin.Load())
		deadline := time.Now().Add(spin)
		// The poll looks at the clock every 1024 loads (about a
		// microsecond) and yields every 16384 (about 20 µs), so that the
		// timers and goroutines queued on this worker's processor wait
		// that long at most (never yielding, a 50 µs time.Sleep elsewhere
		// in the process woke 280 µs late at the median; yielding every
		// 64 loads, runtime.Gosched's global lock slowed the caller).
		for spins := 1; team.gen.Load() == seen; spins++ {
			if spins%(1<<14) == 0 {
				runtime.Gosched()
			}
			if (spin == 0 || spins%1024 == 0) && time.Now().After(deadline) {
				team.mu.Lock()
				team.parked.Add(1)
				for team.gen.Load() == seen {
					team.wake.Wait()
				}
				team.parked.Add(-1)
				team.mu.Unlock()
				break
			}
		}
		seen = team.gen.Load()
		j := team.job.Load()
		for {
			a := j.active.Load()
			if a == 0 {
				break // finished before this worker saw it
			}
			if j.active.CompareAndSwap(a, a+1) {
				j.join()
				break
			}
		}
		// GOMAXPROCS was lowered: the workers beyond GOMAXPROCS − 1
		// retire, instead of polling after each job for a processor
		// that the caller's goroutines need.
		if w := team.workers.Load(); w >= int64(j.procs) && team.workers.CompareAndSwap(w, w-1) {
			return
		}
	}
}

// join runs the job's calls on a worker that has joined it, and leaves
// it. A runtime.Goexit in a call (t.FailNow) ends the worker's goroutine,
// as it ended a chunk's own goroutine before the team; the worker still
// leaves the job, so that its caller does not wait for it forever, and
// takes itself off the team, so that the next job starts a new one.
func (j *teamJob) join() {
	returned := false
	defer func() {
		if !returned {
			team.workers.Add(-1)
		}
		j.leave()
	}()
	j.run()
	returned = true
}
