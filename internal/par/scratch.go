package par

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Scratch keeps buffers of E between kernel calls: the kernels' scratch
// memory (channels-last copies of feature maps, the grid samplers' taps,
// im2col columns, GEMM packing buffers, max pooling's row keys). The zero
// value is an empty keeper, safe for use by several goroutines at once.
//
// A fresh buffer costs a page fault per 4 KiB on first touch (11 µs each
// on the benchmark VM), more than most kernels spend filling it: the
// RoIAlign kernels copy a whole feature map channels-last, 55 MB for an
// FPN's finest level, and GEMM's packing buffers made small products slow
// when allocated per call. So buffers given back are kept for good, not
// in a sync.Pool: a run that allocates this much triggers a collection,
// which would empty the pool just when it is needed.
//
// The memory held is bounded: a keeper holds at most ScratchBytes bytes
// and ScratchBuffers buffers, and all keepers of the process together at
// most ScratchTotal bytes; a buffer given back that does not fit replaces
// smaller buffers of its keeper, the largest being the most worth
// keeping, or is left to the collector. A keeper holds several buffers,
// so that the workers of one loop, and a kernel that needs two buffers at
// once, each find one. There is a keeper per kind of buffer (its element
// type and its users: say float copies of feature maps, grid taps, GEMM's
// packing), so that one kind's large buffers do not push out another's.
//
// Get hands a buffer to one caller only, and it must come back through Put
// once the kernel is done with it, never reaching a kernel's result: its
// contents are undefined, left from an earlier call, so a kernel writes
// every element it reads.
type Scratch[E any] struct {
	mu    sync.Mutex
	kept  [][]E
	bytes int // the kept buffers' capacities in bytes
}

// ScratchBytes is the most memory one Scratch keeps, in bytes,
// ScratchBuffers the most buffers, and ScratchTotal the most memory all
// of them keep together.
const (
	ScratchBytes   = 256 << 20
	ScratchBuffers = 256
	ScratchTotal   = 512 << 20
)

// scratchHeld is the memory all keepers keep, in bytes (buffers handed
// out by Get are not counted).
var scratchHeld atomic.Int64

// reserveScratch counts size more bytes kept, if ScratchTotal allows.
func reserveScratch(size int) bool {
	for {
		h := scratchHeld.Load()
		if h+int64(size) > ScratchTotal {
			return false
		}
		if scratchHeld.CompareAndSwap(h, h+int64(size)) {
			return true
		}
	}
}

// Get returns a buffer of n elements, contents undefined: the smallest
// kept one with room for n elements, or a new one.
func (s *Scratch[E]) Get(n int) []E {
	s.mu.Lock()
	best := -1
	for i, b := range s.kept {
		if cap(b) >= n && (best < 0 || cap(b) < cap(s.kept[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := s.kept[best]
		s.drop(best)
		s.mu.Unlock()
		return b[:n]
	}
	s.mu.Unlock()
	return make([]E, n)
}

// Put gives b, from Get, back to be kept, taking the place of smaller
// kept buffers if the keeper, or all keepers together, are full; b must
// not be used afterwards.
func (s *Scratch[E]) Put(b []E) {
	size := cap(b) * int(unsafe.Sizeof(*new(E)))
	if size == 0 || size > ScratchBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.bytes+size > ScratchBytes || len(s.kept) >= ScratchBuffers || !reserveScratch(size) {
		small := -1
		for i, k := range s.kept {
			if small < 0 || cap(k) < cap(s.kept[small]) {
				small = i
			}
		}
		if small < 0 || cap(s.kept[small]) >= cap(b) {
			return // the others are worth more: b is left to the collector
		}
		s.drop(small)
	}
	s.kept = append(s.kept, b[:0])
	s.bytes += size
}

// drop forgets kept buffer i, under mu.
func (s *Scratch[E]) drop(i int) {
	size := cap(s.kept[i]) * int(unsafe.Sizeof(*new(E)))
	s.bytes -= size
	scratchHeld.Add(-int64(size))
	last := len(s.kept) - 1
	s.kept[i] = s.kept[last]
	s.kept[last] = nil
	s.kept = s.kept[:last]
}

// Pair is the keepers of two element types' buffers (float32 and
// float64, say), for kernels generic over both: Of picks one.
type Pair[A, B any] struct {
	A Scratch[A]
	B Scratch[B]
}

// Of is p's keeper of E's buffers; E must be A or B (Of panics
// otherwise, a kernel's bug).
func Of[E, A, B any](p *Pair[A, B]) *Scratch[E] {
	if k, ok := any(&p.A).(*Scratch[E]); ok {
		return k
	}
	return any(&p.B).(*Scratch[E])
}
