//go:build cgo && linux && amd64

package emu

/*
#cgo CXXFLAGS: -std=c++17 -O2
#include <stdlib.h>
#include <string.h>
#include "emu_api.h"
*/
import "C"

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"unsafe"

	"github.com/gops-dev/gops/internal/cuda/grid"
)

// Ptr is an emulated device address (cu.DevicePtr's role): a Buffer's Ptr
// plus a byte offset; 0 is the null pointer.
type Ptr uintptr

// Buffer is emulated device memory: C memory, which the kernels read and
// write and Go code sees through Slice.
type Buffer struct {
	p    unsafe.Pointer
	size int // the bytes asked for; at least 8 are allocated
}

// Alloc returns size zeroed bytes (at least 8 are allocated, as
// glue's Temp, so that even an empty buffer has a non-null address;
// Bytes and Slice see size). Free gives them back.
func Alloc(size int) *Buffer {
	if size < 0 { // as an empty buffer
		size = 0
	}
	b := &Buffer{C.calloc(C.size_t(max(size, 8)), 1), size}
	live.Lock()
	live.m[uintptr(b.p)] = b
	live.Unlock()
	return b
}

// live are the buffers not yet freed, by address (Find).
var live = struct {
	sync.Mutex
	m map[uintptr]*Buffer
}{m: map[uintptr]*Buffer{}}

// Free gives the buffer's memory back; the buffer is unusable after.
func (b *Buffer) Free() {
	if b.p != nil {
		live.Lock()
		delete(live.m, uintptr(b.p))
		live.Unlock()
		C.free(b.p)
		b.p = nil
	}
}

// Find returns the live buffer that holds address p (its Ptr plus an
// offset of at most its size: one past the end included, as a kernel's
// empty tail) and p's offset in it; false for the null pointer or an
// address in no buffer. The GPU runs of the emulation cases
// (emutest, build tag cuda) map each pointer argument to device memory
// with it.
func Find(p Ptr) (b *Buffer, offset int, ok bool) {
	if p == 0 {
		return nil, 0, false
	}
	live.Lock()
	defer live.Unlock()
	if b, ok := live.m[uintptr(p)]; ok {
		return b, 0, true
	}
	for base, b := range live.m {
		if uintptr(p) >= base && uintptr(p)-base <= uintptr(max(b.size, 8)) {
			return b, int(uintptr(p) - base), true
		}
	}
	return nil, 0, false
}

// Ptr is the buffer's device address.
func (b *Buffer) Ptr() Ptr { return Ptr(b.p) }

// Bytes is the buffer's memory.
func (b *Buffer) Bytes() []byte { return unsafe.Slice((*byte)(b.p), b.size) }

// Slice is the buffer's memory as elements of E (the whole ones).
func Slice[E any](b *Buffer) []E {
	var z E
	return unsafe.Slice((*E)(b.p), b.size/int(unsafe.Sizeof(z)))
}

// Upload copies host into a new buffer (glue.Upload's twin); an empty
// host gives an empty buffer with a valid address.
func Upload[E any](host []E) *Buffer {
	var z E
	b := Alloc(len(host) * int(unsafe.Sizeof(z)))
	copy(Slice[E](b), host)
	return b
}

// Download copies the first n elements of the buffer to the host.
func Download[E any](b *Buffer, n int) []E {
	return append([]E(nil), Slice[E](b)[:n]...)
}

// Kernel is one emulated kernel.
type Kernel struct {
	// Name is its PTX entry name ("roialign_forward_f32").
	Name string
	// Sig has one code per parameter: p pointer, l long long, f float,
	// d double (? another type: no kernel has one, and no argument fits it).
	Sig string
	// Source is its CUDA source, relative to the module root.
	Source string

	idx C.int
}

var kernels = func() map[string]Kernel {
	m := map[string]Kernel{}
	for i := C.int(0); i < C.emu_count(); i++ {
		k := Kernel{Name: C.GoString(C.emu_name(i)), Sig: C.GoString(C.emu_sig(i)), Source: C.GoString(C.emu_source(i)), idx: i}
		m[k.Name] = k
	}
	return m
}()

// Kernels returns every emulated kernel, by PTX entry name.
func Kernels() map[string]Kernel {
	m := make(map[string]Kernel, len(kernels))
	for n, k := range kernels {
		m[n] = k
	}
	return m
}

// Order is the order in which a launch runs its threads.
type Order int

const (
	// Forward runs block 0's threads 0, 1, ..., then block 1's, ...
	Forward Order = iota
	// Backward runs the last thread of the last block first.
	Backward
	// Shuffled runs the threads in a random order (Config.Seed).
	Shuffled
)

// String is the order's name: forward, backward or shuffled.
func (o Order) String() string {
	switch o {
	case Forward:
		return "forward"
	case Backward:
		return "backward"
	}
	return "shuffled"
}

// Config is how a launch runs; the zero Config is the host code's launch,
// threads forwards.
type Config struct {
	// Order of the threads, and the Seed of a Shuffled order.
	Order Order
	Seed  uint64
	// GridMax caps the grid (0: grid.GridMax, the host code's): a
	// small one makes every thread loop over many items.
	GridMax int
	// Threads, when not nil, are the only threads run, as global ids
	// block·grid.Block + thread, in this order (Order is ignored):
	// the edges of a huge launch.
	Threads []int64
}

// Grid is the launch's number of blocks for n work items.
func (c Config) Grid(n int) int {
	if c.GridMax > 0 {
		return grid.GridWith(n, c.GridMax)
	}
	return grid.Grid(n)
}

func (c Config) ids(blocks int) []int64 {
	if c.Threads != nil {
		return c.Threads
	}
	if c.Order == Forward {
		return nil
	}
	ids := make([]int64, blocks*grid.Block)
	for i := range ids {
		ids[i] = int64(i)
	}
	if c.Order == Backward {
		for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
			ids[i], ids[j] = ids[j], ids[i]
		}
	} else {
		r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	}
	return ids
}

// Pack is the launch's argument slots of kernel name: one 8-byte slot per
// argument, laid out and checked against the kernel's parameters as
// Launch does (a Ptr is the emulated address). The GPU runs of the
// emulation cases (emutest, build tag cuda) start from it.
func Pack(name string, args ...any) ([]uint64, error) {
	k, err := lookup(name, 0)
	if err != nil {
		return nil, err
	}
	return pack(k, args)
}

// pack lays the arguments out as glue.Call.Launch does, one 8-byte
// slot each (a float in the low 4 bytes), checked against the kernel's
// parameters: an int, an int64 and a bool (0 or 1) go to a long long, a
// float32 to a float, a float64 to a double, a Ptr to a pointer.
func pack(k Kernel, args []any) ([]uint64, error) {
	if len(args) != len(k.Sig) {
		return nil, fmt.Errorf("emu: %s takes %d arguments, got %d", k.Name, len(k.Sig), len(args))
	}
	slots := make([]uint64, len(args))
	for i, a := range args {
		var kind byte // the parameter type a fits: 'p', 'l', 'f' or 'd'
		switch v := a.(type) {
		case Ptr:
			kind, slots[i] = 'p', uint64(v)
		case int:
			kind, slots[i] = 'l', uint64(int64(v))
		case int64:
			kind, slots[i] = 'l', uint64(v)
		case bool:
			kind = 'l'
			if v {
				slots[i] = 1
			}
		case float32:
			kind, slots[i] = 'f', uint64(math.Float32bits(v))
		case float64:
			kind, slots[i] = 'd', math.Float64bits(v)
		}
		if want := k.Sig[i]; kind == 0 || kind != want {
			return nil, fmt.Errorf("emu: argument %d of %s is a %T, the kernel's is %q", i, k.Name, a, want)
		}
	}
	return slots, nil
}

func lookup(name string, n int) (Kernel, error) {
	k, ok := kernels[name]
	if !ok {
		return k, fmt.Errorf("emu: no kernel %s", name)
	}
	if n < 0 {
		return k, fmt.Errorf("emu: %s: %d work items", name, n)
	}
	return k, nil
}

func run(k Kernel, slots []uint64, blocks int, ids []int64, all bool) {
	var sp *C.uint64_t
	if len(slots) > 0 {
		sp = (*C.uint64_t)(unsafe.Pointer(&slots[0]))
	}
	var ip *C.longlong
	if !all {
		if len(ids) == 0 {
			return
		}
		ip = (*C.longlong)(unsafe.Pointer(&ids[0]))
	}
	C.emu_run_kernel(k.idx, sp, C.longlong(blocks), grid.Block, ip, C.longlong(len(ids)))
}

// Launch runs kernel name over n work items as glue.Call.Launch would
// on the GPU: nothing for n = 0; grid's grid (capped by
// cfg.GridMax), blocks of grid.Block threads, each thread run once, in
// cfg's order.
func Launch(name string, n int, cfg Config, args ...any) error {
	k, err := lookup(name, n)
	if err != nil {
		return err
	}
	slots, err := pack(k, args)
	if err != nil || n == 0 {
		return err
	}
	blocks := cfg.Grid(n)
	ids := cfg.ids(blocks)
	run(k, slots, blocks, ids, ids == nil && cfg.Threads == nil)
	return nil
}

// Region is an output of a launch for CheckExclusive.
type Region struct {
	// B is the output's memory, of elements of Elem bytes (4 for a
	// float, 8 for a double or a long long).
	B    *Buffer
	Elem int
}

// Poison is the byte that fills an output before a launch (emutest.Run)
// and before each thread of CheckExclusive; an element that is not poison
// afterwards was written. 0x7f repeated is a huge finite number in every
// element type the kernels write: 3.4e38 as a float32, 1.4e306 as a
// float64, 2139062143 as an int32, 9.2e18 as an int64. So an element left
// unwritten fails any comparison with a CPU kernel's result, tolerant or
// not (a small pattern such as 0xa5, −2.9e-16 as a float32, passes a
// tolerance check against a small value).
const Poison = 0x7f

// Fill sets every byte of b to Poison.
func (b *Buffer) Fill() {
	if b.size > 0 {
		C.memset(b.p, Poison, C.size_t(b.size))
	}
}

// CheckExclusive runs the launch (as Launch, in cfg's order) one thread at
// a time and checks that no element of outs is written by two threads: a
// write-write race on the GPU. Before each thread the outputs are filled
// with Poison; an element differing from it afterwards was written (a
// write of the pattern itself goes unseen). The outputs hold garbage
// afterwards. It returns the number of elements written (by exactly one
// thread each) and the first conflict as an error. The outputs must not be
// inputs too. The threads run one at a time, so this finds two threads
// writing one element, not a thread reading what another writes.
func CheckExclusive(name string, n int, cfg Config, outs []Region, args ...any) (int, error) {
	k, err := lookup(name, n)
	if err != nil {
		return 0, err
	}
	slots, err := pack(k, args)
	if err != nil || n == 0 {
		return 0, err
	}
	blocks := cfg.Grid(n)
	ids := cfg.ids(blocks)
	if ids == nil {
		ids = make([]int64, blocks*grid.Block)
		for i := range ids {
			ids[i] = int64(i)
		}
	}
	owner := make([][]int64, len(outs))
	for r, o := range outs {
		owner[r] = make([]int64, len(o.B.Bytes())/o.Elem)
		for e := range owner[r] {
			owner[r][e] = -1
		}
	}
	written := 0
	for _, id := range ids {
		for _, o := range outs {
			o.B.Fill()
		}
		run(k, slots, blocks, []int64{id}, false)
		for r, o := range outs {
			b := o.B.Bytes()
			for e := range owner[r] {
				el := b[e*o.Elem : (e+1)*o.Elem]
				touched := false
				for _, x := range el {
					if x != Poison {
						touched = true
						break
					}
				}
				if !touched {
					continue
				}
				if prev := owner[r][e]; prev >= 0 {
					return written, fmt.Errorf("emu: %s: element %d of output %d written by threads %d and %d", name, e, r, prev, id)
				}
				owner[r][e] = id
				written++
			}
		}
	}
	return written, nil
}
