// GridSample's family and AffineGrid on the GPU (nn/gridsample.go,
// internal/cpu/gridsample.go, gridcubic.go, gridtable.go); float (f32) and
// double (f64).
//
// The sample coordinates (unnormalize, padding, floor, the kink
// conventions) and the interpolation weights are not computed here: the
// host builds them with the Go kernels' own functions (cpu.GridTable:
// gridTaps, gridTaps2, cubicTaps, gridOTaps) and uploads, per member, a
// table of taps, so the kernels read the weights the Go loops read. A tap
// t has K corners idx[K·t ...] (plane indices, −1 outside: reads 0) and
// NW weights w[NW·t ...]; mode 0 nearest (K = NW = 1), 1 bilinear (K =
// NW = 4: nw, ne, sw, se), 2 bicubic (K = 16 row-major, NW = 8: wx, wy).
// Every entry is bitwise equal to its Go twin: each thread sums in the Go
// kernel's order (channels in the Go kernels' chunks of 8, taps in their
// order), with -fmad=false.

#include "common.cuh"

__device__ __forceinline__ long long grid_k(long long mode) { return mode == 0 ? 1 : mode == 1 ? 4 : 16; }
__device__ __forceinline__ long long grid_nw(long long mode) { return mode == 0 ? 1 : mode == 1 ? 4 : 8; }

// grid_value is the tap's value on plane: cpu's gridTap.value (bilinear,
// nw·q0 + ne·q1 + sw·r0 + se·r1 on the zero-framed plane), w·plane[i]
// (nearest) or cubicTap.value (rows of columns, outside taps skipped).
template <typename T> __device__ T grid_value(long long mode, const long long *idx, const T *w, const T *plane) {
	if (mode == 0) return idx[0] >= 0 ? w[0] * plane[idx[0]] : (T)0;
	if (mode == 1) {
		T q0 = idx[0] >= 0 ? plane[idx[0]] : (T)0, q1 = idx[1] >= 0 ? plane[idx[1]] : (T)0;
		T r0 = idx[2] >= 0 ? plane[idx[2]] : (T)0, r1 = idx[3] >= 0 ? plane[idx[3]] : (T)0;
		return w[0] * q0 + w[1] * q1 + w[2] * r0 + w[3] * r1;
	}
	T v = 0;
	for (int i = 0; i < 4; i++) {
		T r = 0;
		for (int k = 0; k < 4; k++) {
			long long q = idx[4 * i + k];
			if (q >= 0) r += w[k] * plane[q];
		}
		v += w[4 + i] * r;
	}
	return v;
}

// gridsample_sample is GridSampleS / GridSampleS2 (out [N, C, P]): one
// thread per output element, the tap's value on its plane; with two sets
// (bicubic S2) the two values summed as the Go kernel's out += tmp; bitwise.
template <typename T> __device__ void gridsample_sample(const T *x, T *out, long long N, long long C, long long HW, long long P, long long mode, long long sets, const long long *idx, const T *w) {
	long long K = grid_k(mode), NW = grid_nw(mode);
	LOOP(e, N * C * P) {
		long long jj = e % P, nc = e / P, t = nc / C * P + jj;
		const T *plane = x + nc * HW;
		T v = grid_value<T>(mode, idx + K * t, w + NW * t, plane);
		if (sets == 2) {
			long long u = t + N * P;
			v = v + grid_value<T>(mode, idx + K * u, w + NW * u, plane);
		}
		out[e] = v;
	}
}

// gridsample_scatter is GridSampleT / GridSampleT2 (dst [N, C, H, W]) as a
// gather: one thread per input element, adding from 0 the shares of the
// taps that read it, listed by the host (cpu.GridTable.Inverse: off, ent;
// entry t·16 + s) in the order the Go scatter adds them (set, pixel,
// corner): w·g (nearest, bilinear), wx·(wy·g) (bicubic); bitwise.
template <typename T> __device__ void gridsample_scatter(const T *g, T *dst, long long N, long long C, long long HW, long long P, long long mode, const long long *off, const long long *ent, const T *w) {
	long long NW = grid_nw(mode);
	LOOP(e, N * C * HW) {
		long long q = e % HW, nc = e / HW, n = nc / C;
		const T *gp = g + nc * P;
		T acc = 0;
		for (long long k = off[n * HW + q]; k < off[n * HW + q + 1]; k++) {
			long long t = ent[k] >> 4, s = ent[k] & 15;
			T v = gp[t % P];
			const T *wt = w + NW * t;
			if (mode == 2) acc += wt[s % 4] * (wt[4 + s / 4] * v);
			else acc += wt[s] * v;
		}
		dst[e] = acc;
	}
}

// gridsample_contract is GridSampleC (stride 1, set 0) and bicubic
// GridSampleO (stride 2: half h from set h when has_h, times mask when
// has_mask): one thread per pixel, Σ_c g·value summed in chunks of chunk
// channels (the Go kernels': 8 for bilinear and nearest, C for bicubic),
// each chunk's sum added to the pixel's, a nearest pixel that samples
// nothing left 0; bitwise.
template <typename T> __device__ void gridsample_contract(const T *x, const T *gr, T *out, const T *mask, long long N, long long C, long long HW, long long P, long long mode, long long chunk, long long stride, long long has0, long long has1, long long has_mask, const long long *idx0, const T *w0, const long long *idx1, const T *w1) {
	long long K = grid_k(mode), NW = grid_nw(mode);
	LOOP(e, N * P) {
		long long n = e / P, jj = e % P;
		for (long long h = 0; h < stride; h++) {
			T o = 0;
			const long long *idx = (h == 0 ? idx0 : idx1) + K * e;
			const T *w = (h == 0 ? w0 : w1) + NW * e;
			if ((h == 0 ? has0 : has1) && !(mode == 0 && idx[0] < 0)) {
				for (long long c0 = 0; c0 < C; c0 += chunk) {
					T acc = 0;
					for (long long c = c0; c < c0 + chunk && c < C; c++) {
						long long nc = n * C + c;
						acc += gr[nc * P + jj] * grid_value<T>(mode, idx, w, x + nc * HW);
					}
					o += acc;
				}
			}
			if (has_mask) o *= mask[e];
			out[e * stride + h] = o;
		}
	}
}

// gridsample_obilinear is bilinear GridSampleO (out [N, P, 2]): one thread
// per pixel, per channel ((ne − nw)·fy0 + (se − sw)·fy1)·g in x and
// ((sw − nw)·fx0 + (se − ne)·fx1)·g in y, summed in chunks of 8 channels,
// then times the half's scale (a scale of 0 gives 0); w holds fx0, fx1,
// fy0, fy1, sx, sy (cpu.GridOTable); bitwise.
template <typename T> __device__ void gridsample_obilinear(const T *x, const T *gr, T *out, long long N, long long C, long long HW, long long P, const long long *idx, const T *w) {
	LOOP(e, N * P) {
		long long n = e / P, jj = e % P;
		const long long *id = idx + 4 * e;
		const T *f = w + 6 * e;
		T ox = 0, oy = 0;
		for (long long c0 = 0; c0 < C; c0 += 8) {
			T sx = 0, sy = 0;
			for (long long c = c0; c < c0 + 8 && c < C; c++) {
				long long nc = n * C + c;
				const T *plane = x + nc * HW;
				T nw = id[0] >= 0 ? plane[id[0]] : (T)0, ne = id[1] >= 0 ? plane[id[1]] : (T)0;
				T sw = id[2] >= 0 ? plane[id[2]] : (T)0, se = id[3] >= 0 ? plane[id[3]] : (T)0;
				T gv = gr[nc * P + jj];
				sx += ((ne - nw) * f[2] + (se - sw) * f[3]) * gv;
				sy += ((sw - nw) * f[0] + (se - ne) * f[1]) * gv;
			}
			ox += sx;
			oy += sy;
		}
		out[2 * e] = f[4] == (T)0 ? (T)0 : ox * f[4];
		out[2 * e + 1] = f[5] == (T)0 ? (T)0 : oy * f[5];
	}
}

// gridsample_o2 is GridSampleO2's last step from ta = O_(a+1)b and (outer)
// tb = O_a(b+1), without masks: x = m1·ta_x + m2·tb_x, y = m1·ta_y +
// m2·tb_y, or (not outer: only the shared C_(a+1)(b+1) = ta_y) x = m2·ta_y,
// y = m1·ta_y; bitwise.
template <typename T> __device__ void gridsample_o2(const T *ta, const T *tb, const T *m1, const T *m2, T *out, long long n, long long outer) {
	LOOP(j, n) {
		T c2 = ta[2 * j + 1];
		if (outer) {
			out[2 * j] = m1[j] * ta[2 * j] + m2[j] * tb[2 * j];
			out[2 * j + 1] = m1[j] * c2 + m2[j] * tb[2 * j + 1];
		} else {
			out[2 * j] = m2[j] * c2;
			out[2 * j + 1] = m1[j] * c2;
		}
	}
}

// gridsample_split is GridSplit (dst[j] = src[2j + which]); gridsample_embed
// GridEmbed, writing both halves (the other 0); exact.
template <typename T> __device__ void gridsample_split(const T *src, T *dst, long long n, long long which) {
	LOOP(j, n) dst[j] = src[2 * j + which];
}
template <typename T> __device__ void gridsample_embed(const T *src, T *dst, long long n, long long which) {
	LOOP(e, 2 * n) dst[e] = (e & 1) == which ? src[e >> 1] : (T)0;
}

// gridsample_affine is cpu.AffineGrid (out [N, H, W, 2], xs, ys
// cpu.AffineGridBase in T): x·θ0 + y·θ1 + θ2 per element; bitwise.
template <typename T> __device__ void gridsample_affine(const T *theta, T *out, long long N, long long H, long long W, const T *xs, const T *ys) {
	LOOP(e, N * H * W * 2) {
		long long r = e & 1, p = e >> 1, wi = p % W, hi = p / W % H, k = p / (W * H);
		const T *t = theta + 6 * k + 3 * r;
		out[e] = xs[wi] * t[0] + ys[hi] * t[1] + t[2];
	}
}

// gridsample_affine_t is cpu.AffineGridT (dtheta [N, 2, 3]): one thread
// per θ element, summing over the pixels in order; bitwise.
template <typename T> __device__ void gridsample_affine_t(const T *gr, T *dtheta, long long N, long long H, long long W, const T *xs, const T *ys) {
	LOOP(e, N * 6) {
		long long k = e / 6, r = e % 6 / 3, col = e % 3;
		const T *src = gr + k * H * W * 2;
		T acc = 0;
		for (long long i = 0; i < H; i++)
			for (long long j = 0; j < W; j++) {
				T g = src[2 * (i * W + j) + r];
				if (col == 0) acc += g * xs[j];
				else if (col == 1) acc += g * ys[i];
				else acc += g;
			}
		dtheta[e] = acc;
	}
}

extern "C" __global__ void gridsample_sample_f32(const float *x, float *out, long long N, long long C, long long HW, long long P, long long mode, long long sets, const long long *idx, const float *w) { gridsample_sample<float>(x, out, N, C, HW, P, mode, sets, idx, w); }
extern "C" __global__ void gridsample_sample_f64(const double *x, double *out, long long N, long long C, long long HW, long long P, long long mode, long long sets, const long long *idx, const double *w) { gridsample_sample<double>(x, out, N, C, HW, P, mode, sets, idx, w); }
extern "C" __global__ void gridsample_scatter_f32(const float *g, float *dst, long long N, long long C, long long HW, long long P, long long mode, const long long *off, const long long *ent, const float *w) { gridsample_scatter<float>(g, dst, N, C, HW, P, mode, off, ent, w); }
extern "C" __global__ void gridsample_scatter_f64(const double *g, double *dst, long long N, long long C, long long HW, long long P, long long mode, const long long *off, const long long *ent, const double *w) { gridsample_scatter<double>(g, dst, N, C, HW, P, mode, off, ent, w); }
extern "C" __global__ void gridsample_contract_f32(const float *x, const float *gr, float *out, const float *mask, long long N, long long C, long long HW, long long P, long long mode, long long chunk, long long stride, long long has0, long long has1, long long has_mask, const long long *idx0, const float *w0, const long long *idx1, const float *w1) { gridsample_contract<float>(x, gr, out, mask, N, C, HW, P, mode, chunk, stride, has0, has1, has_mask, idx0, w0, idx1, w1); }
extern "C" __global__ void gridsample_contract_f64(const double *x, const double *gr, double *out, const double *mask, long long N, long long C, long long HW, long long P, long long mode, long long chunk, long long stride, long long has0, long long has1, long long has_mask, const long long *idx0, const double *w0, const long long *idx1, const double *w1) { gridsample_contract<double>(x, gr, out, mask, N, C, HW, P, mode, chunk, stride, has0, has1, has_mask, idx0, w0, idx1, w1); }
extern "C" __global__ void gridsample_obilinear_f32(const float *x, const float *gr, float *out, long long N, long long C, long long HW, long long P, const long long *idx, const float *w) { gridsample_obilinear<float>(x, gr, out, N, C, HW, P, idx, w); }
extern "C" __global__ void gridsample_obilinear_f64(const double *x, const double *gr, double *out, long long N, long long C, long long HW, long long P, const long long *idx, const double *w) { gridsample_obilinear<double>(x, gr, out, N, C, HW, P, idx, w); }
extern "C" __global__ void gridsample_o2_f32(const float *ta, const float *tb, const float *m1, const float *m2, float *out, long long n, long long outer) { gridsample_o2<float>(ta, tb, m1, m2, out, n, outer); }
extern "C" __global__ void gridsample_o2_f64(const double *ta, const double *tb, const double *m1, const double *m2, double *out, long long n, long long outer) { gridsample_o2<double>(ta, tb, m1, m2, out, n, outer); }
extern "C" __global__ void gridsample_split_f32(const float *src, float *dst, long long n, long long which) { gridsample_split<float>(src, dst, n, which); }
extern "C" __global__ void gridsample_split_f64(const double *src, double *dst, long long n, long long which) { gridsample_split<double>(src, dst, n, which); }
extern "C" __global__ void gridsample_embed_f32(const float *src, float *dst, long long n, long long which) { gridsample_embed<float>(src, dst, n, which); }
extern "C" __global__ void gridsample_embed_f64(const double *src, double *dst, long long n, long long which) { gridsample_embed<double>(src, dst, n, which); }
extern "C" __global__ void gridsample_affine_f32(const float *theta, float *out, long long N, long long H, long long W, const float *xs, const float *ys) { gridsample_affine<float>(theta, out, N, H, W, xs, ys); }
extern "C" __global__ void gridsample_affine_f64(const double *theta, double *out, long long N, long long H, long long W, const double *xs, const double *ys) { gridsample_affine<double>(theta, out, N, H, W, xs, ys); }
extern "C" __global__ void gridsample_affine_t_f32(const float *gr, float *dtheta, long long N, long long H, long long W, const float *xs, const float *ys) { gridsample_affine_t<float>(gr, dtheta, N, H, W, xs, ys); }
extern "C" __global__ void gridsample_affine_t_f64(const double *gr, double *dtheta, long long N, long long H, long long W, const double *xs, const double *ys) { gridsample_affine_t<double>(gr, dtheta, N, H, W, xs, ys); }
