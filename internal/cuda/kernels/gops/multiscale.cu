// MultiScaleRoIAlign on the GPU: the row moves of its CUDA twin
// (multiscale_cuda.go), float (f32) and double (f64). A level's boxes are
// pooled by RoIAlign's kernels (roialign.cu, roialignbox.cu) into a
// compact [len(idx), row] buffer, as the CPU's pyramidForward does, and
// their rows moved to the boxes' places in the [K, row] result; the
// transpose gathers a level's rows of the incoming gradient the same way.
// Plain copies: each thread moves one element, so the results are the
// CPU's exactly.

#include "common.cuh"

// scatter: dst[idx[r], j] = src[r, j]; gather: dst[r, j] = src[idx[r], j].
template <typename T>
__device__ void moveRows(const T *src, const long long *idx, T *dst, long long nrows, long long row, long long scatter) {
	LOOP(i, nrows * row) {
		long long r = i / row, j = i % row;
		long long at = (long long)idx[r] * row + j;
		if (scatter)
			dst[at] = src[i];
		else
			dst[i] = src[at];
	}
}

// dst[i] = 0 for the rows no level writes (boxes of NaN level, or a
// level op's other boxes).
template <typename T>
__device__ void zeroFill(T *dst, long long n) {
	LOOP(i, n) dst[i] = 0;
}

extern "C" __global__ void multiscale_rows_f32(const float *src, const long long *idx, float *dst, long long nrows, long long row, long long scatter) { moveRows<float>(src, idx, dst, nrows, row, scatter); }
extern "C" __global__ void multiscale_rows_f64(const double *src, const long long *idx, double *dst, long long nrows, long long row, long long scatter) { moveRows<double>(src, idx, dst, nrows, row, scatter); }
extern "C" __global__ void multiscale_zero_f32(float *dst, long long n) { zeroFill<float>(dst, n); }
extern "C" __global__ void multiscale_zero_f64(double *dst, long long n) { zeroFill<double>(dst, n); }
