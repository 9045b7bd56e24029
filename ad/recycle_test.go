package ad

import (
	"runtime"
	"testing"
	"time"
	"unsafe"
)

// TestRecycle: a large result dropped by everyone comes back, cleared, for
// the next result of its size; one still referenced never does.
func TestRecycle(t *testing.T) {
	const n = recycleMin / 8 * 3 // float64s: 3·recycleMin bytes
	addr := func(b []float64) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
	held := newBuffer[float64](n, false)
	held[0] = 7
	dropped := map[uintptr]bool{}
	drop := func() {
		b := newBuffer[float64](n, false)
		for i := range b {
			b[i] = 1
		}
		dropped[addr(b)] = true
	}
	drop()
	reused := false
	for try := 0; try < 50 && !reused; try++ {
		runtime.GC()
		time.Sleep(time.Millisecond) // finalizers run on their own goroutine
		b := newBuffer[float64](n, false)
		if addr(b) == addr(held) {
			t.Fatal("a buffer still referenced was handed out again")
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("recycled buffer not cleared: [%d] = %v", i, v)
			}
		}
		reused = dropped[addr(b)]
		b[0] = 1
		dropped[addr(b)] = true // b is dropped now too
	}
	if !reused {
		t.Error("no dropped buffer was reused within 50 collections")
	}
	if held[0] != 7 {
		t.Errorf("held buffer changed: %v", held[0])
	}
	if b := newBuffer[float32](3, true); len(b) != 3 || b[0] != 0 {
		t.Errorf("small buffer %v", b)
	}
}
