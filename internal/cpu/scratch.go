package cpu

import "github.com/gops-dev/gops/internal/par"

// The kernels' scratch memory (par.Scratch), a keeper for each element
// type: float buffers (channels-last copies, grid planes and weights), the
// grid samplers' taps, integer buffers (gather indices, max pooling's
// keys and positions), and Conv's columns buffers (a keeper of their own,
// as before they moved here: a fresh buffer of megabytes costs a page
// fault per 4 KiB on first touch, more than the Im2col that fills it).
var (
	floatKeep par.Pair[float32, float64]
	colsKeep  par.Pair[float32, float64]
	tapKeep   par.Pair[gridTap[float32], gridTap[float64]]
	intKeep   par.Pair[int32, int64]
	binKeep   par.Scratch[PoolBin]
)

// floatScratch is the keeper of T's float buffers.
func floatScratch[T Float]() *par.Scratch[T] { return par.Of[T](&floatKeep) }

// tapScratch is the keeper of T's grid taps.
func tapScratch[T Float]() *par.Scratch[gridTap[T]] { return par.Of[gridTap[T]](&tapKeep) }

// intScratch is the keeper of K's buffers.
func intScratch[K ~int32 | ~int64]() *par.Scratch[K] { return par.Of[K](&intKeep) }

// binScratch is the keeper of PSRoIPool's bins (400 KB a call at 256
// boxes of 7×7 bins: allocated per call, their collections took a
// worker's share of the two cores' time).
func binScratch() *par.Scratch[PoolBin] { return &binKeep }

// colsScratch is the keeper of T's convolution columns.
func colsScratch[T Float]() *par.Scratch[T] { return par.Of[T](&colsKeep) }
