package ad

import (
	"runtime"
	"sync"
	"unsafe"
)

// Mid-size kernel results are recycled. A graph run on small inputs
// allocates a few megabytes per run and keeps little alive, so Go's
// collector runs every few runs and its cost rivals the kernels' (Softmax
// on [256, 1000]: 0.56 ms a run with fresh results, 0.41 ms recycled, on
// the 2-core VM of BENCHMARKS.md). So a result's backing array gets a
// finalizer: once nothing references it (the graph was reset or dropped
// and no one kept the value or a slice of it), the finalizer puts it in a
// pool for its size in bytes, and the next kernel result of that size
// reuses it, cleared (the element types hold no pointers, so an array can
// change type). The pools are sync.Pools: what is not reused within two
// collections is released. Large results are not recycled: an object with
// a finalizer survives one more collection, and for results of tens of
// megabytes the heap grew (GroupNorm's benchmark: peak RSS 232 MB without
// recycling, 884 MB with) for no gain in time.
const (
	recycleMin = 64 << 10 // bytes; smaller results are plain allocations
	recycleMax = 4 << 20  // bytes; larger ones too (see above)
)

var recyclePools sync.Map // size in bytes → *sync.Pool of unsafe.Pointer (the array)

// newBuffer returns a slice of n elements, recycled when mid-size; zeroed,
// unless overwrite (the caller writes every element) and it is recycled.
func newBuffer[E ~float32 | ~float64 | ~int](n int, overwrite bool) []E {
	var z E
	bytes := n * int(unsafe.Sizeof(z))
	if bytes < recycleMin || bytes > recycleMax {
		return make([]E, n)
	}
	p, _ := recyclePools.LoadOrStore(bytes, new(sync.Pool))
	pool := p.(*sync.Pool)
	var b []E
	if ptr, ok := pool.Get().(unsafe.Pointer); ok {
		b = unsafe.Slice((*E)(ptr), n)
		if !overwrite {
			clear(b)
		}
	} else {
		b = make([]E, n)
	}
	runtime.SetFinalizer(&b[0], func(first *E) { pool.Put(unsafe.Pointer(first)) })
	return b
}
