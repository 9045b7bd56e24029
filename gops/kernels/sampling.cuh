// RoIAlign's sampling geometry on the GPU, shared by roialign.cu and
// psroialign.cu: the CUDA twin of internal/cpu/sampling.go (roiAlignTap and
// the sample points of a box's grid). The host packs each box's grid with
// the CPU code as 8 values: batch index, startY, startX, binH, binW, gh, gw,
// count.
#pragma once

#include "common.cuh"

// FWD and ADJ declare the float and double entry points of a forward
// kernel (x, packed boxes → out) and of its transpose (g, packed boxes →
// dst).
#define FWD(name, fn, T)                                                                                            \
	extern "C" __global__ void name(const T *x, const T *bp, T *out, int K, int C, int H, int W, int PH, int PW) { \
		fn<T>(x, bp, out, K, C, H, W, PH, PW);                                                                    \
	}
#define ADJ(name, fn, T)                                                                                                   \
	extern "C" __global__ void name(const T *g, const T *bp, T *dst, int K, int N, int C, int H, int W, int PH, int PW) { \
		fn<T>(g, bp, dst, K, N, C, H, W, PH, PW);                                                                        \
	}

template <typename T> struct Tap {
	int pos[4];
	T w[4];
	bool outside;
};

// roiAlignTap: torchvision's roi_align bilinear rule (roiAlignTap of
// internal/cpu/sampling.go).
template <typename T> __device__ Tap<T> roiAlignTap(T y, T x, int h, int w) {
	Tap<T> t;
	for (int j = 0; j < 4; j++) {
		t.pos[j] = 0;
		t.w[j] = 0;
	}
	t.outside = true;
	if (!(y >= -1 && y <= (T)h && x >= -1 && x <= (T)w)) return t;
	t.outside = false;
	if (y < 0) y = 0;
	if (x < 0) x = 0;
	int yl = (int)y, xl = (int)x, yh, xh;
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
template <typename T> __device__ Tap<T> samplePoint(const T *b, int ph, int pw, int iy, int ix, int h, int w) {
	T y = b[1] + (T)ph * b[3] + (T)((float)iy + 0.5f) * b[3] / (T)(int)b[5];
	T x = b[2] + (T)pw * b[4] + (T)((float)ix + 0.5f) * b[4] / (T)(int)b[6];
	return roiAlignTap<T>(y, x, h, w);
}
