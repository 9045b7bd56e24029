// Interpolate on the GPU (nn/interpolate.go, internal/cpu/interp.go):
// nearest and bilinear, and the transpose; float (f32) and double (f64).
//
// Planes of H×W go to HO×WO. The axes are cpu.InterpAxis' tables: rows
// holds I0, I1 (HO each, as long long), then the inverse table Lo, Hi (H
// each: the outputs oh in [Lo[r], Hi[r]) are the only ones reading input
// row r); rl holds L (HO doubles). cols, cl likewise with WO and W.

#include "common.cuh"

// interp equals cpu.Interp: one thread per output; nearest copies x[I0,
// I0], bilinear computes (1−ly)·((1−lx)·x00 + lx·x01) + ly·((1−lx)·x10 +
// lx·x11) in T with the weights rounded to T; bitwise.
template <typename T> __device__ void interp(const T *x, T *out, long long planes, long long H, long long W, long long HO, long long WO, const long long *rows, const double *rl, const long long *cols, const double *cl, long long nearest) {
	LOOP(e, planes * HO * WO) {
		long long ow = e % WO, oh = e / WO % HO, p = e / (WO * HO);
		const T *r0 = x + p * H * W + rows[oh] * W, *r1 = x + p * H * W + rows[HO + oh] * W;
		long long c0 = cols[ow], c1 = cols[WO + ow];
		if (nearest) {
			out[e] = r0[c0];
			continue;
		}
		T ly = (T)rl[oh], lx = (T)cl[ow];
		T top = ((T)1 - lx) * r0[c0] + lx * r0[c1];
		T bot = ((T)1 - lx) * r1[c0] + lx * r1[c1];
		out[e] = ((T)1 - ly) * top + ly * bot;
	}
}

// interp_transpose equals cpu.InterpT into a zeroed dx: one thread per
// input element, adding from 0, for each output in increasing order, its
// shares in the CPU's corner order (r0c0, r0c1, r1c0, r1c1) that land on
// the element; bitwise.
template <typename T> __device__ void interp_transpose(const T *g, T *dx, long long planes, long long H, long long W, long long HO, long long WO, const long long *rows, const double *rl, const long long *cols, const double *cl, long long nearest) {
	const long long *rlo = rows + 2 * HO, *rhi = rows + 2 * HO + H, *clo = cols + 2 * WO, *chi = cols + 2 * WO + W;
	LOOP(e, planes * H * W) {
		long long c = e % W, r = e / W % H, p = e / (W * H);
		const T *gp = g + p * HO * WO;
		T acc = 0;
		for (long long oh = rlo[r]; oh < rhi[r]; oh++) {
			long long y0 = rows[oh], y1 = rows[HO + oh];
			if (y0 != r && y1 != r) continue;
			for (long long ow = clo[c]; ow < chi[c]; ow++) {
				long long x0 = cols[ow], x1 = cols[WO + ow];
				T v = gp[oh * WO + ow];
				if (nearest) {
					if (y0 == r && x0 == c) acc += v;
					continue;
				}
				T ly = (T)rl[oh], lx = (T)cl[ow];
				T top = ((T)1 - ly) * v, bot = ly * v;
				if (y0 == r && x0 == c) acc += ((T)1 - lx) * top;
				if (y0 == r && x1 == c) acc += lx * top;
				if (y1 == r && x0 == c) acc += ((T)1 - lx) * bot;
				if (y1 == r && x1 == c) acc += lx * bot;
			}
		}
		dx[e] = acc;
	}
}

#define INTERP_ARGS long long planes, long long H, long long W, long long HO, long long WO, const long long *rows, const double *rl, const long long *cols, const double *cl, long long nearest
#define INTERP_PASS planes, H, W, HO, WO, rows, rl, cols, cl, nearest

extern "C" __global__ void interp_forward_f32(const float *x, float *out, INTERP_ARGS) { interp<float>(x, out, INTERP_PASS); }
extern "C" __global__ void interp_forward_f64(const double *x, double *out, INTERP_ARGS) { interp<double>(x, out, INTERP_PASS); }
extern "C" __global__ void interp_transpose_f32(const float *g, float *dx, INTERP_ARGS) { interp_transpose<float>(g, dx, INTERP_PASS); }
extern "C" __global__ void interp_transpose_f64(const double *g, double *dx, INTERP_ARGS) { interp_transpose<double>(g, dx, INTERP_PASS); }
