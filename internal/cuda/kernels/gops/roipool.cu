// RoIPool on the GPU: the CUDA twins of RoIPoolArgmax, RoIGather and
// RoIScatterAdd (internal/cpu/roipool.go), float (f32) and double (f64).
//
// The host validates the boxes and computes every bin with the CPU's
// PoolBins, packed as 4 long longs per bin (hs, he, ws, we); the batch index is read
// from the boxes. Argmax indices are 64-bit (Go's int). No atomics except
// atomicMin on an error slot (the smallest bad position, as the CPU reports):
// each scatter thread owns one (image, channel) plane and visits the boxes in
// order, so sums are deterministic.

#include "common.cuh"

// orderKey: an integer that orders as roi_pool compares (orderKey32/64).
__device__ long long orderKey(float v) {
	int b = __float_as_int(v);
	int k = b ^ (b >> 31 & 0x7fffffff);
	if (v == 0) k = 0;
	if (v != v) k = 0x7fffffff;
	return k;
}
__device__ long long orderKey(double v) {
	long long b = __double_as_longlong(v);
	long long k = b ^ (b >> 63 & 0x7fffffffffffffffLL);
	if (v == 0) k = 0;
	if (v != v) k = 0x7fffffffffffffffLL;
	return k;
}

// idx[k, c, bin]: flat index into x of the first maximum of the bin, -1 for
// an empty bin.
template <typename T>
__device__ void roiPoolArgmax(const T *x, const T *boxes, const long long *bins, long long *idx, long long K, long long C, long long H, long long W, long long NB) {
	LOOP(i, K * C * NB) {
		long long bin = i % NB, c = i / NB % C, k = i / (NB * C);
		const long long *b = bins + 4 * (k * NB + bin);
		if (b[1] <= b[0] || b[3] <= b[2]) {
			idx[i] = -1;
			continue;
		}
		long long base = ((long long)boxes[5 * k] * C + c) * H * W;
		const T *xp = x + base;
		long long best = 0;
		long long at = -1;
		for (long long h = b[0]; h < b[1]; h++)
			for (long long w = b[2]; w < b[3]; w++) {
				long long key = orderKey(xp[h * W + w]);
				if (at < 0 || key > best) {
					best = key;
					at = h * W + w;
				}
			}
		idx[i] = base + at;
	}
}

// out[i] = x[idx[i]], 0 where idx[i] is -1; a bad index sets *bad.
template <typename T> __device__ void roiGather(const T *x, const long long *idx, T *out, long long n, long long len, long long *bad) {
	LOOP(i, n) {
		long long j = idx[i];
		if (j >= 0 && j < len) {
			out[i] = x[j];
		} else {
			out[i] = 0;
			if (j != -1) atomicMin(bad, i);
		}
	}
}

// dst[n, c] plane by one thread: rows (k, c) of image n in box order.
template <typename T>
__device__ void roiScatterAdd(const T *g, const long long *idx, T *dst, long long K, long long N, long long C, long long H, long long W, long long NB, long long *bad) {
	long long plane = (long long)H * W, len = (long long)N * C * plane;
	LOOP(i, N * C) {
		long long n = i / C, c = i % C;
		T *d = zeroedPlane<T>(dst, i, plane);
		for (long long k = 0; k < K; k++) {
			long long r = k * C + c;
			const long long *row = idx + (long long)r * NB;
			long long base = -1;
			long long first = -1;
			for (long long b = 0; b < NB; b++)
				if (row[b] >= 0) {
					base = row[b] - row[b] % plane;
					first = b;
					break;
				}
			if (first < 0) { // no index >= 0: the first entry other than -1 is bad
				for (long long b = 0; b < NB; b++)
					if (row[b] != -1) {
						atomicMin(bad, r * NB + b);
						break;
					}
				continue;
			}
			if (base >= len || base / plane % C != c) {
				atomicMin(bad, r * NB + first);
				continue;
			}
			if (base / plane / C != n) continue; // another image's thread
			for (long long b = 0; b < NB; b++) {
				long long j = row[b];
				if (j == -1) continue;
				if (j < base || j >= base + plane) {
					atomicMin(bad, r * NB + b);
					break;
				}
				dst[j] += g[(long long)r * NB + b];
			}
		}
	}
}

#define KERNELS(t, T)                                                                                                        \
	extern "C" __global__ void roipool_argmax_##t(const T *x, const T *boxes, const long long *bins, long long *idx, long long K, long long C, \
	                                              long long H, long long W, long long NB) {                                                    \
		roiPoolArgmax<T>(x, boxes, bins, idx, K, C, H, W, NB);                                                            \
	}                                                                                                                        \
	extern "C" __global__ void roipool_gather_##t(const T *x, const long long *idx, T *out, long long n, long long len, long long *bad) { \
		roiGather<T>(x, idx, out, n, len, bad);                                                                           \
	}                                                                                                                        \
	extern "C" __global__ void roipool_scatteradd_##t(const T *g, const long long *idx, T *dst, long long K, long long N, long long C, long long H,  \
	                                                  long long W, long long NB, long long *bad) {                                             \
		roiScatterAdd<T>(g, idx, dst, K, N, C, H, W, NB, bad);                                                            \
	}

KERNELS(f32, float)
KERNELS(f64, double)
