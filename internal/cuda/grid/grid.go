// Package grid is the launch geometry of gops' and nn's CUDA kernels,
// shared by the launch code (internal/cuda/glue, cuda build) and the CPU
// emulator of the kernels (internal/cuda/emu): blocks of Block threads, at
// most GridMax blocks, each kernel a grid-stride loop over its n work
// items. It imports no CUDA package, so it builds everywhere.
package grid

import "math"

const (
	// Block is the number of threads of every block (blockDim.x).
	Block = 256
	// GridMax is the most blocks a launch has (gridDim.x); beyond
	// Block·GridMax work items each thread loops.
	GridMax = 1 << 16
	// MaxIntItems is the most work items a kernel indexing with a C int
	// may be given: its grid-stride loop steps an int index by up to
	// Block·GridMax, which past MaxInt32 − Block·GridMax overflows.
	MaxIntItems = math.MaxInt32 - Block*GridMax
)

// Grid is the number of blocks of a launch over n work items:
// ⌈n/Block⌉, at most GridMax (0 for n = 0, which launches nothing).
func Grid(n int) int { return GridWith(n, GridMax) }

// GridWith is Grid with gridMax blocks at most (the emulator's tests use
// small ones to make every thread loop).
func GridWith(n, gridMax int) int { return min((n+Block-1)/Block, gridMax) }
