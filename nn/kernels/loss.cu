// The losses' own ops on the GPU (nn/loss.go): CrossEntropy's Pick,
// Scatter, PickVec and ScatterVec by an integer target; SmoothL1Loss'
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
