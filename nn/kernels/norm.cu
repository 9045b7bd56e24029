// The per-channel ops of nn's convolutions and normalisations on the GPU
// (nn/conv.go's BiasAdd, ChannelSum and ChannelBroadcast, nn/batchnorm.go's
// ChannelMean), on x [N, C, L]; float (f32) and double (f64).

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
