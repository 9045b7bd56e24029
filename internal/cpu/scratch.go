package cpu

import "github.com/gops-dev/gops/internal/par"

// The kernels' scratch memory (par.Scratch), a keeper for each element
// type: float buffers (channels-last copies, grid planes and weights), the
// grid samplers' taps, and integer buffers (gather indices, max pooling's
// keys and positions).
var (
	floatKeep par.Pair[float32, float64]
	tapKeep   par.Pair[gridTap[float32], gridTap[float64]]
	intKeep   par.Pair[int32, int64]
)

// floatScratch is the keeper of T's float buffers.
func floatScratch[T Float]() *par.Scratch[T] { return par.Of[T](&floatKeep) }

// tapScratch is the keeper of T's grid taps.
func tapScratch[T Float]() *par.Scratch[gridTap[T]] { return par.Of[gridTap[T]](&tapKeep) }

// intScratch is the keeper of K's buffers.
func intScratch[K ~int32 | ~int64]() *par.Scratch[K] { return par.Of[K](&intKeep) }
