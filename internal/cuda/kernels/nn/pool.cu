// nn's 2-D pooling on the GPU (nn/pool.go, internal/cpu/pool.go): max
// pooling's argmax, its gather and scatter-add and the −Inf fill of empty
// windows; average pooling and its transpose. float (f32) and double (f64).
//
// Planes of H×W pool into HO×WO. The windows are cpu.PoolAxis' tables,
// uploaded as long long: rows holds First, End, Full, Clip (HO each), then
// the inverse table Lo, Hi (H each: the outputs oh in [Lo[r], Hi[r]) are
// the only ones whose window may hold input row r); cols likewise with WO
// and W. rstep and cstep are the axes' Step (the dilation).

#include "common.cuh"

struct pool_axis {
	const long long *first, *end, *full, *clip, *lo, *hi;
	long long step;
};

__device__ __forceinline__ pool_axis make_axis(const long long *t, long long out, long long in, long long step) {
	pool_axis a = {t, t + out, t + 2 * out, t + 3 * out, t + 4 * out, t + 4 * out + in, step};
	return a;
}

// in_window reports whether input position r is one of output o's window.
__device__ __forceinline__ bool in_window(const pool_axis &a, long long o, long long r) {
	return r >= a.first[o] && r < a.end[o] && (r - a.first[o]) % a.step == 0;
}

// argmax equals cpu.MaxPoolArgmax: one thread per output, the same two
// passes (Go's max, which propagates NaN, then the first position equal to
// it, or the last NaN); −1 for an empty window. Bitwise (an index).
template <typename T> __device__ void argmax(const T *x, long long *idx, long long planes, long long H, long long W, long long HO, long long WO, const long long *rt, const long long *ct, long long rstep, long long cstep) {
	pool_axis rows = make_axis(rt, HO, H, rstep), cols = make_axis(ct, WO, W, cstep);
	LOOP(e, planes * HO * WO) {
		long long ow = e % WO, oh = e / WO % HO, p = e / (WO * HO);
		const T *plane = x + p * H * W;
		long long r0 = rows.first[oh], r1 = rows.end[oh], c0 = cols.first[ow], c1 = cols.end[ow];
		if (r0 >= r1 || c0 >= c1) {
			idx[e] = -1;
			continue;
		}
		T m = plane[r0 * W + c0];
		for (long long r = r0; r < r1; r += rstep)
			for (long long c = c0; c < c1; c += cstep) m = go_max(m, plane[r * W + c]);
		long long best = -1;
		bool found = false;
		for (long long r = r0; r < r1 && !found; r += rstep)
			for (long long c = c0; c < c1; c += cstep) {
				T v = plane[r * W + c];
				if (m != m && v != v) {
					best = r * W + c; // the last NaN
				} else if (v == m) {
					best = r * W + c;
					found = true;
					break;
				}
			}
		idx[e] = best;
	}
}

// gather equals cpu.PlaneGather: out[p, o] = x[p, idx[p, o]], 0 for −1 (an
// index outside the plane, which the argmax never gives, also reads 0);
// bitwise.
template <typename T> __device__ void gather(const T *x, const long long *idx, T *out, long long planes, long long hw, long long l) {
	LOOP(e, planes * l) {
		long long i = idx[e], p = e / l;
		out[e] = (i >= 0 && i < hw) ? x[p * hw + i] : (T)0;
	}
}

// scatter_add equals cpu.PlaneScatterAdd into a zeroed dx: one thread per
// input element, adding from 0 the g[p, o] whose idx is that element, o in
// increasing order (the outputs whose windows may hold it); bitwise.
template <typename T> __device__ void scatter_add(const T *g, const long long *idx, T *dx, long long planes, long long H, long long W, long long HO, long long WO, const long long *rt, const long long *ct) {
	pool_axis rows = make_axis(rt, HO, H, 1), cols = make_axis(ct, WO, W, 1);
	LOOP(e, planes * H * W) {
		long long c = e % W, r = e / W % H, p = e / (W * H), i = r * W + c;
		const T *gp = g + p * HO * WO;
		const long long *ip = idx + p * HO * WO;
		T acc = 0;
		for (long long oh = rows.lo[r]; oh < rows.hi[r]; oh++)
			for (long long ow = cols.lo[c]; ow < cols.hi[c]; ow++)
				if (ip[oh * WO + ow] == i) acc += gp[oh * WO + ow];
		dx[e] = acc;
	}
}

// empty_fill equals nn's emptyFillKernel: −Inf where the argmax is −1, 0
// elsewhere; bitwise.
template <typename T> __device__ void empty_fill(const long long *idx, T *out, long long n) {
	LOOP(e, n) out[e] = idx[e] < 0 ? -(T)inf() : (T)0;
}

// divisor is cpu.AvgDivisor.of: override if not 0, else the window's size
// with padding (include_pad) or inside the input, as a double.
__device__ __forceinline__ double divisor(const pool_axis &rows, const pool_axis &cols, long long oh, long long ow, long long include_pad, long long override_) {
	if (override_ != 0) return (double)override_;
	if (include_pad) return (double)(rows.full[oh] * cols.full[ow]);
	return (double)(rows.clip[oh] * cols.clip[ow]);
}

// avg equals cpu.AvgPool: one thread per output, each window row summed
// in T from 0 (columns in order), those sums added from 0 in row order,
// divided by the divisor rounded to T (unless 0); bitwise.
template <typename T> __device__ void avg(const T *x, T *out, long long planes, long long H, long long W, long long HO, long long WO, const long long *rt, const long long *ct, long long rstep, long long cstep, long long include_pad, long long override_) {
	pool_axis rows = make_axis(rt, HO, H, rstep), cols = make_axis(ct, WO, W, cstep);
	LOOP(e, planes * HO * WO) {
		long long ow = e % WO, oh = e / WO % HO, p = e / (WO * HO);
		const T *plane = x + p * H * W;
		T s = 0;
		for (long long r = rows.first[oh]; r < rows.end[oh]; r += rstep) {
			T rs = 0;
			for (long long c = cols.first[ow]; c < cols.end[ow]; c += cstep) rs += plane[r * W + c];
			s += rs;
		}
		double d = divisor(rows, cols, oh, ow, include_pad, override_);
		if (d != 0) s /= (T)d;
		out[e] = s;
	}
}

// avg_transpose equals cpu.AvgPoolT into a zeroed dx: one thread per input
// element; for each output column whose window holds it (in order), the
// values g[p, o] / divisor (rounded as the CPU's) of the output rows whose
// window holds it summed from 0 in row order, those sums added from 0;
// bitwise.
template <typename T> __device__ void avg_transpose(const T *g, T *dx, long long planes, long long H, long long W, long long HO, long long WO, const long long *rt, const long long *ct, long long rstep, long long cstep, long long include_pad, long long override_) {
	pool_axis rows = make_axis(rt, HO, H, rstep), cols = make_axis(ct, WO, W, cstep);
	LOOP(e, planes * H * W) {
		long long c = e % W, r = e / W % H, p = e / (W * H);
		const T *gp = g + p * HO * WO;
		T acc = 0;
		for (long long ow = cols.lo[c]; ow < cols.hi[c]; ow++) {
			if (!in_window(cols, ow, c)) continue;
			T t = 0;
			for (long long oh = rows.lo[r]; oh < rows.hi[r]; oh++) {
				if (!in_window(rows, oh, r)) continue;
				T v = gp[oh * WO + ow];
				double d = divisor(rows, cols, oh, ow, include_pad, override_);
				if (d != 0) v /= (T)d;
				t += v;
			}
			acc += t;
		}
		dx[e] = acc;
	}
}

#define POOL_ARGS long long planes, long long H, long long W, long long HO, long long WO, const long long *rt, const long long *ct, long long rstep, long long cstep
#define POOL_PASS planes, H, W, HO, WO, rt, ct, rstep, cstep

extern "C" __global__ void pool_max_argmax_f32(const float *x, long long *idx, POOL_ARGS) { argmax<float>(x, idx, POOL_PASS); }
extern "C" __global__ void pool_max_argmax_f64(const double *x, long long *idx, POOL_ARGS) { argmax<double>(x, idx, POOL_PASS); }
extern "C" __global__ void pool_max_gather_f32(const float *x, const long long *idx, float *out, long long planes, long long hw, long long l) { gather<float>(x, idx, out, planes, hw, l); }
extern "C" __global__ void pool_max_gather_f64(const double *x, const long long *idx, double *out, long long planes, long long hw, long long l) { gather<double>(x, idx, out, planes, hw, l); }
extern "C" __global__ void pool_max_scatteradd_f32(const float *g, const long long *idx, float *dx, long long planes, long long H, long long W, long long HO, long long WO, const long long *rt, const long long *ct) { scatter_add<float>(g, idx, dx, planes, H, W, HO, WO, rt, ct); }
extern "C" __global__ void pool_max_scatteradd_f64(const double *g, const long long *idx, double *dx, long long planes, long long H, long long W, long long HO, long long WO, const long long *rt, const long long *ct) { scatter_add<double>(g, idx, dx, planes, H, W, HO, WO, rt, ct); }
extern "C" __global__ void pool_max_emptyfill_f32(const long long *idx, float *out, long long n) { empty_fill<float>(idx, out, n); }
extern "C" __global__ void pool_max_emptyfill_f64(const long long *idx, double *out, long long n) { empty_fill<double>(idx, out, n); }
extern "C" __global__ void pool_avg_f32(const float *x, float *out, POOL_ARGS, long long include_pad, long long override_) { avg<float>(x, out, POOL_PASS, include_pad, override_); }
extern "C" __global__ void pool_avg_f64(const double *x, double *out, POOL_ARGS, long long include_pad, long long override_) { avg<double>(x, out, POOL_PASS, include_pad, override_); }
extern "C" __global__ void pool_avg_transpose_f32(const float *g, float *dx, POOL_ARGS, long long include_pad, long long override_) { avg_transpose<float>(g, dx, POOL_PASS, include_pad, override_); }
extern "C" __global__ void pool_avg_transpose_f64(const double *g, double *dx, POOL_ARGS, long long include_pad, long long override_) { avg_transpose<double>(g, dx, POOL_PASS, include_pad, override_); }
