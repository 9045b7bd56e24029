// RoIAlign on the GPU: the CUDA twins of RoIAlignForward and
// RoIAlignTranspose (internal/cpu/roialign.go), float (f32) and double (f64).
//
// The host validates the boxes and computes each box's sampling grid with the
// CPU code (RoIAlignGrids), packed as sampling.cuh describes. The kernels
// repeat the CPU's arithmetic in the same order (compiled with -fmad=false),
// merging the weights of a bin's taps on one pixel as the CPU does
// (PixelSum), so they give the CPU's results. No atomics: each transpose thread owns one
// (image, channel) plane and visits the boxes, bins and points in the CPU's
// order, so sums are deterministic.

#include "sampling.cuh"

// out[k, c, ph, pw]: every point reads its four pixels (an outside point
// pixel 0 with weight 0, as torchvision's forward and the CPU kernel); the
// merged list restarts where the CPU's chunks of CHUNK points of the box do.
template <typename T>
__device__ void roiAlignForward(const T *x, const T *bp, T *out, long long K, long long C, long long H, long long W, long long PH, long long PW) {
	LOOP(i, K * C * PH * PW) {
		long long pw = i % PW, ph = i / PW % PH, c = i / (PW * PH) % C, k = i / (PW * PH * C);
		const T *b = bp + 8 * k;
		long long n = (long long)b[0], gh = (long long)b[5], gw = (long long)b[6], per = gh * gw;
		long long s0 = (long long)(ph * PW + pw) * per;
		PixelSum<T> s;
		s.init(x + ((long long)n * C + c) * H * W, 0, 0);
		for (long long q = 0; q < per; q++) {
			if (q > 0 && (s0 + q) % CHUNK == 0) s.flush();
			Tap<T> t = samplePoint<T>(b, ph, pw, q / gw, q % gw, H, W);
			for (long long j = 0; j < 4; j++) s.put(t.pos[j], t.w[j]);
		}
		s.flush();
		out[i] = s.acc / b[7];
	}
}

// dst[n, c] plane by one thread: boxes of image n in order, bins and points
// in order, merged per bin and chunk as the forward; outside points add
// nothing.
template <typename T>
__device__ void roiAlignTranspose(const T *g, const T *bp, T *dst, long long K, long long N, long long C, long long H, long long W, long long PH, long long PW) {
	LOOP(i, N * C) {
		long long n = i / C, c = i % C;
		T *d = zeroedPlane<T>(dst, i, H * W);
		for (long long k = 0; k < K; k++) {
			const T *b = bp + 8 * k;
			if ((long long)b[0] != n) continue;
			long long gh = (long long)b[5], gw = (long long)b[6], per = gh * gw;
			for (long long ph = 0; ph < PH; ph++)
				for (long long pw = 0; pw < PW; pw++) {
					long long s0 = (long long)(ph * PW + pw) * per;
					PixelSum<T> s;
					s.init(0, d, g[(((long long)k * C + c) * PH + ph) * PW + pw] / b[7]);
					for (long long q = 0; q < per; q++) {
						if (q > 0 && (s0 + q) % CHUNK == 0) s.flush();
						Tap<T> t = samplePoint<T>(b, ph, pw, q / gw, q % gw, H, W);
						if (t.outside) continue;
						for (long long j = 0; j < 4; j++) s.put(t.pos[j], t.w[j]);
					}
					s.flush();
				}
		}
	}
}

FWD(roialign_forward_f32, roiAlignForward, float)
FWD(roialign_forward_f64, roiAlignForward, double)
ADJ(roialign_transpose_f32, roiAlignTranspose, float)
ADJ(roialign_transpose_f64, roiAlignTranspose, double)
