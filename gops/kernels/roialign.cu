// RoIAlign and PSRoIAlign on the GPU: the CUDA twins of roiAlignForward,
// roiAlignTranspose, psRoIAlignForward and psRoIAlignTranspose
// (../roialign_kernels.go, ../psroi_kernels.go), float (f32) and double (f64).
//
// The host validates the boxes and computes each box's sampling grid with the
// CPU code (roiAlignGrids, psRoIAlignGrids), packed as 8 values per box:
// batch index, startY, startX, binH, binW, gh, gw, count. The kernels repeat
// the CPU's arithmetic in the same order (compiled with -fmad=false), so they
// give the CPU's results. No atomics: each transpose thread owns one (image,
// channel) plane and visits the boxes, bins and points in the CPU's order, so
// sums are deterministic.

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define CHUNK 16384 // tapsPerChunk

template <typename T> struct Tap {
	int pos[4];
	T w[4];
	bool outside;
};

// roiAlignTap: torchvision's roi_align bilinear rule (../roialign_kernels.go).
template <typename T> __device__ Tap<T> roiAlignTap(T y, T x, int h, int w) {
	Tap<T> t;
	for (int j = 0; j < 4; j++) {
		t.pos[j] = 0;
		t.w[j] = 0;
	}
	t.outside = true;
	if (!(y >= -1 && y <= (T)h && x >= -1 && x <= (T)w)) return t;
	t.outside = false;
	if (y < 0) y = 0;
	if (x < 0) x = 0;
	int yl = (int)y, xl = (int)x, yh, xh;
	if (yl >= h - 1) {
		yl = yh = h - 1;
		y = (T)(h - 1);
	} else {
		yh = yl + 1;
	}
	if (xl >= w - 1) {
		xl = xh = w - 1;
		x = (T)(w - 1);
	} else {
		xh = xl + 1;
	}
	T ly = y - (T)yl, lx = x - (T)xl;
	T hy = 1 - ly, hx = 1 - lx;
	t.pos[0] = yl * w + xl;
	t.pos[1] = yl * w + xh;
	t.pos[2] = yh * w + xl;
	t.pos[3] = yh * w + xh;
	t.w[0] = hy * hx;
	t.w[1] = hy * lx;
	t.w[2] = ly * hx;
	t.w[3] = ly * lx;
	return t;
}

// samplePoint is point (iy, ix) of bin (ph, pw) of a packed box.
template <typename T> __device__ Tap<T> samplePoint(const T *b, int ph, int pw, int iy, int ix, int h, int w) {
	T y = b[1] + (T)ph * b[3] + (T)((float)iy + 0.5f) * b[3] / (T)(int)b[5];
	T x = b[2] + (T)pw * b[4] + (T)((float)ix + 0.5f) * b[4] / (T)(int)b[6];
	return roiAlignTap<T>(y, x, h, w);
}

// out[k, c, ph, pw]: every point reads its four pixels (an outside point
// pixel 0 with weight 0, as torchvision's forward and the CPU kernel).
template <typename T>
__device__ void roiAlignForward(const T *x, const T *bp, T *out, int K, int C, int H, int W, int PH, int PW) {
	LOOP(i, K * C * PH * PW) {
		int pw = i % PW, ph = i / PW % PH, c = i / (PW * PH) % C, k = i / (PW * PH * C);
		const T *b = bp + 8 * k;
		int n = (int)b[0], gh = (int)b[5], gw = (int)b[6];
		const T *xp = x + ((long long)n * C + c) * H * W;
		T acc = 0;
		for (int iy = 0; iy < gh; iy++)
			for (int ix = 0; ix < gw; ix++) {
				Tap<T> t = samplePoint<T>(b, ph, pw, iy, ix, H, W);
				for (int j = 0; j < 4; j++) acc += t.w[j] * xp[t.pos[j]];
			}
		out[i] = acc / b[7];
	}
}

// dst[n, c] plane by one thread: boxes of image n in order, bins and points
// in order; outside points add nothing.
template <typename T>
__device__ void roiAlignTranspose(const T *g, const T *bp, T *dst, int K, int N, int C, int H, int W, int PH, int PW) {
	LOOP(i, N * C) {
		int n = i / C, c = i % C;
		T *d = dst + (long long)i * H * W;
		for (int p = 0; p < H * W; p++) d[p] = 0;
		for (int k = 0; k < K; k++) {
			const T *b = bp + 8 * k;
			if ((int)b[0] != n) continue;
			int gh = (int)b[5], gw = (int)b[6];
			for (int ph = 0; ph < PH; ph++)
				for (int pw = 0; pw < PW; pw++) {
					T gv = g[(((long long)k * C + c) * PH + ph) * PW + pw] / b[7];
					for (int iy = 0; iy < gh; iy++)
						for (int ix = 0; ix < gw; ix++) {
							Tap<T> t = samplePoint<T>(b, ph, pw, iy, ix, H, W);
							if (t.outside) continue;
							for (int j = 0; j < 4; j++) d[t.pos[j]] += t.w[j] * gv;
						}
				}
		}
	}
}

// PSRoIAlign forward: out[k, co, bin] from input channel co·PH·PW + bin;
// outside points are skipped; partial sums of CHUNK-point chunks are combined
// as the CPU kernel combines them.
template <typename T>
__device__ void psRoIAlignForward(const T *x, const T *bp, T *out, int K, int C, int H, int W, int PH, int PW) {
	int nb = PH * PW, cOut = C / nb;
	LOOP(i, K * cOut * nb) {
		int bin = i % nb, co = i / nb % cOut, k = i / (nb * cOut);
		int ph = bin / PW, pw = bin % PW;
		const T *b = bp + 8 * k;
		int n = (int)b[0], gh = (int)b[5], gw = (int)b[6], per = gh * gw;
		const T *xp = x + ((long long)n * C + co * nb + bin) * H * W;
		T v = 0, cum = 0;
		bool started = false;
		for (int s = 0; s < per; s++) {
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
__device__ void psRoIAlignTranspose(const T *g, const T *bp, T *dst, int K, int N, int C, int H, int W, int PH, int PW) {
	int nb = PH * PW, cOut = C / nb;
	LOOP(i, N * C) {
		int n = i / C, ci = i % C, co = ci / nb, bin = ci % nb;
		int ph = bin / PW, pw = bin % PW;
		T *d = dst + (long long)i * H * W;
		for (int p = 0; p < H * W; p++) d[p] = 0;
		for (int k = 0; k < K; k++) {
			const T *b = bp + 8 * k;
			if ((int)b[0] != n) continue;
			int gh = (int)b[5], gw = (int)b[6];
			T gv = g[((long long)k * cOut + co) * nb + bin];
			for (int iy = 0; iy < gh; iy++)
				for (int ix = 0; ix < gw; ix++) {
					Tap<T> t = samplePoint<T>(b, ph, pw, iy, ix, H, W);
					if (t.outside) continue;
					for (int j = 0; j < 4; j++) d[t.pos[j]] += gv * t.w[j] / b[7];
				}
		}
	}
}

#define FWD(name, fn, T)                                                                                            \
	extern "C" __global__ void name(const T *x, const T *bp, T *out, int K, int C, int H, int W, int PH, int PW) { \
		fn<T>(x, bp, out, K, C, H, W, PH, PW);                                                                    \
	}
#define ADJ(name, fn, T)                                                                                                   \
	extern "C" __global__ void name(const T *g, const T *bp, T *dst, int K, int N, int C, int H, int W, int PH, int PW) { \
		fn<T>(g, bp, dst, K, N, C, H, W, PH, PW);                                                                        \
	}

FWD(roialign_forward_f32, roiAlignForward, float)
FWD(roialign_forward_f64, roiAlignForward, double)
ADJ(roialign_transpose_f32, roiAlignTranspose, float)
ADJ(roialign_transpose_f64, roiAlignTranspose, double)
FWD(psroialign_forward_f32, psRoIAlignForward, float)
FWD(psroialign_forward_f64, psRoIAlignForward, double)
ADJ(psroialign_transpose_f32, psRoIAlignTranspose, float)
ADJ(psroialign_transpose_f64, psRoIAlignTranspose, double)
