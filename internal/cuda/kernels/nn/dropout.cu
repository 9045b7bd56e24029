// Dropout's mask on the GPU (nn/dropout.go); float (f32) and double (f64).
// The host draws the keep decisions from the same PCG stream as nn's
// dropoutKernel (one byte each); the kernel writes the mask.

#include "common.cuh"

// mask equals nn's dropoutKernel given its draws: keep (1/(1 − p) rounded
// to T, 0 for p = 1) where kept[i], else 0; bitwise.
template <typename T> __device__ void mask(const unsigned char *kept, T *out, T keep, long long n) {
	LOOP(i, n) out[i] = kept[i] ? keep : (T)0;
}

extern "C" __global__ void dropout_mask_f32(const unsigned char *kept, float *out, float keep, long long n) { mask<float>(kept, out, keep, n); }
extern "C" __global__ void dropout_mask_f64(const unsigned char *kept, double *out, double keep, long long n) { mask<double>(kept, out, keep, n); }
