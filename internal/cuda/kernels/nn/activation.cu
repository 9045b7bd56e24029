// The activations' own ops on the GPU (nn/activation.go): the stable
// Sigmoid, Tanh, LeakyReLU, its slope and gradient, Erf (GELU's). Elementwise; float (f32)
// and double (f64).

#include "common.cuh"

// sigmoid equals nn's sigmoidKernel: 1/(1 + exp(−x)) for x ≥ 0, else
// e/(1 + e) with e = exp(x), in double, rounded to T. Not bitwise: CUDA's
// exp may differ from Go's math.Exp in the last place.
template <typename T> __device__ void sigmoid(const T *x, T *out, long long n) {
	LOOP(i, n) {
		double v = (double)x[i];
		if (v >= 0) {
			out[i] = (T)(1 / (1 + exp(-v)));
		} else {
			double e = exp(v);
			out[i] = (T)(e / (1 + e));
		}
	}
}

// tanh_ is nn's tanhKernel up to rounding: tanh in double, rounded to T,
// where the CPU takes Go's math.Tanh (float64) and math32.Tanh (float32,
// computed in float): not bitwise, the last places may differ.
template <typename T> __device__ void tanh_(const T *x, T *out, long long n) {
	LOOP(i, n) out[i] = (T)tanh((double)x[i]);
}

// leaky equals nn's leakyKernel: x where x > 0 or NaN, 0 where the slope
// is 0 (zero is not 0), slope·x elsewhere (slope rounded to T); bitwise.
template <typename T> __device__ void leaky(const T *x, T *out, T slope, long long zero, long long n) {
	LOOP(i, n) {
		T v = x[i];
		out[i] = (v > 0 || v != v) ? v : zero ? (T)0 : slope * v;
	}
}

// leaky_slope equals nn's slopeKernel: 1 where x > 0, slope elsewhere (NaN
// included); bitwise.
template <typename T> __device__ void leaky_slope(const T *x, T *out, T slope, long long n) {
	LOOP(i, n) out[i] = x[i] > 0 ? (T)1 : slope;
}

// leaky_grad equals nn's leakyGradKernel: u·slope(x), slope(x) as
// leaky_slope decides it, the product rounded once; bitwise (a NaN's
// payload aside: the GPU's NaN is canonical).
template <typename T> __device__ void leaky_grad(const T *x, const T *u, T *out, T slope, long long n) {
	LOOP(i, n) out[i] = u[i] * (x[i] > 0 ? (T)1 : slope);
}

// erf_ equals nn's erfKernel: erf in double, rounded to T. Not bitwise:
// CUDA's erf may differ from Go's math.Erf in the last places.
template <typename T> __device__ void erf_(const T *x, T *out, long long n) {
	LOOP(i, n) out[i] = (T)erf((double)x[i]);
}

extern "C" __global__ void act_sigmoid_f32(const float *x, float *out, long long n) { sigmoid<float>(x, out, n); }
extern "C" __global__ void act_sigmoid_f64(const double *x, double *out, long long n) { sigmoid<double>(x, out, n); }
extern "C" __global__ void act_tanh_f32(const float *x, float *out, long long n) { tanh_<float>(x, out, n); }
extern "C" __global__ void act_tanh_f64(const double *x, double *out, long long n) { tanh_<double>(x, out, n); }
extern "C" __global__ void act_leaky_f32(const float *x, float *out, float slope, long long zero, long long n) { leaky<float>(x, out, slope, zero, n); }
extern "C" __global__ void act_leaky_f64(const double *x, double *out, double slope, long long zero, long long n) { leaky<double>(x, out, slope, zero, n); }
extern "C" __global__ void act_leaky_slope_f32(const float *x, float *out, float slope, long long n) { leaky_slope<float>(x, out, slope, n); }
extern "C" __global__ void act_leaky_slope_f64(const double *x, double *out, double slope, long long n) { leaky_slope<double>(x, out, slope, n); }
extern "C" __global__ void act_leaky_grad_f32(const float *x, const float *u, float *out, float slope, long long n) { leaky_grad<float>(x, u, out, slope, n); }
extern "C" __global__ void act_leaky_grad_f64(const double *x, const double *u, double *out, double slope, long long n) { leaky_grad<double>(x, u, out, slope, n); }
extern "C" __global__ void act_erf_f32(const float *x, float *out, long long n) { erf_<float>(x, out, n); }
extern "C" __global__ void act_erf_f64(const double *x, double *out, long long n) { erf_<double>(x, out, n); }
