// PSRoIAlign on the GPU: the CUDA twins of PSRoIAlignForward and
// PSRoIAlignTranspose (internal/cpu/psroialign.go), float (f32) and double
// (f64). The host computes each box's grid with PSRoIAlignGrids, packed as
// sampling.cuh describes; the kernels repeat the CPU's arithmetic in its
// order, without atomics.

#include "sampling.cuh"

// PSRoIAlign forward: out[k, co, bin] from input channel co·PH·PW + bin;
// outside points are skipped; partial sums of CHUNK-point chunks are combined
// as the CPU kernel combines them.
template <typename T>
__device__ void psRoIAlignForward(const T *x, const T *bp, T *out, long long K, long long C, long long H, long long W, long long PH, long long PW) {
	long long nb = PH * PW, cOut = C / nb;
	LOOP(i, K * cOut * nb) {
		long long bin = i % nb, co = i / nb % cOut, k = i / (nb * cOut);
		long long ph = bin / PW, pw = bin % PW;
		const T *b = bp + 8 * k;
		long long n = (long long)b[0], gh = (long long)b[5], gw = (long long)b[6], per = gh * gw;
		const T *xp = x + ((long long)n * C + co * nb + bin) * H * W;
		T v = 0, cum = 0;
		bool started = false;
		for (long long s = 0; s < per; s++) {
			if (s > 0 && (bin * per + s) % CHUNK == 0) {
				cum = started ? v + cum : v;
				started = true;
				v = 0;
			}
			Tap<T> t = samplePoint<T>(b, ph, pw, s / gw, s % gw, H, W);
			if (t.outside) continue;
			v += t.w[0] * xp[t.pos[0]] + t.w[1] * xp[t.pos[1]] + t.w[2] * xp[t.pos[2]] + t.w[3] * xp[t.pos[3]];
		}
		if (started) v += cum;
		out[i] = v / b[7];
	}
}

// PSRoIAlign transpose: the dst[n, ci] plane by one thread, boxes in order.
template <typename T>
__device__ void psRoIAlignTranspose(const T *g, const T *bp, T *dst, long long K, long long N, long long C, long long H, long long W, long long PH, long long PW) {
	long long nb = PH * PW, cOut = C / nb;
	LOOP(i, N * C) {
		long long n = i / C, ci = i % C, co = ci / nb, bin = ci % nb;
		long long ph = bin / PW, pw = bin % PW;
		T *d = zeroedPlane<T>(dst, i, H * W);
		for (long long k = 0; k < K; k++) {
			const T *b = bp + 8 * k;
			if ((long long)b[0] != n) continue;
			long long gh = (long long)b[5], gw = (long long)b[6];
			T gv = g[((long long)k * cOut + co) * nb + bin];
			for (long long iy = 0; iy < gh; iy++)
				for (long long ix = 0; ix < gw; ix++) {
					Tap<T> t = samplePoint<T>(b, ph, pw, iy, ix, H, W);
					if (t.outside) continue;
					for (long long j = 0; j < 4; j++) d[t.pos[j]] += gv * t.w[j] / b[7];
				}
		}
	}
}

FWD(psroialign_forward_f32, psRoIAlignForward, float)
FWD(psroialign_forward_f64, psRoIAlignForward, double)
ADJ(psroialign_transpose_f32, psRoIAlignTranspose, float)
ADJ(psroialign_transpose_f64, psRoIAlignTranspose, double)
