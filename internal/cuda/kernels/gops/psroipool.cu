// PSRoIPool on the GPU: the CUDA twins of PSRoIPoolForward and
// PSRoIPoolTranspose (internal/cpu/psroipool.go), float (f32) and double
// (f64). The host validates the boxes and computes every bin with the CPU's
// PoolBins, packed as 4 long longs per bin (hs, he, ws, we); the batch index is
// read from the boxes. No atomics: each transpose thread owns one (image,
// channel) plane and visits the boxes in order.

#include "common.cuh"

// PSRoIPool forward: the mean of input channel co·NB + bin over the bin.
template <typename T>
__device__ void psRoIPoolForward(const T *x, const T *boxes, const long long *bins, T *out, long long K, long long C, long long H, long long W, long long NB) {
	long long cOut = C / NB;
	LOOP(i, K * cOut * NB) {
		long long bin = i % NB, co = i / NB % cOut, k = i / (NB * cOut);
		const long long *b = bins + 4 * (k * NB + bin);
		if (b[1] <= b[0] || b[3] <= b[2]) {
			out[i] = 0;
			continue;
		}
		const T *xp = x + ((long long)boxes[5 * k] * C + co * NB + bin) * H * W;
		// binSumLanes' order (psroipool.go): lane q of V (8 float, 4
		// double) adds the columns j = q, q + V, ... row by row from +0,
		// then the lanes are added as a tree.
		const int V = 32 / sizeof(T);
		T l[8] = {};
#pragma unroll
		for (int q = 0; q < V; q++) {
			T a = 0;
			for (long long h = b[0]; h < b[1]; h++)
				for (long long w = b[2] + q; w < b[3]; w += V) a += xp[h * W + w];
			l[q] = a;
		}
		T s = V == 8 ? ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])) : (l[0] + l[2]) + (l[1] + l[3]);
		out[i] = s / (T)((b[1] - b[0]) * (b[3] - b[2]));
	}
}

// PSRoIPool transpose: the dst[n, ci] plane by one thread, boxes in order.
template <typename T>
__device__ void psRoIPoolTranspose(const T *g, const T *boxes, const long long *bins, T *dst, long long K, long long N, long long C, long long H, long long W, long long NB) {
	long long cOut = C / NB;
	LOOP(i, N * C) {
		long long n = i / C, ci = i % C, co = ci / NB, bin = ci % NB;
		T *d = zeroedPlane<T>(dst, i, H * W);
		for (long long k = 0; k < K; k++) {
			if ((long long)boxes[5 * k] != n) continue;
			const long long *b = bins + 4 * (k * NB + bin);
			if (b[1] <= b[0] || b[3] <= b[2]) continue;
			T v = g[((long long)k * cOut + co) * NB + bin] / (T)((b[1] - b[0]) * (b[3] - b[2]));
			for (long long h = b[0]; h < b[1]; h++)
				for (long long w = b[2]; w < b[3]; w++) d[h * W + w] += v;
		}
	}
}

#define KERNELS(t, T)                                                                                                        \
	extern "C" __global__ void psroipool_forward_##t(const T *x, const T *boxes, const long long *bins, T *out, long long K, long long C, long long H, \
	                                                 long long W, long long NB) {                                                        \
		psRoIPoolForward<T>(x, boxes, bins, out, K, C, H, W, NB);                                                         \
	}                                                                                                                        \
	extern "C" __global__ void psroipool_transpose_##t(const T *g, const T *boxes, const long long *bins, T *dst, long long K, long long N,     \
	                                                   long long C, long long H, long long W, long long NB) {                                        \
		psRoIPoolTranspose<T>(g, boxes, bins, dst, K, N, C, H, W, NB);                                                    \
	}

KERNELS(f32, float)
KERNELS(f64, double)
