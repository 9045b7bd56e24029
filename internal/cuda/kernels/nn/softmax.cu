// Softmax, LogSoftmax, their fused gradients SoftmaxGrad and LogSoftmaxGrad,
// and the axis sum and broadcast of the gradients' own gradients on the GPU
// (nn/softmax.go); float (f32) and double (f64). A shape splits
// at the axis into outer × n × inner: line (o, i) is the n elements
// (o·n + k)·inner + i.

#include "common.cuh"

// rows computes nn's softmaxKernel: one thread per line, in double (the
// maximum m, NaN taking over, 0 for a line of −Inf; Σ exp(x − m) in order;
// then exp(x − m)/s, or x − m − log s with log), rounded to T. A line
// holding NaN or +Inf, or only −Inf, comes out all NaN, as the Go kernel's.
// Not bitwise: the Go kernel computes in T with internal/vmath's exp.
template <typename T> __device__ void rows(const T *x, T *y, long long outer, long long n, long long inner, long long log_) {
	LOOP(line, outer * inner) {
		long long o = line / inner, i = line - o * inner;
		long long base = o * n * inner + i;
		double m = -inf();
		for (long long k = 0; k < n; k++) {
			double v = (double)x[base + k * inner];
			if (v > m || v != v) m = v;
		}
		if (m == -inf()) m = 0;
		double s = 0;
		for (long long k = 0; k < n; k++) s += exp((double)x[base + k * inner] - m);
		double ls = log(s);
		for (long long k = 0; k < n; k++) {
			double v = (double)x[base + k * inner] - m;
			y[base + k * inner] = log_ ? (T)(v - ls) : (T)(exp(v) / s);
		}
	}
}

// grad computes nn's softmaxGradKernel (SoftmaxGrad, or LogSoftmaxGrad
// with log_) from the op's output y and upstream u: one thread per line,
// walking it in order, in double, rounded to T. SoftmaxGrad:
// d = Σ_k u·y, then y ⊙ (u − d) (vmath.Dot, vmath.MulSub). LogSoftmaxGrad:
// a line whose max(y) is NaN or > 0 (not a log-probability) is all NaN;
// else c = Σ_k u, then u − exp(y)·c (vmath.ExpSum, vmath.SubMul).
// Not bitwise: the Go kernel sums in T across vector lanes (and rounds d
// to T), with internal/vmath's exp and an FMA where the CPU has one.
template <typename T> __device__ void grad(const T *y, const T *u, T *g, long long outer, long long n, long long inner, long long log_) {
	LOOP(line, outer * inner) {
		long long o = line / inner, i = line - o * inner;
		long long base = o * n * inner + i;
		if (!log_) {
			double d = 0;
			for (long long k = 0; k < n; k++) d += (double)u[base + k * inner] * (double)y[base + k * inner];
			for (long long k = 0; k < n; k++) {
				long long e = base + k * inner;
				g[e] = (T)((double)y[e] * ((double)u[e] - d));
			}
			continue;
		}
		bool bad = false;
		double c = 0;
		for (long long k = 0; k < n; k++) {
			double v = (double)y[base + k * inner];
			if (v > 0 || v != v) bad = true;
			c += (double)u[base + k * inner];
		}
		for (long long k = 0; k < n; k++) {
			long long e = base + k * inner;
			g[e] = bad ? (T)__longlong_as_double(0x7ff8000000000000LL) : (T)((double)u[e] - exp((double)y[e]) * c);
		}
	}
}

// axis_sum equals nn's axisSumKernel: out[o, i] = Σ_k x[o, k, i] in T from
// 0, k in order; bitwise.
template <typename T> __device__ void axis_sum(const T *x, T *out, long long outer, long long n, long long inner) {
	LOOP(e, outer * inner) {
		long long o = e / inner, i = e - o * inner;
		T acc = 0;
		for (long long k = 0; k < n; k++) acc += x[(o * n + k) * inner + i];
		out[e] = acc;
	}
}

// axis_broadcast equals nn's axisBroadcastKernel: out[o, k, i] = s[o, i];
// bitwise.
template <typename T> __device__ void axis_broadcast(const T *s, T *out, long long outer, long long n, long long inner) {
	LOOP(e, outer * n * inner) {
		long long i = e % inner, o = e / (n * inner);
		out[e] = s[o * inner + i];
	}
}

extern "C" __global__ void softmax_rows_f32(const float *x, float *y, long long outer, long long n, long long inner, long long log_) { rows<float>(x, y, outer, n, inner, log_); }
extern "C" __global__ void softmax_rows_f64(const double *x, double *y, long long outer, long long n, long long inner, long long log_) { rows<double>(x, y, outer, n, inner, log_); }
extern "C" __global__ void softmax_grad_f32(const float *y, const float *u, float *g, long long outer, long long n, long long inner, long long log_) { grad<float>(y, u, g, outer, n, inner, log_); }
extern "C" __global__ void softmax_grad_f64(const double *y, const double *u, double *g, long long outer, long long n, long long inner, long long log_) { grad<double>(y, u, g, outer, n, inner, log_); }
extern "C" __global__ void softmax_axis_sum_f32(const float *x, float *out, long long outer, long long n, long long inner) { axis_sum<float>(x, out, outer, n, inner); }
extern "C" __global__ void softmax_axis_sum_f64(const double *x, double *out, long long outer, long long n, long long inner) { axis_sum<double>(x, out, outer, n, inner); }
extern "C" __global__ void softmax_axis_broadcast_f32(const float *s, float *out, long long outer, long long n, long long inner) { axis_broadcast<float>(s, out, outer, n, inner); }
extern "C" __global__ void softmax_axis_broadcast_f64(const double *s, double *out, long long outer, long long n, long long inner) { axis_broadcast<double>(s, out, outer, n, inner); }
