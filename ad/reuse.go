package ad

import (
	"runtime"
	"sync"
	"sync/atomic"
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
	if on {
		setReuse(g, reuseTwo)
	} else {
		setReuse(g, reuseOff)
	}
}

// ReuseResultsInPlace is ReuseResults with one array an op instead of
// two: each run writes its results where the run before wrote them, so
// that a node's Value() (and, on the LispMachine, a value gorgonia.Read
// handed out) lasts until the next run of its op, not a run longer — the
// lifetime of a result torch's caching allocator frees as soon as the
// caller drops it (the same block for the next call). Read or clone what
// you need between runs, as a training loop reads its loss and gradients
// before the next step. A run's memory is then one array a result, which
// a memory-bound op's working set (input and result) may keep in the
// last-level cache where two alternating arrays do not: eval BatchNorm
// of [8, 64, 56, 56] float64 (12.8 MB in and out) 372 → 302 µs on a
// 32 MiB L3 in one A/B (BENCHMARKS.md, issue 26's tenth session). A result fed back as the next run's input (gorgonia.Let of
// a recurrent state) is safe: where the array of the run before is bound
// to one of g's input nodes or is one of the op's inputs, the run writes
// into the op's other array (as ReuseResults does), at the cost of a look
// at g's inputs for every op a run. A value kept otherwise (a node's
// Value(), an ad.Constant made of a result, which reads the array on
// every run) lasts until its op's next run, where ReuseResults' lasts a
// run longer.
// Everything else is as ReuseResults: the same values,
// bit for bit, the same ops (those with a Kernel, on the CPU), one
// machine at a time over g and its clones. On for on = true; off (every
// run allocates every result; ReuseResults(g, false)) for false.
func ReuseResultsInPlace(g *gorgonia.ExprGraph, on bool) {
	if on {
		setReuse(g, reuseOne)
	} else {
		setReuse(g, reuseOff)
	}
}

// reuseMode is a graph's setting of ReuseResults and ReuseResultsInPlace.
type reuseMode uint8

const (
	reuseOff reuseMode = iota // every run allocates every result
	reuseTwo                  // ReuseResults: two arrays an op, alternating
	reuseOne                  // ReuseResultsInPlace: the array of the run before
)

// setReuse sets g's mode; off drops the kept arrays of g's ops.
func setReuse(g *gorgonia.ExprGraph, mode reuseMode) {
	if g == nil {
		return
	}
	w := weak.Make(g)
	if mode == reuseOff {
		if e, marked := reuseGraphs.Load(w); marked {
			e.(*graphReuse).mode.Store(uint32(reuseOff))
		}
		for _, n := range g.AllNodes() {
			if o := unwrap(n.Op()); o != nil {
				o.keep.release()
			}
		}
		return
	}
	e, loaded := reuseGraphs.LoadOrStore(w, &graphReuse{size: -1})
	e.(*graphReuse).mode.Store(uint32(mode))
	if !loaded {
		runtime.AddCleanup(g, func(w weak.Pointer[gorgonia.ExprGraph]) { reuseGraphs.Delete(w) }, w)
	}
}

// reuseGraphs holds the graphs that ReuseResults or ReuseResultsInPlace
// switched on, weakly: an entry leaves with its graph.
var reuseGraphs sync.Map // weak.Pointer[gorgonia.ExprGraph] → *graphReuse

// graphReuse is a graph's reuse setting, and, for ReuseResultsInPlace,
// its input nodes (gorgonia's Inputs: the nodes a caller binds values to,
// with Let or at creation) when it had size nodes.
type graphReuse struct {
	mode   atomic.Uint32 // a reuseMode
	mu     sync.Mutex
	size   int
	inputs gorgonia.Nodes
}

// reusing is g's reuse setting, nil unless ReuseResults or
// ReuseResultsInPlace marked g.
func reusing(g *gorgonia.ExprGraph) *graphReuse {
	if g == nil {
		return nil
	}
	e, _ := reuseGraphs.Load(weak.Make(g))
	r, _ := e.(*graphReuse)
	return r
}

// modeOf is r's mode (reuseOff for nil).
func (r *graphReuse) modeOf() reuseMode {
	if r == nil {
		return reuseOff
	}
	return reuseMode(r.mode.Load())
}

// boundToInput reports whether b shares memory with the value bound to
// one of g's input nodes (r's list of them, rebuilt when g has grown): a
// result fed back (gorgonia.Let of a state), which ReuseResultsInPlace
// must not overwrite, whichever op reads it.
func boundToInput[E ~float32 | ~float64 | ~int](r *graphReuse, g *gorgonia.ExprGraph, b []E) bool {
	r.mu.Lock()
	if all := len(g.AllNodes()); all != r.size {
		r.size, r.inputs = all, g.Inputs()
	}
	inputs := r.inputs
	r.mu.Unlock()
	for _, n := range inputs {
		if v := n.Value(); v != nil && overlapsMemory(b, v) {
			return true
		}
	}
	return false
}

// reuseSlot is an op's last two results' memory, kept for ReuseResults
// (and ReuseResultsInPlace: the last run's, and the other where that one
// was an input).
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
// without reuse a new buffer (newBuffer); in place (reuseOne) the memory
// of the last run's result when it has n elements and shares none with
// the inputs in; else, and with two arrays (reuseTwo), the memory of the
// result two runs back when it has n elements and shares none with the
// inputs in (a value older than the last run, fed back), else a new one,
// kept for the run after next. Reused memory is cleared unless the Kernel
// overwrites every element.
func resultBuffer[E ~float32 | ~float64 | ~int, T Float](o *op, r *graphReuse, n int, in []Tensor[T]) []E {
	overwrite := o.spec.KernelOverwrites
	mode := r.modeOf()
	if mode == reuseOff {
		return newBuffer[E](n, overwrite)
	}
	k := &o.keep
	k.mu.Lock()
	defer k.mu.Unlock()
	if mode == reuseOne {
		if b, ok := k.buf[k.next^1].([]E); ok && len(b) == n && !overlapsAny(b, in) && !boundToInput(r, o.graph, b) {
			if !overwrite {
				clear(b)
			}
			return b
		}
	}
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

// overlapsMemory reports whether b shares memory with v's storage (its
// tensor.Memory: a view's part of its parent's array too, a 0-d view
// included, whose Data is a number, not a slice; nothing for an empty
// tensor, whose Data and Uintptr panic).
func overlapsMemory[E ~float32 | ~float64 | ~int](b []E, v gorgonia.Value) bool {
	size := v.MemSize()
	if len(b) == 0 || size == 0 {
		return false
	}
	b0, v0 := uintptr(unsafe.Pointer(&b[0])), v.Uintptr()
	return b0 < v0+size && v0 < b0+uintptr(len(b))*unsafe.Sizeof(b[0])
}
