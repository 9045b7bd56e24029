// Shared by every gops kernel: the grid-stride loop over n work items.
// Included by each .cu (NVRTC compiles each file with every .cuh of this
// folder available as a header). Sizes and indices are long long, as in
// nn's kernels: every integer argument and every index table the host
// uploads.
#pragma once

// LOOP runs i over [0, n) with the stride of the whole grid, in 64 bits.
#define LOOP(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long long)blockDim.x * gridDim.x)

// zeroedPlane zeroes dst's plane i of hw elements and returns it: the start
// of a transpose that computes one input plane by one thread.
template <typename T> __device__ __forceinline__ T *zeroedPlane(T *dst, long long i, long long hw) {
	T *d = dst + i * hw;
	for (long long p = 0; p < hw; p++) d[p] = 0;
	return d;
}
