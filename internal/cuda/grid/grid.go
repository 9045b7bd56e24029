// Package grid is the launch geometry of gops' and nn's CUDA kernels,
// shared by the launch code (internal/cuda/glue, cuda build) and the CPU
// emulator of the kernels (internal/cuda/emu): blocks of Block threads, at
// most GridMax blocks, each kernel a grid-stride loop over its n work
// items, its index a long long. It imports no CUDA package, so it builds
// everywhere.
package grid

const (
	// Block is the number of threads of every block (blockDim.x).
	Block = 256
	// GridMax is the most blocks a launch has (gridDim.x); beyond
	// Block·GridMax work items each thread loops.
	GridMax = 1 << 16
)

// Grid is the number of blocks of a launch over n work items:
// ⌈n/Block⌉, at most GridMax (0 for n = 0, which launches nothing).
func Grid(n int) int { return GridWith(n, GridMax) }

// GridWith is Grid with gridMax blocks at most (the emulator's tests use
// small ones to make every thread loop).
func GridWith(n, gridMax int) int {
	if n <= 0 {
		return 0
	}
	return min((n-1)/Block+1, gridMax) // (n-1)/Block+1: no overflow near MaxInt
}
