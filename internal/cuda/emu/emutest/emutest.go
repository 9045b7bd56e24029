//go:build cgo && linux && amd64

package emutest

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gops-dev/gops/internal/cuda/emu"
	"github.com/gops-dev/gops/internal/cuda/kernels"
)

// Up copies host into emulated device memory, freed when t ends.
func Up[E any](t testing.TB, host []E) emu.Ptr {
	b := emu.Upload(host)
	t.Cleanup(b.Free)
	return b.Ptr()
}

// Out is an output buffer of n elements of E, freed when t ends.
func Out[E any](t testing.TB, n int) *emu.Buffer {
	var z E
	b := emu.Alloc(n * int(unsafe.Sizeof(z)))
	t.Cleanup(b.Free)
	return b
}

// Region is b as a launch output of E elements.
func Region[E any](b *emu.Buffer) emu.Region {
	var z E
	return emu.Region{B: b, Elem: int(unsafe.Sizeof(z))}
}

// Case is one launch of a kernel and its CPU twin's result.
type Case struct {
	// Name is the kernel's PTX entry name; N, the work items; Args, the
	// host code's arguments.
	Name string
	N    int
	Args []any
	// Outs are the buffers the kernel writes: before each launch they are
	// filled with emu.Poison (a huge value: an element left unwritten
	// fails Check), or set by Init when not nil. Without Init the kernel
	// must write every element of every output, once (Run checks both);
	// a case with Init writes some of them (a scatter, a column).
	Outs []emu.Region
	Init func()
	// Check compares the outputs with the CPU kernel's after each launch.
	Check func() error
	// Shared says an output is also an input (no race check, which
	// poisons the outputs between threads).
	Shared bool
}

// Configs are the launches every case runs: the host code's grid with
// the threads forwards, backwards and shuffled, and grids capped at 1 and
// 3 blocks (every thread loops over many items).
var Configs = []emu.Config{
	{Order: emu.Forward},
	{Order: emu.Backward},
	{Order: emu.Shuffled, Seed: 1},
	{Order: emu.Forward, GridMax: 1},
	{Order: emu.Shuffled, Seed: 2, GridMax: 3},
}

func name(c emu.Config) string {
	s := c.Order.String()
	if c.GridMax > 0 {
		s += fmt.Sprintf(", grid ≤ %d", c.GridMax)
	}
	return s
}

// Run launches c under every Config, checking the outputs after each, then
// once thread by thread with the grid capped at 2 blocks: no element may
// be written by two threads (emu.CheckExclusive), and without Init
// every element of every output must be written by one.
func Run(t *testing.T, c Case) {
	t.Helper()
	reset := func() {
		if c.Init != nil {
			c.Init()
			return
		}
		for _, o := range c.Outs {
			o.B.Fill()
		}
	}
	for _, cfg := range Configs {
		reset()
		if err := emu.Launch(c.Name, c.N, cfg, c.Args...); err != nil {
			t.Fatalf("%s (%s): %v", c.Name, name(cfg), err)
		}
		if err := c.Check(); err != nil {
			t.Fatalf("%s, n=%d (%s): %v", c.Name, c.N, name(cfg), err)
		}
	}
	if gpuRun != nil {
		gpuRun(t, c)
	}
	if c.Shared || c.N == 0 {
		return
	}
	reset()
	written, err := emu.CheckExclusive(c.Name, c.N, emu.Config{Order: emu.Shuffled, Seed: 3, GridMax: 2}, c.Outs, c.Args...)
	if err != nil {
		t.Fatalf("race: %v", err)
	}
	if c.Init == nil {
		total := 0
		for _, o := range c.Outs {
			total += len(o.B.Bytes()) / o.Elem
		}
		if written != total {
			t.Fatalf("%s, n=%d: %d of the outputs' %d elements written", c.Name, c.N, written, total)
		}
	}
}

// gpuRun, in the cuda build (gpu.go), runs a case on the GPU as well;
// gpuReport says how many launches of a folder's entries did and which
// entries had none. Both are nil in other builds.
var (
	gpuRun    func(t *testing.T, c Case)
	gpuReport func(entries []string) (summary string, missing []string)
)

// Float is the kernels' float types.
type Float interface{ ~float32 | ~float64 }

// Sfx is the kernels' dtype suffix for T.
func Sfx[T Float]() string {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return "_f32"
	}
	return "_f64"
}

// Equal compares got with want: bitwise when tol is 0 (+0 and −0 differ;
// any NaN equals any NaN: the GPU's NaN payload is its own), else
// relatively, |got−want| ≤ tol·max(|want|, floor) (NaN and ±Inf must match
// exactly). floor is an absolute scale below which the difference is no
// longer relative to want: 0 for a kernel whose result has no
// cancellation (an elementwise function), about the scale of the terms
// for one that sums terms of both signs (a result near 0 carries the
// terms' rounding). Each caller states its floor and why.
func Equal[T Float](got, want []T, tol, floor float64) error {
	if len(got) < len(want) {
		return fmt.Errorf("got %d elements, want %d", len(got), len(want))
	}
	bad, first := 0, -1
	for i, w := range want {
		g := got[i]
		gf, wf := float64(g), float64(w)
		ok := false
		switch {
		case gf != gf || wf != wf:
			ok = gf != gf && wf != wf
		case tol == 0 || math.IsInf(wf, 0):
			ok = gf == wf && math.Signbit(gf) == math.Signbit(wf)
		default:
			ok = math.Abs(gf-wf) <= tol*math.Max(floor, math.Abs(wf))
		}
		if !ok {
			bad++
			if first < 0 {
				first = i
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ (tol %g, floor %g); first at %d: got %v, want %v", bad, len(want), tol, floor, first, got[first], want[first])
	}
	return nil
}

// EqualInts compares integer outputs exactly.
func EqualInts[I ~int | ~int32 | ~int64](got []I, want []int) error {
	for i, w := range want {
		if int(got[i]) != w {
			return fmt.Errorf("element %d of %d: got %d, want %d", i, len(want), got[i], w)
		}
	}
	return nil
}

// Special draws k = r.IntN(n) and, for k < 4, the value the kernels must
// carry through: NaN, ±Inf (one more draw for the sign), −0, +0. Other k
// are the caller's own values (ties, large or normal draws); v is then 0.
func Special[T Float](r *rand.Rand, n int) (v T, k int) {
	switch k = r.IntN(n); k {
	case 0:
		v = T(math.NaN())
	case 1:
		v = T(math.Inf(1 - 2*r.IntN(2)))
	case 2:
		v = T(math.Copysign(0, -1))
	}
	return v, k
}

// Tol is the tolerance of an elementwise kernel that calls exp, log1p or
// erf in double and rounds to T (the C library's functions in the
// emulator, Go's math in the Go kernel, which may differ in the last
// place): 1e-6 relative for float32, 1e-15 for float64 (a few ulps;
// measured: 0 and 2.3e-16). Equal's floor for these is 0: the result is
// one rounding of one function value, relative at any magnitude.
func Tol[T Float]() float64 {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return 1e-6
	}
	return 1e-15
}

// Ran records the kernels whose subtest ran.
type Ran struct {
	mu sync.Mutex
	m  map[string]bool
}

// Kernel runs f as t's subtest named kernel (a PTX entry name) and
// records it.
func (r *Ran) Kernel(t *testing.T, kernel string, f func(t *testing.T)) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]bool{}
	}
	r.m[kernel] = true
	r.mu.Unlock()
	t.Run(kernel, f)
}

// Check fails t for each PTX entry of kernel folder dir (package kernels:
// "gops", "nn") with no subtest, and for each subtest that names no entry;
// it checks nothing when the test binary's -test.run selects subtests (a
// pattern with a /) or -test.skip is set. Each folder's tests have one
// home, the package of its kernels, and one Ran.
func (r *Ran) Check(t *testing.T, dir string) {
	// A -run pattern with a subtest part (or any -skip) leaves kernels out
	// on purpose: the check would report them as missing.
	run, skip := flag.Lookup("test.run"), flag.Lookup("test.skip")
	if (run != nil && strings.Contains(run.Value.String(), "/")) || (skip != nil && skip.Value.String() != "") {
		t.Logf("the coverage of %s's PTX entries is not checked: -test.run or -test.skip selects subtests", dir)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	entries := kernels.Entries(dir)
	if len(entries) == 0 {
		t.Fatalf("no PTX entries in kernel folder %q", dir)
	}
	want := map[string]bool{}
	for _, e := range entries {
		want[e] = true
		if !r.m[e] {
			t.Errorf("PTX entry %s (%s) has no emulation subtest", e, dir)
		}
	}
	for k := range r.m {
		if !want[k] {
			t.Errorf("emulation subtest %s names no PTX entry of %s", k, dir)
		}
	}
	if gpuReport != nil {
		summary, missing := gpuReport(entries)
		t.Logf("%s: %s", dir, summary)
		for _, e := range missing {
			t.Errorf("PTX entry %s (%s) was not compared on the GPU", e, dir)
		}
	}
}
