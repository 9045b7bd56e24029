package ad

import (
	"runtime"
	"sync"
	"unsafe"
)

// Kernel results are recycled. A Go program that allocates a fresh
// multi-megabyte result on every run of a graph pays, besides the zeroing,
// a page fault per 4 KiB whenever the runtime hands it memory it had
// returned to the OS, which it does often for large objects: measured
// 0.4 ms per MiB allocated and touched on the 2-core VM of BENCHMARKS.md,
// where a page fault costs 11 µs, against about 0.1 ms per MiB for
// clearing memory already mapped. So a large result's backing array gets a
// finalizer: once nothing references it (the graph was reset or dropped
// and no one kept the value or a slice of it), the finalizer puts it in a
// pool for its size in bytes, and the next kernel result of that size
// reuses it, cleared (the element types hold no pointers, so an array can
// change type). The pools are sync.Pools: what is not reused within
// two garbage collections is released.
const recycleMin = 64 << 10 // bytes; smaller results are plain allocations

var recyclePools sync.Map // size in bytes → *sync.Pool of unsafe.Pointer (the array)

// newBuffer returns a zeroed slice of n elements, recycled when large.
func newBuffer[E ~float32 | ~float64 | ~int](n int) []E {
	var z E
	bytes := n * int(unsafe.Sizeof(z))
	if bytes < recycleMin {
		return make([]E, n)
	}
	p, _ := recyclePools.LoadOrStore(bytes, new(sync.Pool))
	pool := p.(*sync.Pool)
	var b []E
	if ptr, ok := pool.Get().(unsafe.Pointer); ok {
		b = unsafe.Slice((*E)(ptr), n)
		clear(b)
	} else {
		b = make([]E, n)
	}
	runtime.SetFinalizer(&b[0], func(first *E) { pool.Put(unsafe.Pointer(first)) })
	return b
}
