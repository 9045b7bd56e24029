package nn

import "github.com/gops-dev/gops/internal/cpu"

// The tables the CUDA kernels of Interpolate and the poolings read, packed
// on the host from the CPU code's axes. No build tag: the host code
// (interpolate_cuda.go, pool_cuda.go, tag cuda) uploads them, and the
// emulation tests (emu_test.go) launch the kernels on the same tables.

// interpTable packs an axis of in input positions for the kernels: I0 and
// I1, then Lo and Hi, the range of outputs reading each input position
// (empty: Lo = out, Hi = 0).
func interpTable(a *cpu.InterpAxis, in int) []int64 {
	out := len(a.I0)
	t := make([]int64, 2*out+2*in)
	lo, hi := t[2*out:2*out+in], t[2*out+in:]
	for r := range lo {
		lo[r] = int64(out)
	}
	for o := 0; o < out; o++ {
		t[o], t[out+o] = int64(a.I0[o]), int64(a.I1[o])
		for _, r := range []int{a.I0[o], a.I1[o]} {
			lo[r], hi[r] = min(lo[r], int64(o)), max(hi[r], int64(o+1))
		}
	}
	return t
}

// poolTable packs an axis of in input positions for the kernels: First,
// End, Full and Clip, then Lo and Hi, the range of outputs whose windows
// hold each input position (empty: Lo = out, Hi = 0).
func poolTable(a *cpu.PoolAxis, in int) []int64 {
	out := a.Out()
	t := make([]int64, 4*out+2*in)
	lo, hi := t[4*out:4*out+in], t[4*out+in:]
	for r := range lo {
		lo[r] = int64(out)
	}
	for o := 0; o < out; o++ {
		t[o], t[out+o], t[2*out+o], t[3*out+o] = int64(a.First[o]), int64(a.End[o]), int64(a.Full[o]), int64(a.Clip[o])
		for r := a.First[o]; r < a.End[o]; r += a.Step {
			lo[r], hi[r] = min(lo[r], int64(o)), max(hi[r], int64(o+1))
		}
	}
	return t
}
