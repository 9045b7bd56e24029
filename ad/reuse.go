package ad

import (
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"gorgonia.org/gorgonia"
)

// ReuseResults says whether the ops that Apply puts in g (before or after
// this call) write their results into memory they used two runs earlier,
// instead of new arrays: on for on = true, off (Gorgonia's and the default
// behaviour: every run allocates every result) for false.
//
// A run then allocates next to nothing: no fresh multi-megabyte array to be
// zeroed and faulted in, and no garbage for Go's collector, which is most of
// the time of memory-bound ops (pooling, normalisation, interpolation, grid
// sampling) on large tensors, much as torch's caching allocator hands a
// freed block to the next tensor. Each op keeps two arrays and alternates:
// run k writes where run k−2 wrote, so the previous run's results stay
// intact through a run, and a result fed back as the next run's input
// (gorgonia.Let of a recurrent state, read by any op) is safe. What a run
// overwrites are the values of two runs before: a node's Value() from an
// older run, and, on the LispMachine, whose gorgonia.Read hands out the
// node's value itself, such a read value (the TapeMachine's Read copies).
// Clone a value ((*tensor.Dense).Clone) to keep it longer; ad.Constant of a value
// likewise. The two arrays alternate per call of the op: every run of a
// machine over g or over a subgraph holding the op counts, a failed one
// too, so a state fed back from one machine's run may be overwritten if
// another machine runs the op in between. Only one machine may run g at a
// time (as Gorgonia's nodes, which hold their values, already require),
// and g's clones (ExprGraph.Clone) share g's ops, hence their arrays and
// this setting (the graph an op was built in decides): never run a graph
// and its clone at the same time with reuse on. Switching it off drops the
// kept arrays. Ops with a Forward instead of a Kernel, Gorgonia's own ops,
// and, in the cuda build, ops running on the GPU allocate as before.
// Nothing else changes: the same values, bit for bit.
func ReuseResults(g *gorgonia.ExprGraph, on bool) {
	if g == nil {
		return
	}
	w := weak.Make(g)
	if !on {
		if _, marked := reuseGraphs.Load(w); marked {
			reuseGraphs.Store(w, false)
		}
		for _, n := range g.AllNodes() {
			if o := unwrap(n.Op()); o != nil {
				o.keep.release()
			}
		}
		return
	}
	if _, loaded := reuseGraphs.LoadOrStore(w, true); loaded {
		reuseGraphs.Store(w, true)
		return
	}
	runtime.AddCleanup(g, func(w weak.Pointer[gorgonia.ExprGraph]) { reuseGraphs.Delete(w) }, w)
}

// reuseGraphs holds the graphs that ReuseResults switched on, weakly: an
// entry leaves with its graph.
var reuseGraphs sync.Map // weak.Pointer[gorgonia.ExprGraph] → bool (on)

// reusing reports whether ReuseResults is on for g.
func reusing(g *gorgonia.ExprGraph) bool {
	if g == nil {
		return false
	}
	on, _ := reuseGraphs.Load(weak.Make(g))
	return on == true
}

// reuseSlot is an op's last two results' memory, kept for ReuseResults.
type reuseSlot struct {
	mu   sync.Mutex
	buf  [2]any // []float32, []float64 or []int
	next int    // the one the next run writes
}

// release drops the kept arrays (ReuseResults switched off).
func (k *reuseSlot) release() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.buf, k.next = [2]any{}, 0
}

// resultBuffer returns the memory for o's Kernel result of n elements:
// without reuse a new buffer (newBuffer); with reuse the memory of the
// result two runs back when it has n elements and shares none with the
// inputs in (a value older than the last run, fed back), cleared unless
// the Kernel overwrites every element, else a new one, kept for the run
// after next.
func resultBuffer[E ~float32 | ~float64 | ~int, T Float](o *op, reuse bool, n int, in []Tensor[T]) []E {
	overwrite := o.spec.KernelOverwrites
	if !reuse {
		return newBuffer[E](n, overwrite)
	}
	k := &o.keep
	k.mu.Lock()
	defer k.mu.Unlock()
	slot := &k.buf[k.next]
	k.next ^= 1
	if b, ok := (*slot).([]E); ok && len(b) == n && !overlapsAny(b, in) {
		if !overwrite {
			clear(b)
		}
		return b
	}
	b := make([]E, n)
	*slot = b
	return b
}

// overlapsAny reports whether b shares memory with an input's elements.
func overlapsAny[E ~float32 | ~float64 | ~int, T Float](b []E, in []Tensor[T]) bool {
	for _, t := range in {
		if overlaps(b, t.Data) || overlaps(b, t.Ints) {
			return true
		}
	}
	return false
}

// overlaps reports whether the arrays of a and b share a byte.
func overlaps[A, B any](a []A, b []B) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	a1 := a0 + uintptr(len(a))*unsafe.Sizeof(a[0])
	b1 := b0 + uintptr(len(b))*unsafe.Sizeof(b[0])
	return a0 < b1 && b0 < a1
}
