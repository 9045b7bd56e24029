// Deformable sampling on the GPU: the CUDA twins of the members S_ab, T_ab,
// C_ab and O_ab (internal/cpu/deformconv.go: deformSample, deformScatter,
// deformContract, deformOffsetGrad) and of OffsetEmbed / OffsetSplit, float
// (f32) and double (f64). (a, b) is the derivative order of the bilinear
// weight; every kernel recomputes its taps with deformTap's arithmetic, in the
// CPU's order (compiled with -fmad=false). No atomics: T's threads each own
// one (image, channel) plane and visit k, l in the CPU's order.

#include "common.cuh"

struct Geom {
	long long n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw, ho, wo, og;
};

template <typename T> struct DTap {
	long long pos[4];
	T w[4];
};

// deformTap: sample tr·L + l of the mask layout, weights of order (a, b),
// times mask[tr·L + l] when mask is not null (as the CPU's deformTaps, which
// keeps the weights of neighbours outside the image: they read zeros of
// its padded frame; here pos is −1).
template <typename T> __device__ DTap<T> deformTap(const Geom &g, const T *offset, const T *mask, long long tr, long long l, long long a, long long b) {
	DTap<T> t;
	for (long long j = 0; j < 4; j++) {
		t.pos[j] = -1;
		t.w[j] = 0;
	}
	long long K = g.kh * g.kw, L = g.ho * g.wo;
	long long k = tr % K, i = k / g.kw, j = k % g.kw, ho = l / g.wo, wo = l % g.wo;
	T y = (T)(ho * g.sh - g.ph + i * g.dh) + offset[(long long)tr * 2 * L + l];
	T x = (T)(wo * g.sw - g.pw + j * g.dw) + offset[((long long)tr * 2 + 1) * L + l];
	if (!(y >= -1 && y < (T)g.h && x >= -1 && x < (T)g.w)) {
		if (mask)
			for (long long j = 0; j < 4; j++) t.w[j] *= mask[(long long)tr * L + l];
		return t;
	}
	long long yl = (long long)floor((double)y), xl = (long long)floor((double)x);
	T ly = y - (T)yl, lx = x - (T)xl;
	T hy = 1 - ly, hx = 1 - lx;
	if (a == 0 && b == 0) {
		t.w[0] = hy * hx; t.w[1] = hy * lx; t.w[2] = ly * hx; t.w[3] = ly * lx;
	} else if (a == 1 && b == 0) {
		t.w[0] = -hx; t.w[1] = -lx; t.w[2] = hx; t.w[3] = lx;
	} else if (a == 0 && b == 1) {
		t.w[0] = -hy; t.w[1] = hy; t.w[2] = -ly; t.w[3] = ly;
	} else {
		t.w[0] = 1; t.w[1] = -1; t.w[2] = -1; t.w[3] = 1;
	}
	if (mask)
		for (long long j = 0; j < 4; j++) t.w[j] *= mask[(long long)tr * L + l];
	long long ys[4] = {yl, yl, yl + 1, yl + 1}, xs[4] = {xl, xl + 1, xl, xl + 1};
	for (long long c = 0; c < 4; c++)
		if (ys[c] >= 0 && ys[c] < g.h && xs[c] >= 0 && xs[c] < g.w) t.pos[c] = ys[c] * g.w + xs[c];
	return t;
}

// dot is padTap.dot: the four products, a neighbour outside the image
// reading 0, summed left to right from the first.
template <typename T> __device__ T dot(const DTap<T> &t, const T *x) {
	T p[4];
	for (long long j = 0; j < 4; j++) p[j] = t.w[j] * (t.pos[j] >= 0 ? x[t.pos[j]] : (T)0);
	return ((p[0] + p[1]) + p[2]) + p[3];
}

// S_ab: cols[c, k, n, l] = Σ mask·weight · input[n, c, corner].
template <typename T> __device__ void deformSample(Geom g, const T *x, const T *off, const T *mask, T *cols, long long a, long long b) {
	long long K = g.kh * g.kw, L = g.ho * g.wo, cg = g.c / g.og, plane = g.h * g.w;
	LOOP(i, g.c * K * g.n * L) {
		long long l = i % L, n = i / L % g.n, k = i / (L * g.n) % K, c = i / (L * g.n * K);
		long long tr = (n * g.og + c / cg) * K + k;
		cols[i] = dot<T>(deformTap<T>(g, off, mask, tr, l, a, b), x + ((long long)n * g.c + c) * plane);
	}
}

// T_ab: the dst[n, c] plane by one thread, k then l in order.
template <typename T> __device__ void deformScatter(Geom g, const T *cols, const T *off, const T *mask, T *dst, long long a, long long b) {
	long long K = g.kh * g.kw, L = g.ho * g.wo, cg = g.c / g.og, plane = g.h * g.w;
	LOOP(i, g.n * g.c) {
		long long n = i / g.c, c = i % g.c;
		T *d = zeroedPlane<T>(dst, i, plane);
		for (long long k = 0; k < K; k++) {
			long long tr = (n * g.og + c / cg) * K + k;
			const T *col = cols + (((long long)c * K + k) * g.n + n) * L;
			for (long long l = 0; l < L; l++) {
				DTap<T> t = deformTap<T>(g, off, mask, tr, l, a, b);
				T v = col[l];
				for (long long j = 0; j < 4; j++)
					if (t.pos[j] >= 0) d[t.pos[j]] += t.w[j] * v;
			}
		}
	}
}

// C_ab: dst[n, g, k, l] = Σ_{c in group g} cols[c, k, n, l] · Σ weight · input.
template <typename T> __device__ void deformContract(Geom g, const T *x, const T *off, const T *cols, T *dst, long long a, long long b) {
	long long K = g.kh * g.kw, L = g.ho * g.wo, cg = g.c / g.og, plane = g.h * g.w;
	LOOP(i, g.n * g.og * K * L) {
		long long l = i % L, tr = i / L, k = tr % K, n = tr / K / g.og, grp = tr / K % g.og;
		DTap<T> t = deformTap<T>(g, off, (const T *)0, tr, l, a, b);
		T v = 0;
		for (long long c = grp * cg; c < (grp + 1) * cg; c++)
			v += cols[(((long long)c * K + k) * g.n + n) * L + l] * dot<T>(t, x + ((long long)n * g.c + c) * plane);
		dst[i] = v;
	}
}

// O_ab: y and x halves of the offset gradient (orders (a+1, b) and (a, b+1);
// an order-2 half is zero), each times the mask.
template <typename T> __device__ void deformOffsetGrad(Geom g, const T *x, const T *off, const T *cols, const T *mask, T *dst, long long a, long long b) {
	long long K = g.kh * g.kw, L = g.ho * g.wo, cg = g.c / g.og, plane = g.h * g.w;
	LOOP(i, g.n * g.og * K * L) {
		long long l = i % L, tr = i / L, k = tr % K, n = tr / K / g.og, grp = tr / K % g.og;
		bool hy = a + 1 <= 1, hx = b + 1 <= 1;
		DTap<T> ty, tx;
		if (hy) ty = deformTap<T>(g, off, (const T *)0, tr, l, a + 1, b);
		if (hx) tx = deformTap<T>(g, off, (const T *)0, tr, l, a, b + 1);
		T oy = 0, ox = 0;
		for (long long c = grp * cg; c < (grp + 1) * cg; c++) {
			T col = cols[(((long long)c * K + k) * g.n + n) * L + l];
			const T *xp = x + ((long long)n * g.c + c) * plane;
			if (hy) oy += col * dot<T>(ty, xp);
			if (hx) ox += col * dot<T>(tx, xp);
		}
		if (mask) {
			T m = mask[(long long)tr * L + l];
			oy *= m;
			ox *= m;
		}
		dst[(2LL * tr) * L + l] = oy;
		dst[(2LL * tr + 1) * L + l] = ox;
	}
}

// offsetEmbed: dst (offset layout) holds src (mask layout) in its `which`
// slots, zeros elsewhere; offsetSplit reads them back.
template <typename T> __device__ void offsetEmbed(const T *src, T *dst, long long rows, long long L, long long which) {
	LOOP(i, 2 * rows * L) {
		long long l = i % L, r2 = i / L;
		dst[i] = r2 % 2 == which ? src[(long long)(r2 / 2) * L + l] : (T)0;
	}
}
template <typename T> __device__ void offsetSplit(const T *src, T *dst, long long rows, long long L, long long which) {
	LOOP(i, rows * L) {
		long long l = i % L, r = i / L;
		dst[i] = src[(2LL * r + which) * L + l];
	}
}

// The geometry travels as 15 long long scalars (cpu.DeformGeom's order), one kernel
// parameter each: gorgonia.org/cu copies 8 bytes per parameter, so a struct
// parameter would arrive truncated.
#define GEOM_PARAMS                                                                                                          \
	long long gn, long long gc, long long gh, long long gw, long long gkh, long long gkw, long long gsh, long long gsw, long long gph, long long gpw, long long gdh, long long gdw, long long gho, long long gwo, \
		long long gog
#define GEOM {gn, gc, gh, gw, gkh, gkw, gsh, gsw, gph, gpw, gdh, gdw, gho, gwo, gog}

#define KERNELS(t, T)                                                                                                        \
	extern "C" __global__ void deform_s_##t(GEOM_PARAMS, const T *x, const T *off, const T *mask, T *out, long long a, long long b) {    \
		Geom g = GEOM;                                                                                                     \
		deformSample<T>(g, x, off, mask, out, a, b);                                                                      \
	}                                                                                                                        \
	extern "C" __global__ void deform_t_##t(GEOM_PARAMS, const T *cols, const T *off, const T *mask, T *out, long long a, long long b) { \
		Geom g = GEOM;                                                                                                     \
		deformScatter<T>(g, cols, off, mask, out, a, b);                                                                  \
	}                                                                                                                        \
	extern "C" __global__ void deform_c_##t(GEOM_PARAMS, const T *x, const T *off, const T *cols, T *out, long long a, long long b) {    \
		Geom g = GEOM;                                                                                                     \
		deformContract<T>(g, x, off, cols, out, a, b);                                                                    \
	}                                                                                                                        \
	extern "C" __global__ void deform_o_##t(GEOM_PARAMS, const T *x, const T *off, const T *cols, const T *mask, T *out,     \
	                                        long long a, long long b) {                                                                  \
		Geom g = GEOM;                                                                                                     \
		deformOffsetGrad<T>(g, x, off, cols, mask, out, a, b);                                                            \
	}                                                                                                                        \
	extern "C" __global__ void offset_embed_##t(const T *src, T *dst, long long rows, long long L, long long which) {                        \
		offsetEmbed<T>(src, dst, rows, L, which);                                                                         \
	}                                                                                                                        \
	extern "C" __global__ void offset_split_##t(const T *src, T *dst, long long rows, long long L, long long which) {                        \
		offsetSplit<T>(src, dst, rows, L, which);                                                                         \
	}

KERNELS(f32, float)
KERNELS(f64, double)
