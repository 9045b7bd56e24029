package cpu

import "sync"

// Large scratch buffers are kept between kernel calls: the RoIAlign
// kernels copy a whole feature map channels-last, 55 MB for an FPN's
// finest level, and a fresh buffer that size costs a page fault per 4 KiB
// (11 µs each on the benchmark VM) on first touch, more than the copy.
// One buffer per element type is kept, the largest returned, at most
// scratchKeep bytes; a kernel takes it (or a new one) and gives it back
// when done. Buffers never leave the kernels. sync.Pool does not do here:
// a run that allocates this much triggers a collection, which empties it.
const scratchKeep = 256 << 20

var scratch struct {
	sync.Mutex
	f32 []float32
	f64 []float64
}

// getScratch returns a buffer of n elements, contents undefined.
func getScratch[T Float](n int) []T {
	scratch.Lock()
	defer scratch.Unlock()
	switch any(*new(T)).(type) {
	case float32:
		if cap(scratch.f32) >= n {
			b := scratch.f32[:n]
			scratch.f32 = nil
			return any(b).([]T)
		}
	case float64:
		if cap(scratch.f64) >= n {
			b := scratch.f64[:n]
			scratch.f64 = nil
			return any(b).([]T)
		}
	}
	return make([]T, n)
}

// putScratch gives b back to be kept, if it is larger than the buffer kept
// now and at most scratchKeep bytes.
func putScratch[T Float](b []T) {
	scratch.Lock()
	defer scratch.Unlock()
	switch bs := any(b).(type) {
	case []float32:
		if cap(bs) > cap(scratch.f32) && cap(bs)*4 <= scratchKeep {
			scratch.f32 = bs
		}
	case []float64:
		if cap(bs) > cap(scratch.f64) && cap(bs)*8 <= scratchKeep {
			scratch.f64 = bs
		}
	}
}
