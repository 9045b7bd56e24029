//go:build cgo && linux && amd64

package emu_test

import (
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/gops-dev/gops/internal/cuda/emu"
	"github.com/gops-dev/gops/internal/cuda/grid"
	"github.com/gops-dev/gops/internal/cuda/kernels"
)

// The launch boundaries: empty launches, the argument checks, grids at
// grid.GridMax (every item done by exactly one thread), and launches
// whose work items reach past 2³¹ (every kernel indexes with 64 bits), of
// which only the threads at the edges run, on sparse memory.

// TestEmptyLaunches: n = 0 launches nothing (as glue.Launch), for
// every kernel, even with null pointers.
func TestEmptyLaunches(t *testing.T) {
	ks := emu.Kernels()
	if len(ks) == 0 {
		t.Fatal("no kernels")
	}
	for name, k := range ks {
		args := make([]any, len(k.Sig))
		for i, c := range k.Sig {
			switch c {
			case 'p':
				args[i] = emu.Ptr(0)
			case 'i', 'l':
				args[i] = 0
			case 'f':
				args[i] = float32(0)
			case 'd':
				args[i] = 0.0
			default:
				t.Fatalf("%s: parameter code %q", name, c)
			}
		}
		if err := emu.Launch(name, 0, emu.Config{}, args...); err != nil {
			t.Errorf("%s: empty launch: %v", name, err)
		}
		if len(args) > 0 {
			if err := emu.Launch(name, 0, emu.Config{}, args[1:]...); err == nil {
				t.Errorf("%s: a missing argument is not an error", name)
			}
		}
	}
}

// TestArgumentTypes: the arguments are checked against the kernel's C
// parameters as the host code's must match them.
func TestArgumentTypes(t *testing.T) {
	x := emu.Alloc(8)
	defer x.Free()
	p := x.Ptr()
	for _, c := range []struct {
		name string
		args []any
		ok   bool
	}{
		{"layout_copy_f32", []any{p, p, 1}, true},
		{"layout_copy_f32", []any{p, p, int64(1)}, true},    // int64 for a long long
		{"layout_copy_f32", []any{p, p, float32(1)}, false}, // float for a long long
		{"layout_copy_f32", []any{p, 1, 1}, false},          // int for a pointer
		{"layout_fill_f32", []any{p, 1.0, 1}, false},        // double for a float
		{"layout_fill_f32", []any{p, float32(1), 1}, true},
		{"layout_fill_f64", []any{p, float32(1), 1}, false},       // float for a double
		{"act_leaky_f32", []any{p, p, float32(0), true, 1}, true}, // bool for long long
		{"roipool_gather_f32", []any{p, p, p, 1, int64(1), p}, true},
		{"no_such_kernel", nil, false},
	} {
		err := emu.Launch(c.name, 1, emu.Config{}, c.args...)
		if (err == nil) != c.ok {
			t.Errorf("%s%v: err = %v, want ok %v", c.name, c.args, err, c.ok)
		}
	}
}

// sparse maps size bytes of zero pages, committed only where touched.
func sparse(t *testing.T, size int) (emu.Ptr, []byte) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("cannot map %d bytes: %v", size, err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return emu.Ptr(unsafe.Pointer(&b[0])), b
}

func f32At(b []byte, i int) float32 { return *(*float32)(unsafe.Pointer(&b[4*i])) }

func setF32(b []byte, i int, v float32) { *(*float32)(unsafe.Pointer(&b[4*i])) = v }

// owned checks the items of the threads that ran: item i < n is written
// (want(i)) exactly when i mod stride is one of them; at a few items past
// n nothing is written.
func owned(t *testing.T, b []byte, n, stride int, threads []int64, want func(i int) float32) {
	t.Helper()
	for _, th := range threads {
		for i := int(th); i < n+2*stride; i += stride {
			got := f32At(b, i)
			if i < n && got != want(i) {
				t.Fatalf("item %d (thread %d): got %v, want %v", i, th, got, want(i))
			}
			if i >= n && i < len(b)/4 && got != 0 {
				t.Fatalf("item %d past n = %d written by thread %d", i, n, th)
			}
		}
	}
	// an item of a thread that did not run stays unwritten
	for _, i := range []int{n - 1, n / 2} {
		run := false
		for _, th := range threads {
			run = run || int64(i%stride) == th
		}
		if !run && f32At(b, i) != 0 {
			t.Fatalf("item %d written, but its thread %d did not run", i, i%stride)
		}
	}
}

// TestPast2p31: gops' and nn's kernels, 64-bit both, over 2³¹ + 5 work
// items, the grid at GridMax, only the threads at the edges run on sparse
// memory: each does its items i ≡ thread (mod Block·GridMax) below n, the
// ones past 2³¹ included, and stops at n (the emulator compiles with
// -fwrapv, so a 32-bit index would wrap to a negative one and fault or
// write elsewhere).
func TestPast2p31(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const n = 1<<31 + 5
	stride := grid.Block * grid.GridMax
	threads := []int64{0, 1, 4, 5, 6, int64(stride - 1)}
	size := 4 * (n + 2*stride)
	cfg := emu.Config{Threads: threads}
	t.Run("layout_fill_f32", func(t *testing.T) {
		dst, b := sparse(t, size)
		if err := emu.Launch("layout_fill_f32", n, cfg, dst, float32(7), n); err != nil {
			t.Fatal(err)
		}
		owned(t, b, n, stride, threads, func(int) float32 { return 7 })
	})
	t.Run("layout_copy_f32", func(t *testing.T) { // gops'
		src, xb := sparse(t, size)
		dst, b := sparse(t, size)
		for _, th := range threads {
			for i := int(th); i < n; i += stride {
				setF32(xb, i, float32(i%1000+1))
			}
		}
		if err := emu.Launch("layout_copy_f32", n, cfg, src, dst, n); err != nil {
			t.Fatal(err)
		}
		owned(t, b, n, stride, threads, func(i int) float32 { return float32(i%1000 + 1) })
	})
	t.Run("act_leaky_f32", func(t *testing.T) {
		src, xb := sparse(t, size)
		dst, b := sparse(t, size)
		for _, i := range []int{1 << 31, 1<<31 + 4, n - 1, 1<<31 - 1, 5} {
			setF32(xb, i, -2)
		}
		if err := emu.Launch("act_leaky_f32", n, cfg, src, dst, float32(0.5), false, n); err != nil {
			t.Fatal(err)
		}
		owned(t, b, n, stride, threads, func(i int) float32 { return 0.5 * f32At(xb, i) })
		if f32At(b, 1<<31+4) != -1 {
			t.Fatalf("item 2³¹+4: got %v, want -1", f32At(b, 1<<31+4))
		}
	})
}

// TestFullGridOwnership: at the host code's full grid (GridMax blocks) over
// more items than threads, a random half of the threads writes exactly the
// items i with i mod (Block·GridMax) among them: every item belongs to one
// thread, so the grid-stride loop covers each exactly once. For a kernel
// of gops and one of nn.
func TestFullGridOwnership(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	stride := grid.Block * grid.GridMax
	n := stride + stride/8 + 7
	r := rand.New(rand.NewPCG(41, 42))
	threads := make([]int64, 0, stride)
	ran := make([]bool, stride)
	for th := 0; th < stride; th++ {
		if r.IntN(2) == 0 {
			threads = append(threads, int64(th))
			ran[th] = true
		}
	}
	for _, name := range []string{"layout_copy_f32", "layout_fill_f32"} {
		src := emu.Alloc(4 * n)
		dst := emu.Alloc(4 * (n + 1))
		xs := emu.Slice[float32](src)
		for i := range xs {
			xs[i] = float32(i%4093 + 1)
		}
		args := []any{src.Ptr(), dst.Ptr(), n}
		want := func(i int) float32 { return xs[i] }
		if name == "layout_fill_f32" {
			args = []any{dst.Ptr(), float32(3), n}
			want = func(int) float32 { return 3 }
		}
		if err := emu.Launch(name, n, emu.Config{Threads: threads}, args...); err != nil {
			t.Fatal(err)
		}
		got := emu.Slice[float32](dst)
		for i := 0; i <= n; i++ {
			w := float32(0)
			if i < n && ran[i%stride] {
				w = want(i)
			}
			if got[i] != w {
				t.Fatalf("%s: item %d (thread %d, ran %v): got %v, want %v", name, i, i%stride, ran[i%stride], got[i], w)
			}
		}
		src.Free()
		dst.Free()
	}
}

// TestHarnessFindsRaces: the race checks see what they are for. Two
// launches made racy by their arguments: concat_copy with blocks that
// overlap (two threads write one element: CheckExclusive fails), and a
// copy onto its own source shifted by one element (a thread reads what
// another writes: forwards and backwards give different results).
func TestHarnessFindsRaces(t *testing.T) {
	dst := emu.Alloc(4 * 400)
	defer dst.Free()
	src := emu.Upload(make([]float32, 600))
	defer src.Free()
	out := []emu.Region{{B: dst, Elem: 4}}
	if _, err := emu.CheckExclusive("layout_concat_copy_f32", 600, emu.Config{}, out, src.Ptr(), dst.Ptr(), 2, 300, 100, 0); err == nil {
		t.Error("CheckExclusive missed two threads writing one element")
	}
	if n, err := emu.CheckExclusive("layout_concat_copy_f32", 400, emu.Config{}, out, src.Ptr(), dst.Ptr(), 2, 200, 200, 0); err != nil || n != 400 {
		t.Errorf("disjoint blocks: %d elements written, %v", n, err)
	}
	results := map[emu.Order][]float32{}
	for _, o := range []emu.Order{emu.Forward, emu.Backward} {
		b := emu.Alloc(4 * 1001)
		x := emu.Slice[float32](b)
		for i := range x {
			x[i] = float32(i)
		}
		// dst = src + 1 element: thread i reads element i, which thread
		// i−1 writes.
		if err := emu.Launch("layout_copy_f32", 1000, emu.Config{Order: o}, b.Ptr(), b.Ptr()+4, 1000); err != nil {
			t.Fatal(err)
		}
		results[o] = emu.Download[float32](b, 1001)
		b.Free()
	}
	same := true
	for i := range results[emu.Forward] {
		same = same && results[emu.Forward][i] == results[emu.Backward][i]
	}
	if same {
		t.Error("an order-dependent launch gave the same result forwards and backwards")
	}
}

// TestKernelTable: the emulator has one kernel per PTX entry of gops' and
// nn's folders, by name; a duplicate name would shadow another entry (gen
// refuses one: gen.TestDuplicateEntry).
func TestKernelTable(t *testing.T) {
	entries := append(kernels.Entries("gops"), kernels.Entries("nn")...)
	ks := emu.Kernels()
	if len(ks) != len(entries) {
		t.Errorf("%d emulated kernels for %d PTX entries", len(ks), len(entries))
	}
	for _, e := range entries {
		if _, ok := ks[e]; !ok {
			t.Errorf("PTX entry %s is not emulated", e)
		}
	}
	// One convention: every integer parameter is a long long.
	for _, k := range ks {
		if strings.Trim(k.Sig, "plfd") != "" {
			t.Errorf("%s's parameters %q: not all pointers, long longs, floats and doubles", k.Name, k.Sig)
		}
	}
}
