// The copying layout ops on the GPU (gops/layout.go, internal/cpu/layout.go):
// Reshape's copy and SwapAxes01, float (f32) and double (f64).

#include "common.cuh"

// swap01: src read as [a, b, inner] is written as [b, a, inner].
template <typename T> __device__ void swap01(const T *src, T *dst, long long a, long long b, long long inner) {
	LOOP(o, a * b * inner) {
		long long t = o % inner, i = o / inner % a, j = o / inner / a;
		dst[o] = src[((long long)i * b + j) * inner + t];
	}
}

// swap01_bias: swap01 plus bias[i] (bias has a elements).
template <typename T> __device__ void swap01_bias(const T *src, const T *bias, T *dst, long long a, long long b, long long inner) {
	LOOP(o, a * b * inner) {
		long long t = o % inner, i = o / inner % a, j = o / inner / a;
		dst[o] = src[((long long)i * b + j) * inner + t] + bias[i];
	}
}

template <typename T> __device__ void copy(const T *src, T *dst, long long n) {
	LOOP(i, n) dst[i] = src[i];
}

extern "C" __global__ void layout_swap01_f32(const float *src, float *dst, long long a, long long b, long long inner) { swap01<float>(src, dst, a, b, inner); }
extern "C" __global__ void layout_swap01_f64(const double *src, double *dst, long long a, long long b, long long inner) { swap01<double>(src, dst, a, b, inner); }
extern "C" __global__ void layout_swap01_bias_f32(const float *src, const float *bias, float *dst, long long a, long long b, long long inner) { swap01_bias<float>(src, bias, dst, a, b, inner); }
extern "C" __global__ void layout_swap01_bias_f64(const double *src, const double *bias, double *dst, long long a, long long b, long long inner) { swap01_bias<double>(src, bias, dst, a, b, inner); }
extern "C" __global__ void layout_copy_f32(const float *src, float *dst, long long n) { copy<float>(src, dst, n); }
extern "C" __global__ void layout_copy_f64(const double *src, double *dst, long long n) { copy<double>(src, dst, n); }
