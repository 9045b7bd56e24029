package par

// InlineWork is the work, in elements a loop reads or writes (a sample
// point's four taps counting four), below which ForWork runs the loop on
// the caller's goroutine alone. Waking the team and joining it costs
// 0.5–4 µs on the 2-core VM of BENCHMARKS.md (BenchmarkForJoin: two empty
// iterations, back to back or 50 µs apart), and the kernels touch about one
// element a nanosecond, so a loop of fewer than 8192 elements (at most
// 8 µs alone) gains less from a second worker than the join costs, or
// little more, and risks waiting on a worker that the machine has
// descheduled. The demo's tensors (canvas 48, 4 features, crop 8) are
// mostly of that size.
const InlineWork = 1 << 13

// ForWork is For for a loop whose iterations together touch about work
// elements: below InlineWork it runs body(0, n) on the caller's goroutine,
// else it is For(n, body). The contract is For's (iterations write
// disjoint memory and accumulate in a fixed order), so the results are
// bitwise the same either way.
func ForWork(n, work int, body func(lo, hi int)) {
	if work < InlineWork {
		if n > 0 {
			body(0, n)
		}
		return
	}
	For(n, body)
}

// ForWorkGrains is ForWork with For replaced by ForGrains(n, grain, body):
// for a loop of few, large iterations (a convolution's samples or its
// products' chunks), which a worker that starts late (a parked thread
// woken inside a Gorgonia run: 0.2–0.8 ms on the 2-core VM) would
// otherwise hold up by a whole share.
func ForWorkGrains(n, grain, work int, body func(lo, hi int)) {
	if work < InlineWork {
		ForWork(n, work, body)
		return
	}
	ForGrains(n, grain, body)
}
