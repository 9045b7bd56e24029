// The per-channel ops of nn's convolutions and normalisations on the GPU
// (nn/conv.go's BiasAdd, ChannelSum and ChannelBroadcast, nn/batchnorm.go's
// ChannelMean, nn/normaffine.go's ChannelAffine, ChannelDot and
// ChannelTotal), on x [N, C, L], the row normalisation of nn/rownorm.go
// and GroupNorm's gradients from its statistics (nn/groupnorm.go); float
// (f32) and double (f64).

#include "common.cuh"

// bias_add equals cpu.AddChannelBias: out[n, c, l] = x[n, c, l] + b[c];
// bitwise.
template <typename T> __device__ void bias_add(const T *x, const T *b, T *out, long long n, long long c, long long l) {
	LOOP(e, n * c * l) out[e] = x[e] + b[e / l % c];
}

// channel_sum equals cpu.ChannelSum: one thread per channel, summing in T
// over n, then l, from 0; bitwise.
template <typename T> __device__ void channel_sum(const T *x, T *s, long long n, long long c, long long l) {
	LOOP(ci, c) {
		T acc = 0;
		for (long long ni = 0; ni < n; ni++) {
			const T *row = x + (ni * c + ci) * l;
			for (long long i = 0; i < l; i++) acc += row[i];
		}
		s[ci] = acc;
	}
}

// channel_broadcast equals cpu.ChannelBroadcast: x[n, c, l] = s[c];
// bitwise.
template <typename T> __device__ void channel_broadcast(const T *s, T *x, long long n, long long c, long long l) {
	LOOP(e, n * c * l) x[e] = s[e / l % c];
}

// channel_mean equals nn's channelMeanKernel: one thread per channel, the
// sum in double over n, then l, divided by n·l, rounded to T into out;
// bitwise. With stats (not null) it also writes the double mean and the
// unbiased variance (Σ (x − mean)², the same order, over n·l − 1) to
// stats[2·c] and stats[2·c + 1], which the host folds into the running
// statistics as the Go kernel does.
template <typename T> __device__ void channel_mean(const T *x, T *out, double *stats, long long n, long long c, long long l) {
	LOOP(ci, c) {
		double sum = 0, cnt = (double)(n * l);
		for (long long ni = 0; ni < n; ni++) {
			const T *row = x + (ni * c + ci) * l;
			for (long long i = 0; i < l; i++) sum += (double)row[i];
		}
		double mean = sum / cnt;
		out[ci] = (T)mean;
		if (stats == 0) continue;
		double ss = 0;
		for (long long ni = 0; ni < n; ni++) {
			const T *row = x + (ni * c + ci) * l;
			for (long long i = 0; i < l; i++) {
				double d = (double)row[i] - mean;
				ss += d * d;
			}
		}
		stats[2 * ci] = mean;
		stats[2 * ci + 1] = ss / (cnt - 1);
	}
}

extern "C" __global__ void norm_bias_add_f32(const float *x, const float *b, float *out, long long n, long long c, long long l) { bias_add<float>(x, b, out, n, c, l); }
extern "C" __global__ void norm_bias_add_f64(const double *x, const double *b, double *out, long long n, long long c, long long l) { bias_add<double>(x, b, out, n, c, l); }
extern "C" __global__ void norm_channel_sum_f32(const float *x, float *s, long long n, long long c, long long l) { channel_sum<float>(x, s, n, c, l); }
extern "C" __global__ void norm_channel_sum_f64(const double *x, double *s, long long n, long long c, long long l) { channel_sum<double>(x, s, n, c, l); }
extern "C" __global__ void norm_channel_broadcast_f32(const float *s, float *x, long long n, long long c, long long l) { channel_broadcast<float>(s, x, n, c, l); }
extern "C" __global__ void norm_channel_broadcast_f64(const double *s, double *x, long long n, long long c, long long l) { channel_broadcast<double>(s, x, n, c, l); }
extern "C" __global__ void norm_channel_mean_f32(const float *x, float *out, double *stats, long long n, long long c, long long l) { channel_mean<float>(x, out, stats, n, c, l); }
extern "C" __global__ void norm_channel_mean_f64(const double *x, double *out, double *stats, long long n, long long c, long long l) { channel_mean<double>(x, out, stats, n, c, l); }

// The row normalisation of GroupNorm and LayerNorm (nn/rownorm.go), one
// thread per row of n elements, in double: μ and σ² (biased) in two
// passes, r = 1/√(σ² + eps). Not bitwise: the Go kernels sum in vector
// lanes and round x − μ to T.
template <typename T> __device__ void row_stats(const T *x, long long n, double eps, double *mean, double *r) {
	double s = 0, v = 0;
	for (long long i = 0; i < n; i++) s += (double)x[i];
	double m = s / (double)n;
	for (long long i = 0; i < n; i++) {
		double d = (double)x[i] - m;
		v += d * d;
	}
	*mean = m;
	*r = 1 / sqrt(v / (double)n + eps);
}

// rows_norm is RowNorm: y = (x − μ)·r.
template <typename T> __device__ void rows_norm(const T *x, T *y, long long rows, long long n, double eps) {
	LOOP(i, rows) {
		const T *xr = x + i * n;
		T *yr = y + i * n;
		double m, r;
		row_stats(xr, n, eps, &m, &r);
		for (long long k = 0; k < n; k++) yr[k] = (T)(((double)xr[k] - m) * r);
	}
}

// rows_norm_grad is RowNormGrad: g = r·(u − mean u − y·mean(u·y)), y
// recomputed from x.
template <typename T> __device__ void rows_norm_grad(const T *x, const T *u, T *g, long long rows, long long n, double eps) {
	LOOP(i, rows) {
		const T *xr = x + i * n, *ur = u + i * n;
		T *gr = g + i * n;
		double m, r, su = 0, suy = 0;
		row_stats(xr, n, eps, &m, &r);
		for (long long k = 0; k < n; k++) {
			double y = ((double)xr[k] - m) * r;
			su += (double)ur[k];
			suy += (double)ur[k] * y;
		}
		double mu = su / (double)n, muy = suy / (double)n;
		for (long long k = 0; k < n; k++) {
			double y = ((double)xr[k] - m) * r;
			gr[k] = (T)(r * ((double)ur[k] - mu - y * muy));
		}
	}
}

// rows_invstd is RowInvStd: r per row.
template <typename T> __device__ void rows_invstd(const T *x, T *out, long long rows, long long n, double eps) {
	LOOP(i, rows) {
		double m, r;
		row_stats(x + i * n, n, eps, &m, &r);
		out[i] = (T)r;
	}
}

// channel_affine is ChannelAffine on x [n, c, l]: x·w[c] + b[c], w or b
// null when absent; not bitwise (the Go kernel fuses the multiply-add
// where the CPU has FMA).
template <typename T> __device__ void channel_affine(const T *x, const T *w, const T *b, T *out, long long n, long long c, long long l) {
	LOOP(e, n * c * l) {
		long long ci = e / l % c;
		T v = x[e];
		if (w != 0) v = v * w[ci];
		if (b != 0) v = v + b[ci];
		out[e] = v;
	}
}

// channel_dot is ChannelDot (y not null: Σ u·y) or ChannelTotal (Σ u) per
// channel of [n, c, l], one thread per channel, in double over n, then l;
// not bitwise (the Go kernel sums planes in vector lanes).
template <typename T> __device__ void channel_dot(const T *u, const T *y, T *out, long long n, long long c, long long l) {
	LOOP(ci, c) {
		double acc = 0;
		for (long long ni = 0; ni < n; ni++) {
			long long at = (ni * c + ci) * l;
			for (long long i = 0; i < l; i++) acc += y != 0 ? (double)u[at + i] * (double)y[at + i] : (double)u[at + i];
		}
		out[ci] = (T)acc;
	}
}

// GroupNorm's statistics (nn/groupnorm.go, GroupNormStats) hold doubles in
// slots of two elements of T: for float the double's bits, low word first;
// for double the value and 0.
__device__ __forceinline__ void set_slot(float *p, long long k, double v) {
	unsigned long long b = (unsigned long long)__double_as_longlong(v);
	p[2 * k] = __int_as_float((int)(unsigned int)(b & 0xffffffffULL));
	p[2 * k + 1] = __int_as_float((int)(unsigned int)(b >> 32));
}
__device__ __forceinline__ void set_slot(double *p, long long k, double v) {
	p[2 * k] = v;
	p[2 * k + 1] = 0;
}
__device__ __forceinline__ double slot(const float *p, long long k) {
	unsigned long long lo = (unsigned int)__float_as_int(p[2 * k]), hi = (unsigned int)__float_as_int(p[2 * k + 1]);
	return __longlong_as_double((long long)(hi << 32 | lo));
}
__device__ __forceinline__ double slot(const double *p, long long k) { return p[2 * k]; }

// group_stats is GroupNormStats(u, x) on rows of n elements, planes of
// inner: per row μ (rounded to T) and r in slots 2i, 2i + 1, per plane q
// Σu and Σu·y, y = (x − μ)·r, in slots 2·rows + 2q, 2·rows + 2q + 1; one
// thread per row, in double. Not bitwise (the Go kernel sums in vector
// lanes and rounds y to T).
template <typename T> __device__ void group_stats(const T *u, const T *x, T *p, long long rows, long long n, long long inner, double eps) {
	LOOP(i, rows) {
		const T *xr = x + i * n, *ur = u + i * n;
		double m, r;
		row_stats(xr, n, eps, &m, &r);
		double mt = (double)(T)m;
		set_slot(p, 2 * i, mt);
		set_slot(p, 2 * i + 1, r);
		for (long long j = 0; j < n / inner; j++) {
			double su = 0, suy = 0;
			for (long long k = j * inner; k < (j + 1) * inner; k++) {
				su += (double)ur[k];
				suy += (double)ur[k] * (((double)xr[k] - mt) * r);
			}
			long long q = 2 * rows + 2 * (i * (n / inner) + j);
			set_slot(p, q, su);
			set_slot(p, q + 1, suy);
		}
	}
}

// group_grad_x is GroupNormGradX(x, u, w, stats) = r·(w[c]·u − mean uw −
// y·mean(uw·y)) per row, the row's μ, r and its planes' sums from the
// statistics; one thread per row, in double. Not bitwise (the Go kernel
// rounds to T in between and fuses multiply-adds).
template <typename T> __device__ void group_grad_x(const T *x, const T *u, const T *w, const T *p, T *g, long long rows, long long n, long long inner, long long c) {
	LOOP(i, rows) {
		const T *xr = x + i * n, *ur = u + i * n;
		T *gr = g + i * n;
		long long per = n / inner, c0 = i * per % c;
		double m = slot(p, 2 * i), r = slot(p, 2 * i + 1), su = 0, suy = 0;
		for (long long j = 0; j < per; j++) {
			long long q = 2 * rows + 2 * (i * per + j);
			su += (double)w[c0 + j] * slot(p, q);
			suy += (double)w[c0 + j] * slot(p, q + 1);
		}
		double mu = su / (double)n, muy = suy / (double)n;
		for (long long k = 0; k < n; k++) {
			double y = ((double)xr[k] - m) * r;
			gr[k] = (T)(r * ((double)w[c0 + k / inner] * (double)ur[k] - mu - y * muy));
		}
	}
}

// group_stats_total is GroupNormGradB (which 0: Σu) or GroupNormGradW
// (which 1: Σu·y): per channel the statistics' per-plane sums added over
// the outer samples in order, in double; one thread per channel. Bitwise.
template <typename T> __device__ void group_stats_total(const T *p, T *out, long long rows, long long outer, long long c, long long which) {
	LOOP(ci, c) {
		double acc = 0;
		for (long long o = 0; o < outer; o++) acc += slot(p, 2 * rows + 2 * (o * c + ci) + which);
		out[ci] = (T)acc;
	}
}

extern "C" __global__ void norm_rows_f32(const float *x, float *y, long long rows, long long n, double eps) { rows_norm<float>(x, y, rows, n, eps); }
extern "C" __global__ void norm_rows_f64(const double *x, double *y, long long rows, long long n, double eps) { rows_norm<double>(x, y, rows, n, eps); }
extern "C" __global__ void norm_rows_grad_f32(const float *x, const float *u, float *g, long long rows, long long n, double eps) { rows_norm_grad<float>(x, u, g, rows, n, eps); }
extern "C" __global__ void norm_rows_grad_f64(const double *x, const double *u, double *g, long long rows, long long n, double eps) { rows_norm_grad<double>(x, u, g, rows, n, eps); }
extern "C" __global__ void norm_rows_invstd_f32(const float *x, float *out, long long rows, long long n, double eps) { rows_invstd<float>(x, out, rows, n, eps); }
extern "C" __global__ void norm_rows_invstd_f64(const double *x, double *out, long long rows, long long n, double eps) { rows_invstd<double>(x, out, rows, n, eps); }
extern "C" __global__ void norm_channel_affine_f32(const float *x, const float *w, const float *b, float *out, long long n, long long c, long long l) { channel_affine<float>(x, w, b, out, n, c, l); }
extern "C" __global__ void norm_channel_affine_f64(const double *x, const double *w, const double *b, double *out, long long n, long long c, long long l) { channel_affine<double>(x, w, b, out, n, c, l); }
extern "C" __global__ void norm_channel_dot_f32(const float *u, const float *y, float *out, long long n, long long c, long long l) { channel_dot<float>(u, y, out, n, c, l); }
extern "C" __global__ void norm_channel_dot_f64(const double *u, const double *y, double *out, long long n, long long c, long long l) { channel_dot<double>(u, y, out, n, c, l); }
extern "C" __global__ void norm_group_stats_f32(const float *u, const float *x, float *p, long long rows, long long n, long long inner, double eps) { group_stats<float>(u, x, p, rows, n, inner, eps); }
extern "C" __global__ void norm_group_stats_f64(const double *u, const double *x, double *p, long long rows, long long n, long long inner, double eps) { group_stats<double>(u, x, p, rows, n, inner, eps); }
extern "C" __global__ void norm_group_grad_x_f32(const float *x, const float *u, const float *w, const float *p, float *g, long long rows, long long n, long long inner, long long c) { group_grad_x<float>(x, u, w, p, g, rows, n, inner, c); }
extern "C" __global__ void norm_group_grad_x_f64(const double *x, const double *u, const double *w, const double *p, double *g, long long rows, long long n, long long inner, long long c) { group_grad_x<double>(x, u, w, p, g, rows, n, inner, c); }
extern "C" __global__ void norm_group_stats_total_f32(const float *p, float *out, long long rows, long long outer, long long c, long long which) { group_stats_total<float>(p, out, rows, outer, c, which); }
extern "C" __global__ void norm_group_stats_total_f64(const double *p, double *out, long long rows, long long outer, long long c, long long which) { group_stats_total<double>(p, out, rows, outer, c, which); }
