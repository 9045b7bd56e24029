// The losses' own ops on the GPU (nn/loss.go, nn/lse.go): CrossEntropy's
// Pick, Scatter, PickVec and ScatterVec by an integer target, and its row
// ops LogSumExp, NLL, LogSumExpGrad, NLLGrad and Mask; SmoothL1Loss'
// elementwise family; the stable Softplus. float (f32) and double (f64).
// Targets are long long (Go's int); the host checks them first (a target
// outside [0, c) that is not ignore is an error there, as in nn's
// pickKernel), so the kernels only skip ignore.

#include "common.cuh"

// pick equals nn's pickKernel (Pick, forward): out[i] = x[i, t[i]] for x
// [n, c] (vec: x[t[i]] for x [c]), 0 where t[i] is ignore; bitwise.
template <typename T> __device__ void pick(const T *x, const long long *t, T *out, long long n, long long c, long long ignore, long long vec) {
	LOOP(i, n) {
		long long ti = t[i];
		out[i] = ti == ignore ? (T)0 : x[vec ? ti : i * c + ti];
	}
}

// scatter equals nn's pickKernel (Scatter) into a zeroed [n, c]: one
// thread per element, 0 + g[i] where j = t[i] (so −0 comes out +0, as the
// CPU's +=); bitwise.
template <typename T> __device__ void scatter(const T *g, const long long *t, T *out, long long n, long long c, long long ignore) {
	LOOP(e, n * c) {
		long long i = e / c, j = e - i * c, ti = t[i];
		T acc = 0;
		if (ti != ignore && ti == j) acc += g[i];
		out[e] = acc;
	}
}

// scatter_vec equals nn's pickKernel (ScatterVec) into a zeroed [c]: one
// thread per class, adding from 0 the g[i] of the rows whose target it is,
// i in order; bitwise.
template <typename T> __device__ void scatter_vec(const T *g, const long long *t, T *out, long long n, long long c, long long ignore) {
	LOOP(j, c) {
		T acc = 0;
		for (long long i = 0; i < n; i++)
			if (t[i] != ignore && t[i] == j) acc += g[i];
		out[j] = acc;
	}
}

// smoothl1 equals nn's smoothL1Kernel, derivative order 0, 1 or 2 of the
// smooth L1 function with beta, in T; bitwise.
template <typename T> __device__ void smoothl1(const T *x, T *out, T b, long long order, long long n) {
	LOOP(i, n) {
		T d = x[i], a = fabs(d); // Go's max(d, −d): NaN stays NaN, −0 gives +0
		bool inside = a < b;
		T v = 0;
		if (order == 0) {
			v = inside ? (T)0.5 * d * d / b : a - (T)0.5 * b;
		} else if (order == 1) {
			if (inside) v = d / b;
			else if (d > 0) v = 1;
			else if (d != d) v = d;
			else v = -1;
		} else if (inside) {
			v = (T)1 / b;
		}
		out[i] = v;
	}
}

// softplus equals nn's softplusKernel: max(x, 0) + log1p(exp(−|x|)) in
// double, rounded to T. Not bitwise: CUDA's exp and log1p may differ from
// Go's in the last place.
template <typename T> __device__ void softplus(const T *x, T *out, long long n) {
	LOOP(i, n) {
		double v = (double)x[i];
		out[i] = (T)(go_max(v, 0.0) + log1p(exp(-fabs(v))));
	}
}

// lse computes nn's lseKernel: one thread per row, in double: the
// maximum m (NaN taking over), then m + log Σ exp(x − m), k in order,
// rounded to T; a row whose m is NaN or ±Inf gives m. Not bitwise: the Go
// kernel computes the exponentials in T with internal/vmath's exp.
template <typename T> __device__ void lse(const T *x, T *out, long long rows, long long n) {
	LOOP(r, rows) {
		const T *xr = x + r * n;
		double m = -inf();
		for (long long k = 0; k < n; k++) {
			double v = (double)xr[k];
			if (v > m || v != v) m = v;
		}
		if (m != m || m == inf() || m == -inf()) {
			out[r] = (T)m;
			continue;
		}
		double s = 0;
		for (long long k = 0; k < n; k++) s += exp((double)xr[k] - m);
		out[r] = (T)(m + log(s));
	}
}

// row_max_sum sets m to the maximum of the n elements at xr (NaN taking
// over) and, when m is finite, s to Σ exp(x − m) (x − m in T, exp in
// double rounded to T, summed in double, k in order), as nn's maxLogSum
// and NLLGrad's kernel; it returns whether m is finite.
template <typename T> __device__ bool row_max_sum(const T *xr, long long n, T &m, double &s) {
	double mf = -inf();
	for (long long k = 0; k < n; k++) {
		double v = (double)xr[k];
		if (v > mf || v != v) mf = v;
	}
	m = (T)mf;
	if (mf != mf || mf == inf() || mf == -inf()) return false;
	s = 0;
	for (long long k = 0; k < n; k++) s += (double)(T)exp((double)(xr[k] - m));
	return true;
}

// nll computes nn's nllKernel, one thread per row: (m − x[r, t[r]]) +
// log s in double (row_max_sum), rounded to T; 0 where t[r] is ignore,
// NaN where m is NaN or ±Inf. Not bitwise: the Go kernel uses
// internal/vmath's exp.
template <typename T> __device__ void nll(const T *x, const long long *t, T *out, long long rows, long long n, long long ignore) {
	LOOP(r, rows) {
		long long tr = t[r];
		if (tr == ignore) {
			out[r] = 0;
			continue;
		}
		const T *xr = x + r * n;
		T m;
		double s;
		out[r] = row_max_sum(xr, n, m, s) ? (T)((double)m - (double)xr[tr] + log(s)) : (T)nan_();
	}
}

// mask equals nn's maskKernel: out[r] = v[r], 0 where t[r] is ignore;
// bitwise.
template <typename T> __device__ void mask(const T *v, const long long *t, T *out, long long rows, long long ignore) {
	LOOP(r, rows) out[r] = t[r] == ignore ? (T)0 : v[r];
}

// lse_grad computes nn's lseGradKernel without a target, one thread per
// row r:
// u[r]·exp(x − lse[r])/Σ_k exp(x − lse[r]) (x − lse[r] in T, exp and the
// sum in double, each exponential rounded to T, times u[r]/sum rounded to
// T, the product in T: the sum is 1 but for lse[r]'s rounding, which
// takes all of log s for large logits); u[r]·exp(x − lse[r]) where lse[r]
// is NaN or ±Inf. Not bitwise: the Go kernel uses internal/vmath's exp
// and an FMA where the CPU has one.
template <typename T> __device__ void lse_grad(const T *x, const T *l, const T *u, T *g, long long rows, long long n) {
	LOOP(r, rows) {
		const T *xr = x + r * n;
		T *gr = g + r * n;
		T lr = l[r], ur = u[r];
		double lf = (double)lr;
		T scale = ur;
		if (!(lf != lf || lf == inf() || lf == -inf())) {
			double s = 0;
			for (long long k = 0; k < n; k++) s += (double)(T)exp((double)(xr[k] - lr));
			scale = (T)((double)ur / s);
		}
		for (long long k = 0; k < n; k++) gr[k] = scale * (T)exp((double)(xr[k] - lr));
	}
}

// nll_grad computes nn's lseGradKernel with a target (NLLGrad), one
// thread per row r: u[r]·exp(x − m)/s (row_max_sum; times u[r]/s rounded
// to T, the product in T), less u[r] where k = t[r]; 0 on a row whose
// t[r] is ignore, NaN on one whose m is NaN or ±Inf. Not bitwise, as
// lse_grad.
template <typename T> __device__ void nll_grad(const T *x, const T *u, const long long *t, T *g, long long rows, long long n, long long ignore) {
	LOOP(r, rows) {
		const T *xr = x + r * n;
		T *gr = g + r * n;
		if (t[r] == ignore) {
			for (long long k = 0; k < n; k++) gr[k] = 0;
			continue;
		}
		T m, ur = u[r];
		double s;
		if (!row_max_sum(xr, n, m, s)) {
			for (long long k = 0; k < n; k++) gr[k] = (T)nan_();
			continue;
		}
		T scale = (T)((double)ur / s);
		for (long long k = 0; k < n; k++) gr[k] = scale * (T)exp((double)(xr[k] - m));
		gr[t[r]] -= ur;
	}
}

extern "C" __global__ void loss_pick_f32(const float *x, const long long *t, float *out, long long n, long long c, long long ignore, long long vec) { pick<float>(x, t, out, n, c, ignore, vec); }
extern "C" __global__ void loss_pick_f64(const double *x, const long long *t, double *out, long long n, long long c, long long ignore, long long vec) { pick<double>(x, t, out, n, c, ignore, vec); }
extern "C" __global__ void loss_scatter_f32(const float *g, const long long *t, float *out, long long n, long long c, long long ignore) { scatter<float>(g, t, out, n, c, ignore); }
extern "C" __global__ void loss_scatter_f64(const double *g, const long long *t, double *out, long long n, long long c, long long ignore) { scatter<double>(g, t, out, n, c, ignore); }
extern "C" __global__ void loss_scatter_vec_f32(const float *g, const long long *t, float *out, long long n, long long c, long long ignore) { scatter_vec<float>(g, t, out, n, c, ignore); }
extern "C" __global__ void loss_scatter_vec_f64(const double *g, const long long *t, double *out, long long n, long long c, long long ignore) { scatter_vec<double>(g, t, out, n, c, ignore); }
extern "C" __global__ void loss_smoothl1_f32(const float *x, float *out, float beta, long long order, long long n) { smoothl1<float>(x, out, beta, order, n); }
extern "C" __global__ void loss_smoothl1_f64(const double *x, double *out, double beta, long long order, long long n) { smoothl1<double>(x, out, beta, order, n); }
extern "C" __global__ void loss_softplus_f32(const float *x, float *out, long long n) { softplus<float>(x, out, n); }
extern "C" __global__ void loss_softplus_f64(const double *x, double *out, long long n) { softplus<double>(x, out, n); }
extern "C" __global__ void loss_lse_f32(const float *x, float *out, long long rows, long long n) { lse<float>(x, out, rows, n); }
extern "C" __global__ void loss_lse_f64(const double *x, double *out, long long rows, long long n) { lse<double>(x, out, rows, n); }
extern "C" __global__ void loss_nll_f32(const float *x, const long long *t, float *out, long long rows, long long n, long long ignore) { nll<float>(x, t, out, rows, n, ignore); }
extern "C" __global__ void loss_nll_f64(const double *x, const long long *t, double *out, long long rows, long long n, long long ignore) { nll<double>(x, t, out, rows, n, ignore); }
extern "C" __global__ void loss_lse_grad_f32(const float *x, const float *l, const float *u, float *g, long long rows, long long n) { lse_grad<float>(x, l, u, g, rows, n); }
extern "C" __global__ void loss_lse_grad_f64(const double *x, const double *l, const double *u, double *g, long long rows, long long n) { lse_grad<double>(x, l, u, g, rows, n); }
extern "C" __global__ void loss_nll_grad_f32(const float *x, const float *u, const long long *t, float *g, long long rows, long long n, long long ignore) { nll_grad<float>(x, u, t, g, rows, n, ignore); }
extern "C" __global__ void loss_nll_grad_f64(const double *x, const double *u, const long long *t, double *g, long long rows, long long n, long long ignore) { nll_grad<double>(x, u, t, g, rows, n, ignore); }
extern "C" __global__ void loss_mask_f32(const float *v, const long long *t, float *out, long long rows, long long ignore) { mask<float>(v, t, out, rows, ignore); }
extern "C" __global__ void loss_mask_f64(const double *v, const long long *t, double *out, long long rows, long long ignore) { mask<double>(v, t, out, rows, ignore); }
