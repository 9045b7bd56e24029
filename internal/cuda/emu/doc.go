// Package emu runs gops' and nn's CUDA kernels (internal/cuda/kernels/gops/*.cu,
// internal/cuda/kernels/nn/*.cu) on the CPU, unmodified, to test them where there is no
// GPU: the kernels' arithmetic, index math, bounds and independence of the
// order in which the threads run.
//
// emu.h compiles each .cu as C++ with the system's g++ (cgo): __global__
// and __device__ functions become plain ones, blockIdx, threadIdx,
// blockDim and gridDim variables the launcher sets, atomics sequential
// read-modify-writes, CUDA's intrinsics their exact C++ equivalents. A
// launch runs the kernel once for each (block, thread) pair of the grid
// that the host code's launch would have (internal/cuda/grid), one pair
// after another, in an order the caller picks: forwards, backwards or
// shuffled. The kernels are grid-stride loops without shared memory or
// barriers, so any order is a legal schedule of the GPU's threads: a result
// that depends on the order is a race.
//
// Launch takes a kernel's PTX entry name and the host code's argument list
// (Ptr for device pointers, into memory from Alloc or Upload), as
// internal/cuda/glue's Call.Launch does. The package needs cgo and a C++17
// compiler, on linux/amd64 only; elsewhere it is empty. The tests compare
// the emulated kernels bitwise with Go kernels, and only on amd64 does the
// Go compiler never fuse a*b+c into one rounding: on arm64 (also ppc64,
// s390x, riscv64) it emits fused multiply-adds, so the Go side would differ
// from the unfused C++ (and from the PTX, built with -fmad=false) in the
// last place. gen writes the k_*.cc tables from the committed PTX (go
// generate).
//
// What emulation does not prove: the launch through Gorgonia's CUDA VM,
// device memory handling, and the GPU's own math library (exp, log, erf
// come from the C library here) and timing.
package emu

//go:generate go run ./gen
