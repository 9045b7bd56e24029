// Shared by every nn kernel (internal/cuda/kernels/nn/*.cu): the grid-stride
// loop and the float helpers. NVRTC compiles each .cu with every .cuh of
// this folder available as a header (internal/cuda/kernels/gen), so gops'
// common.cuh, whose LOOP is the same, is not seen here.
//
// Every kernel is a plain grid-stride loop (the whole grid's stride), one
// thread per output element or per output line, with no shared memory and
// no __syncthreads, so that a thread's sums run in the CPU kernel's order:
// where the comment of an entry says "bitwise", it computes what the Go
// kernel computes, rounding for rounding (PTX built with -fmad=false; the
// Go kernels are not fused on amd64). Sizes and indices are long long.
#pragma once

// LOOP runs i over [0, n) with the stride of the whole grid, in 64 bits.
#define LOOP(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)blockDim.x * gridDim.x)

// go_max is Go's builtin max of two floats: NaN if either is, +0 for
// (−0, +0).
template <typename T> __device__ __forceinline__ T go_max(T a, T b) {
	if (a != a) return a;
	if (b != b) return b;
	if (a == b) return signbit(a) ? b : a;
	return a > b ? a : b;
}

// inf is +Inf (NVRTC has no math.h for INFINITY).
__device__ __forceinline__ double inf() { return __longlong_as_double(0x7ff0000000000000LL); }

// nan_ is a quiet NaN with the bits of Go's math.NaN().
__device__ __forceinline__ double nan_() { return __longlong_as_double(0x7ff8000000000001LL); }
