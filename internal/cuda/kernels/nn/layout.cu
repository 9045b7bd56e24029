// nn's copying layout ops on the GPU (nn/layout.go, nn/empty.go), float
// (f32) and double (f64). All are copies or constant fills: bitwise equal
// to the Go kernels.

#include "common.cuh"

// concat_copy equals nn's concatKernel for one input: src, outer blocks of
// n elements, goes to dst's blocks of row elements at offset off.
template <typename T> __device__ void concat_copy(const T *src, T *dst, long long outer, long long n, long long row, long long off) {
	LOOP(i, outer * n) {
		long long b = i / n, j = i - b * n;
		dst[b * row + off + j] = src[i];
	}
}

// narrow equals narrowKernel (fwd): dst [outer, n] from src [outer, full]
// at start within each block.
template <typename T> __device__ void narrow(const T *src, T *dst, long long outer, long long n, long long full, long long start) {
	LOOP(i, outer * n) {
		long long b = i / n, j = i - b * n;
		dst[i] = src[b * full + start + j];
	}
}

// narrow_embed equals narrowKernel (NarrowEmbed): dst [outer, full] is src
// [outer, n] at start within each block, zeros elsewhere.
template <typename T> __device__ void narrow_embed(const T *src, T *dst, long long outer, long long n, long long full, long long start) {
	LOOP(i, outer * full) {
		long long b = i / full, j = i - b * full - start;
		dst[i] = (j >= 0 && j < n) ? src[b * n + j] : (T)0;
	}
}

// fill equals fillKernel (the *Empty ops) and the zeroing of a result
// that ad gives a Kernel: every element v.
template <typename T> __device__ void fill(T *dst, T v, long long n) {
	LOOP(i, n) dst[i] = v;
}

extern "C" __global__ void layout_concat_copy_f32(const float *src, float *dst, long long outer, long long n, long long row, long long off) { concat_copy<float>(src, dst, outer, n, row, off); }
extern "C" __global__ void layout_concat_copy_f64(const double *src, double *dst, long long outer, long long n, long long row, long long off) { concat_copy<double>(src, dst, outer, n, row, off); }
extern "C" __global__ void layout_narrow_f32(const float *src, float *dst, long long outer, long long n, long long full, long long start) { narrow<float>(src, dst, outer, n, full, start); }
extern "C" __global__ void layout_narrow_f64(const double *src, double *dst, long long outer, long long n, long long full, long long start) { narrow<double>(src, dst, outer, n, full, start); }
extern "C" __global__ void layout_narrow_embed_f32(const float *src, float *dst, long long outer, long long n, long long full, long long start) { narrow_embed<float>(src, dst, outer, n, full, start); }
extern "C" __global__ void layout_narrow_embed_f64(const double *src, double *dst, long long outer, long long n, long long full, long long start) { narrow_embed<double>(src, dst, outer, n, full, start); }
extern "C" __global__ void layout_fill_f32(float *dst, float v, long long n) { fill<float>(dst, v, n); }
extern "C" __global__ void layout_fill_f64(double *dst, double v, long long n) { fill<double>(dst, v, n); }
