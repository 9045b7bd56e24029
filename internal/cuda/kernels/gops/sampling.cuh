// RoIAlign's sampling geometry on the GPU, shared by roialign.cu and
// psroialign.cu: the CUDA twin of internal/cpu/sampling.go (roiAlignTap and
// the sample points of a box's grid). The host packs each box's grid with
// the CPU code as 8 values: batch index, startY, startX, binH, binW, gh, gw,
// count.
#pragma once

#include "common.cuh"

#define CHUNK 16384      // tapsPerChunk of internal/cpu/sampling.go
#define MERGE_WINDOW 16 // mergeWindow of internal/cpu/sampling.go

// FWD and ADJ declare the float and double entry points of a forward
// kernel (x, packed boxes → out) and of its transpose (g, packed boxes →
// dst).
#define FWD(name, fn, T)                                                                                            \
	extern "C" __global__ void name(const T *x, const T *bp, T *out, long long K, long long C, long long H, long long W, long long PH, long long PW) { \
		fn<T>(x, bp, out, K, C, H, W, PH, PW);                                                                    \
	}
#define ADJ(name, fn, T)                                                                                                   \
	extern "C" __global__ void name(const T *g, const T *bp, T *dst, long long K, long long N, long long C, long long H, long long W, long long PH, long long PW) { \
		fn<T>(g, bp, dst, K, N, C, H, W, PH, PW);                                                                        \
	}

template <typename T> struct Tap {
	long long pos[4];
	T w[4];
	bool outside;
};

// roiAlignTap: torchvision's roi_align bilinear rule (roiAlignTap of
// internal/cpu/sampling.go).
template <typename T> __device__ Tap<T> roiAlignTap(T y, T x, long long h, long long w) {
	Tap<T> t;
	for (long long j = 0; j < 4; j++) {
		t.pos[j] = 0;
		t.w[j] = 0;
	}
	t.outside = true;
	if (!(y >= -1 && y <= (T)h && x >= -1 && x <= (T)w)) return t;
	t.outside = false;
	if (y < 0) y = 0;
	if (x < 0) x = 0;
	long long yl = (long long)y, xl = (long long)x, yh, xh;
	if (yl >= h - 1) {
		yl = yh = h - 1;
		y = (T)(h - 1);
	} else {
		yh = yl + 1;
	}
	if (xl >= w - 1) {
		xl = xh = w - 1;
		x = (T)(w - 1);
	} else {
		xh = xl + 1;
	}
	T ly = y - (T)yl, lx = x - (T)xl;
	T hy = 1 - ly, hx = 1 - lx;
	t.pos[0] = yl * w + xl;
	t.pos[1] = yl * w + xh;
	t.pos[2] = yh * w + xl;
	t.pos[3] = yh * w + xh;
	t.w[0] = hy * hx;
	t.w[1] = hy * lx;
	t.w[2] = ly * hx;
	t.w[3] = ly * lx;
	return t;
}

// samplePoint is point (iy, ix) of bin (ph, pw) of a packed box.
template <typename T> __device__ Tap<T> samplePoint(const T *b, long long ph, long long pw, long long iy, long long ix, long long h, long long w) {
	T y = b[1] + (T)ph * b[3] + (T)((float)iy + 0.5f) * b[3] / (T)(long long)b[5];
	T x = b[2] + (T)pw * b[4] + (T)((float)ix + 0.5f) * b[4] / (T)(long long)b[6];
	return roiAlignTap<T>(y, x, h, w);
}

// PixelSum is mergePixels of internal/cpu/sampling.go, streamed, and the sum
// that follows it: the taps' pixels (pos, weight) come in order; a pixel
// among the last MERGE_WINDOW distinct entries takes a new non-zero weight
// into its own (a zero weight is never merged), older entries are final and
// are emitted in order of first appearance: acc += w·x[pos] (forward, d
// null) or d[pos] += w·v (transpose). flush emits the rest, as the CPU ends
// a bin's (or a chunk's) merged list. The CPU kernels add the merged rows
// with axpy; so the sums round as theirs.
template <typename T> struct PixelSum {
	const T *x;
	T *d;
	T v, acc;
	long long pos[MERGE_WINDOW];
	T w[MERGE_WINDOW];
	long long head, n;

	__device__ void init(const T *x_, T *d_, T v_) {
		x = x_;
		d = d_;
		v = v_;
		acc = 0;
		head = n = 0;
	}
	__device__ void emit(long long p, T wt) {
		if (d) {
			d[p] += wt * v;
		} else {
			acc += wt * x[p];
		}
	}
	__device__ void put(long long p, T wt) {
		if (wt != 0)
			for (long long k = n - 1; k >= 0; k--) {
				long long s = (head + k) % MERGE_WINDOW;
				if (pos[s] == p && w[s] != 0) {
					w[s] += wt;
					return;
				}
			}
		if (n == MERGE_WINDOW) {
			emit(pos[head], w[head]);
			head = (head + 1) % MERGE_WINDOW;
			n--;
		}
		long long s = (head + n) % MERGE_WINDOW;
		pos[s] = p;
		w[s] = wt;
		n++;
	}
	__device__ void flush() {
		for (long long k = 0; k < n; k++) {
			long long s = (head + k) % MERGE_WINDOW;
			emit(pos[s], w[s]);
		}
		head = n = 0;
	}
};
