package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
)

// benchWarmup is how long each variant of -bench-steps meta-trains before
// the timed steps.
const benchWarmup = time.Second

// BenchResult is the timing of one variant's meta-steps.
type BenchResult struct {
	Variant     Variant
	Steps       int
	Min, Median time.Duration
}

// BenchMetaSteps times steps meta-steps of each variant, separately, through
// Learner.MetaTrain (so the timed code is the demo's): for each variant it
// meta-trains one step at a time for at least warmup, then steps
// steps in one MetaTrain call, and takes each step's StepLog.StepTime (the
// tasks' meta-gradients, their mean and the Adam update; drawing the tasks
// is not timed).
func BenchMetaSteps(cfg Config, variants []Variant, train *scenes.Digits, steps int, warmup time.Duration) ([]BenchResult, error) {
	if steps < 1 {
		return nil, fmt.Errorf("bench: %d steps, want at least 1", steps)
	}
	l, p0, rng, err := startRun(&cfg)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var out []BenchResult
	for _, v := range variants {
		vs := []Variant{v}
		l.cfg.Steps = 1
		for t0 := time.Now(); time.Since(t0) < warmup; {
			if _, _, err := l.MetaTrain(vs, p0, train, rng, nil); err != nil {
				return nil, err
			}
		}
		l.cfg.Steps = steps
		var times []time.Duration
		if _, _, err := l.MetaTrain(vs, p0, train, rng, func(line []StepLog) { times = append(times, line[0].StepTime) }); err != nil {
			return nil, err
		}
		slices.Sort(times)
		out = append(out, BenchResult{Variant: v, Steps: len(times), Min: times[0], Median: median(times)})
	}
	return out, nil
}

// median of sorted durations.
func median(s []time.Duration) time.Duration {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// runBench is the -bench-steps mode: one line per variant on w,
//
//	bench second-order steps 50 min_ms 16.123 median_ms 17.456
//
// which scripts/bench_maml.sh reads.
func runBench(o *options, variants []Variant, steps int, w io.Writer) error {
	train, _, err := loadDigits(o.data)
	if err != nil {
		return err
	}
	rs, err := BenchMetaSteps(o.cfg, variants, train, steps, benchWarmup)
	if err != nil {
		return err
	}
	for _, r := range rs {
		fmt.Fprintf(w, "bench %s steps %d min_ms %.3f median_ms %.3f\n", r.Variant.Short(), r.Steps,
			float64(r.Min.Nanoseconds())/1e6, float64(r.Median.Nanoseconds())/1e6)
	}
	return nil
}
