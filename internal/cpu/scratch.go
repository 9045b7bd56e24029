package cpu

import "github.com/gops-dev/gops/internal/par"

// The kernels' scratch memory (par.Scratch): float buffers (channels-last
// copies, grid planes and weights), the grid samplers' taps, and integer
// buffers (gather indices, max pooling's keys and positions).
var (
	scratch32 par.Scratch[float32]
	scratch64 par.Scratch[float64]
	taps32    par.Scratch[gridTap[float32]]
	taps64    par.Scratch[gridTap[float64]]
	ints32    par.Scratch[int32]
	ints64    par.Scratch[int64]
)

// floatScratch is the keeper of T's float buffers.
func floatScratch[T Float]() *par.Scratch[T] {
	var k any = &scratch64
	if _, ok := any(*new(T)).(float32); ok {
		k = &scratch32
	}
	return k.(*par.Scratch[T])
}

// tapScratch is the keeper of T's grid taps.
func tapScratch[T Float]() *par.Scratch[gridTap[T]] {
	var k any = &taps64
	if _, ok := any(*new(T)).(float32); ok {
		k = &taps32
	}
	return k.(*par.Scratch[gridTap[T]])
}

// intScratch is the keeper of K's buffers.
func intScratch[K ~int32 | ~int64]() *par.Scratch[K] {
	var k any = &ints64
	if _, ok := any(K(0)).(int32); ok {
		k = &ints32
	}
	return k.(*par.Scratch[K])
}
