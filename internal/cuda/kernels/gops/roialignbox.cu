// The box-derivative members F_ab (a + b >= 1) of RoIAlign and PSRoIAlign
// on the GPU and their transposes: the CUDA twins of boxDerivFamily's deriv
// and transpose (internal/cpu/roialignbox.go), float (f32) and double (f64).
//
// The host validates the boxes and grids them with the CPU code, packed as
// 10 values per box: the 8 of sampling.cuh (batch index, startY, startX,
// binH, binW, gh, gw, count), then clampY and clampX (1 when the unaligned
// roi height or width was clamped to 1: coefficients (s, 0)). Output channel
// c of bin (ph, pw) reads input channel c·cStride + bin·binStride (RoIAlign:
// cStride 1, binStride 0; PSRoIAlign: cStride PH·PW, binStride 1). The
// kernels repeat the CPU's arithmetic in its order (compiled with
// -fmad=false). No atomics: the member runs one thread per output element,
// summing the samples in grid order; the transpose one thread per input
// element, visiting boxes, bins, samples and taps in the CPU kernel's order
// (sample rows whose taps miss the element's row are skipped first), so both
// give the CPU's results bitwise. Sizes and indices are long long.

#include "sampling.cuh"

#define PACK 10

// DSide is one coordinate of roiAlignDerivTap: neighbours and factors.
template <typename T> struct DSide {
	long long lo, hi;
	T f0, f1;
};

// derivSide of internal/cpu/roialignbox.go: the bilinear rule's clamps;
// derivative order d (0 or 1); a clamped coordinate has derivative 0.
template <typename T> __device__ DSide<T> derivSide(T y, long long n, long long d) {
	DSide<T> s;
	bool clamped = y <= 0;
	if (y <= 0) y = 0; // Go's max(y, 0): -0 becomes +0
	s.lo = (long long)y;
	if (s.lo >= n - 1) {
		s.lo = s.hi = n - 1;
		y = (T)(n - 1);
		clamped = true;
	} else {
		s.hi = s.lo + 1;
	}
	if (d == 0) {
		T l = y - (T)s.lo;
		s.f0 = 1 - l;
		s.f1 = l;
	} else if (clamped) {
		s.f0 = s.f1 = 0;
	} else {
		s.f0 = -1;
		s.f1 = 1;
	}
	return s;
}

// sampleY and sampleX are the coordinates of RoIAlignBox.samplePoint.
template <typename T> __device__ T sampleY(const T *b, long long ph, long long iy) {
	return b[1] + (T)ph * b[3] + (T)((float)iy + 0.5f) * b[3] / (T)(long long)b[5];
}
template <typename T> __device__ T sampleX(const T *b, long long pw, long long ix) {
	return b[2] + (T)pw * b[4] + (T)((float)ix + 0.5f) * b[4] / (T)(long long)b[6];
}

// coefPair is newRoIAlignBoxCoefs' pair for bin p (of n), grid point i (of
// grid): ∂/∂(start), ∂/∂(end).
template <typename T> __device__ void coefPair(T c[2], long long p, long long i, long long grid, long long n, T scale, bool clamped) {
	if (clamped) {
		c[0] = scale;
		c[1] = 0;
		return;
	}
	T tau = ((T)p + ((T)i + (T)0.5) / (T)grid) / (T)n;
	c[0] = scale * (1 - tau);
	c[1] = scale * tau;
}

// coefOf is coef[j] of boxDerivCoefs.
template <typename T> __device__ T coefOf(long long j, long long a, long long b, long long xMajor, const T cy[2], const T cx[2]) {
	if (a == 1 && b == 0) return cy[j];
	if (a == 0 && b == 1) return cx[j];
	if (xMajor) return cx[j >> 1] * cy[j & 1];
	return cy[j >> 1] * cx[j & 1];
}

// inside is roiAlignDerivTap's test, one coordinate at a time (false for NaN).
template <typename T> __device__ bool inside(T v, long long n) { return v >= -1 && v <= (T)n; }

// sampleSide sets s to derivSide(v, n, d) of the sample coordinate v, or
// is false (s untouched) where v lies outside (inside's test).
template <typename T> __device__ bool sampleSide(T v, long long n, long long d, DSide<T> &s) {
	if (!inside<T>(v, n)) return false;
	s = derivSide<T>(v, n, d);
	return true;
}

// sampleHits is sampleSide where one of s's two taps is q (the transpose's
// pixel row or column), else false.
template <typename T> __device__ bool sampleHits(T v, long long n, long long d, long long q, DSide<T> &s) {
	return sampleSide<T>(v, n, d, s) && (s.lo == q || s.hi == q);
}

// out[k, j·cOut + c, ph, pw]: one thread per element, samples in grid order.
template <typename T>
__device__ void boxDeriv(const T *x, const T *bp, T *out, long long K, long long C, long long H, long long W, long long PH, long long PW, long long cOut,
			 long long cStride, long long binStride, long long a, long long b, long long xMajor, T scale) {
	long long nb = PH * PW, J = 1 << (a + b);
	LOOP(i, K * J * cOut * nb) {
		long long bin = i % nb, c = i / nb % cOut, j = i / (nb * cOut) % J, k = i / (nb * cOut * J);
		long long ph = bin / PW, pw = bin % PW;
		const T *bx = bp + PACK * k;
		long long gh = (long long)bx[5], gw = (long long)bx[6];
		if (gh == 0 || gw == 0) {
			out[i] = 0;
			continue;
		}
		const T *p = x + ((long long)bx[0] * C + (long long)bin * binStride + (long long)c * cStride) * H * W;
		T acc = 0;
		for (long long iy = 0; iy < gh; iy++) {
			DSide<T> sy;
			if (!sampleSide<T>(sampleY<T>(bx, ph, iy), H, a, sy)) continue;
			T cy[2];
			coefPair<T>(cy, ph, iy, gh, PH, scale, bx[8] != 0);
			for (long long ix = 0; ix < gw; ix++) {
				DSide<T> sx;
				if (!sampleSide<T>(sampleX<T>(bx, pw, ix), W, b, sx)) continue;
				T v = sy.f0 * sx.f0 * p[sy.lo * W + sx.lo] + sy.f0 * sx.f1 * p[sy.lo * W + sx.hi] +
				      sy.f1 * sx.f0 * p[sy.hi * W + sx.lo] + sy.f1 * sx.f1 * p[sy.hi * W + sx.hi];
				T cx[2];
				coefPair<T>(cx, pw, ix, gw, PW, scale, bx[9] != 0);
				acc += coefOf<T>(j, a, b, xMajor, cy, cx) * v;
			}
		}
		out[i] = acc / bx[7];
	}
}

// dst[n, ci, py, px]: one thread per element; boxes of image n, the bins
// reading channel ci, samples and taps in the CPU's order.
template <typename T>
__device__ void boxDerivTranspose(const T *g, const T *bp, T *dst, long long K, long long N, long long C, long long H, long long W, long long PH, long long PW,
				  long long cOut, long long cStride, long long binStride, long long a, long long b, long long xMajor, T scale) {
	long long nb = PH * PW, J = 1 << (a + b);
	LOOP(i, N * C * H * W) {
		long long px = i % W, py = i / W % H, ci = i / (W * H) % C, n = i / (W * H * C);
		long long me = py * W + px;
		// the output channel c and bins [b0, b1) that read ci
		long long c = ci, b0 = 0, b1 = nb;
		if (binStride != 0) {
			c = ci / cStride;
			b0 = ci % cStride;
			b1 = b0 + 1;
		}
		T acc = 0;
		if (c < cOut)
			for (long long k = 0; k < K; k++) {
				const T *bx = bp + PACK * k;
				if ((long long)bx[0] != n) continue;
				long long gh = (long long)bx[5], gw = (long long)bx[6];
				if (gh == 0 || gw == 0) continue;
				for (long long bin = b0; bin < b1; bin++) {
					long long ph = bin / PW, pw = bin % PW;
					for (long long iy = 0; iy < gh; iy++) {
						DSide<T> sy;
						if (!sampleHits<T>(sampleY<T>(bx, ph, iy), H, a, py, sy)) continue;
						T cy[2];
						coefPair<T>(cy, ph, iy, gh, PH, scale, bx[8] != 0);
						for (long long ix = 0; ix < gw; ix++) {
							DSide<T> sx;
							if (!sampleHits<T>(sampleX<T>(bx, pw, ix), W, b, px, sx)) continue;
							T cx[2];
							coefPair<T>(cx, pw, ix, gw, PW, scale, bx[9] != 0);
							T v = 0;
							for (long long j = 0; j < J; j++)
								v += coefOf<T>(j, a, b, xMajor, cy, cx) *
								     g[(((long long)k * J + j) * cOut + c) * nb + bin];
							v /= bx[7];
							long long pos[4] = {sy.lo * W + sx.lo, sy.lo * W + sx.hi, sy.hi * W + sx.lo, sy.hi * W + sx.hi};
							T w[4] = {sy.f0 * sx.f0, sy.f0 * sx.f1, sy.f1 * sx.f0, sy.f1 * sx.f1};
							for (long long q = 0; q < 4; q++)
								if (pos[q] == me) acc += w[q] * v;
						}
					}
				}
			}
		dst[i] = acc;
	}
}

#define DERIV(name, T)                                                                                                   \
	extern "C" __global__ void name(const T *x, const T *bp, T *out, long long K, long long C, long long H, long long W, long long PH, long long PW,       \
					long long cOut, long long cStride, long long binStride, long long a, long long b, long long xMajor, T scale) {         \
		boxDeriv<T>(x, bp, out, K, C, H, W, PH, PW, cOut, cStride, binStride, a, b, xMajor, scale);              \
	}
#define DERIVT(name, T)                                                                                                  \
	extern "C" __global__ void name(const T *g, const T *bp, T *dst, long long K, long long N, long long C, long long H, long long W, long long PH, long long PW, \
					long long cOut, long long cStride, long long binStride, long long a, long long b, long long xMajor, T scale) {         \
		boxDerivTranspose<T>(g, bp, dst, K, N, C, H, W, PH, PW, cOut, cStride, binStride, a, b, xMajor, scale);  \
	}

DERIV(roialignbox_deriv_f32, float)
DERIV(roialignbox_deriv_f64, double)
DERIVT(roialignbox_transpose_f32, float)
DERIVT(roialignbox_transpose_f64, double)

// BoxCoordEmbed ([K, 2, 1] → [K, 5]: columns c0 and c0 + 2 from the two
// values, the others zero) and BoxCoordSelect ([K, 5] → [K, 2, 1]), the
// box gradient's column moves (boxCoordSpecs); plain copies.
template <typename T>
__device__ void boxCoords(const T *src, T *dst, long long K, long long c0, long long embed) {
	if (embed) {
		LOOP(i, K * 5) {
			long long r = i / 5, c = i % 5;
			dst[i] = c == c0 ? src[2 * r] : c == c0 + 2 ? src[2 * r + 1] : (T)0;
		}
	} else {
		LOOP(i, K * 2) dst[i] = src[5 * (i / 2) + c0 + 2 * (i % 2)];
	}
}

extern "C" __global__ void roialignbox_coords_f32(const float *src, float *dst, long long K, long long c0, long long embed) { boxCoords<float>(src, dst, K, c0, embed); }
extern "C" __global__ void roialignbox_coords_f64(const double *src, double *dst, long long K, long long c0, long long embed) { boxCoords<double>(src, dst, K, c0, embed); }
