package par

import (
	"sync"
	"testing"
)

// TestScratchReuse checks that Get hands out a kept buffer with room
// (the smallest such), a new one otherwise, and that one buffer goes to
// one caller at a time.
func TestScratchReuse(t *testing.T) {
	var s Scratch[float32]
	small, big := s.Get(10), s.Get(1000)
	if len(small) != 10 || len(big) != 1000 {
		t.Fatalf("lengths %d, %d", len(small), len(big))
	}
	s.Put(big)
	s.Put(small)
	if b := s.Get(5); &b[0] != &small[0] {
		t.Fatal("Get(5) did not take the smallest kept buffer with room")
	}
	if b := s.Get(500); &b[0] != &big[0] || len(b) != 500 {
		t.Fatal("Get(500) did not take the large kept buffer")
	}
	if b := s.Get(5); &b[0] == &small[0] || &b[0] == &big[0] {
		t.Fatal("a buffer in use was handed out again")
	}
}

// TestScratchBounds checks ScratchBytes and ScratchBuffers: a buffer
// larger than the bound is not kept, and a full keeper keeps the larger
// buffers.
func TestScratchBounds(t *testing.T) {
	var s Scratch[byte]
	s.Put(make([]byte, ScratchBytes+1))
	if len(s.kept) != 0 {
		t.Fatal("kept a buffer over ScratchBytes")
	}
	s.Put(make([]byte, ScratchBytes/2))
	s.Put(make([]byte, ScratchBytes/4))
	s.Put(make([]byte, ScratchBytes/4+1)) // pushes the quarter out
	if len(s.kept) != 2 || s.bytes != ScratchBytes/2+ScratchBytes/4+1 {
		t.Fatalf("kept %d buffers, %d bytes", len(s.kept), s.bytes)
	}
	var c Scratch[int64]
	for i := range ScratchBuffers + 10 {
		c.Put(make([]int64, 1+i))
	}
	if len(c.kept) != ScratchBuffers || cap(c.Get(1)) != 11 {
		t.Fatalf("kept %d buffers, want the %d largest", len(c.kept), ScratchBuffers)
	}
}

// TestScratchConcurrent has goroutines take, write and give back buffers

// TestScratchTotal checks ScratchTotal: keepers together keep at most that
// many bytes (a keeper with nothing smaller to give up leaves a buffer to
// the collector), Get's buffers are not counted, and the count goes back
// to zero once every kept buffer is taken.
func TestScratchTotal(t *testing.T) {
	// The other tests' keepers are gone but still counted: start afresh.
	defer scratchHeld.Store(scratchHeld.Swap(0))
	base := scratchHeld.Load()
	var a, b, c Scratch[byte]
	a.Put(make([]byte, ScratchBytes))
	b.Put(make([]byte, ScratchBytes))
	if got := scratchHeld.Load() - base; got != 2*ScratchBytes {
		t.Fatalf("held %d, want %d", got, 2*ScratchBytes)
	}
	c.Put(make([]byte, 1<<20))
	if len(c.kept) != 0 || scratchHeld.Load()-base > ScratchTotal {
		t.Fatalf("kept past ScratchTotal: %d buffers, held %d", len(c.kept), scratchHeld.Load()-base)
	}
	_ = a.Get(1)
	c.Put(make([]byte, 1<<20))
	if len(c.kept) != 1 {
		t.Fatal("a buffer was not kept once ScratchTotal had room")
	}
	_, _ = b.Get(1), c.Get(1)
	if got := scratchHeld.Load() - base; got != 0 {
		t.Fatalf("held %d after every buffer was taken", got)
	}
}

// at once (run with -race): none sees another's writes.
func TestScratchConcurrent(t *testing.T) {
	var s Scratch[int]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 200 {
				b := s.Get(1 + (g*31+it)%97)
				for i := range b {
					b[i] = g
				}
				for i := range b {
					if b[i] != g {
						t.Errorf("goroutine %d: element %d is %d", g, i, b[i])
						return
					}
				}
				s.Put(b)
			}
		}()
	}
	wg.Wait()
}
