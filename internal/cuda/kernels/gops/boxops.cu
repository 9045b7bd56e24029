// The box functions' small closed ops on the GPU (their CPU loops in
// internal/cpu/boxprims.go and boxops.go; the ops in gops), float (f32)
// and double (f64); launch code in gops/boxops_cuda.go.
//
// boxops_point is every pointwise op of pointSpec (BoxMaximum, BoxMinimum,
// BoxMaxShare, BoxClamp, BoxClampMask, BoxAtan, BoxSigmoid, BoxSoftplus,
// BoxPow, BoxDiv, BoxStopGradient, BoxMasked, BoxBothPositive): function
// fn (PointFn, in the order of Go's pointFn constants, checked by
// boxops_codes_test.go) with parameters p1, p2, computed in double from
// the inputs and rounded to T, as pointOp.eval and pointKernel do.
// Bitwise with the CPU (NaN payloads aside): maximum, minimum, maxShare,
// clamp and its mask, div (a double quotient rounded to float is the
// float quotient: double rounding is innocuous for division), copy,
// masked, bothPositive: IEEE comparisons and operations. Within a few ulp
// (CUDA's double libm against Go's math): atan, sigmoid and softplus
// (exp, log1p), pow.
//
// The linear ops are copies, bitwise: ColumnSelect, ColumnEmbed and
// StackColumns' columns; the row gathers (RowGather, IndexSelect) and
// their scatter-adds, one thread per destination element summing its
// source rows, in increasing order, from 0, as cpu.ScatterAddRows
// (the rows of each destination are an inverse index, CSR, built and
// checked on the host: no atomics); BoxConvert and its transpose (in T,
// each operation rounded as cpu.BoxConvert's); ClipBoxes and its mask;
// BoxesToRoIs and RoIRowsEmbed / RoIRows.

#include "common.cuh"

// The pointwise functions, in the order of cpu.PointFn's constants
// (internal/cpu/boxprims.go).
enum PointFn {
	fnMaximum,
	fnMinimum,
	fnMaxShare,
	fnClamp,
	fnClampMask,
	fnAtan,
	fnSigmoid,
	fnSoftplus,
	fnPow,
	fnDiv,
	fnCopy,
	fnMasked,
	fnBothPositive,
};

// BoxConvert's conversions, in the order of cpu.BoxConversion's constants
// (internal/cpu/boxops.go; XYXYToXYWH is xyxyToXYWH here).
enum ConvertKind {
	xyxyToXYWH,
	xywhToXYXY,
	xyxyToCXCYWH,
	cxcywhToXYXY,
};

__device__ __forceinline__ double posInf() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double nan_() { return __longlong_as_double(0x7ff8000000000001LL); }

// goMax and goMin are Go's math.Max and math.Min: an infinity of the
// direction wins over NaN, then NaN, then the sign rule for zeros
// (Max(−0, +0) = +0, Min(−0, +0) = −0).
__device__ double goMax(double x, double y) {
	if (x == posInf() || y == posInf()) return posInf();
	if (x != x || y != y) return nan_();
	if (x == 0 && x == y) return signbit(x) ? y : x;
	return x > y ? x : y;
}
__device__ double goMin(double x, double y) {
	if (x == -posInf() || y == -posInf()) return -posInf();
	if (x != x || y != y) return nan_();
	if (x == 0 && x == y) return signbit(x) ? x : y;
	return x < y ? x : y;
}

// clamp is internal/cpu/boxprims.go's clamp: NaN stays NaN.
__device__ double clamp(double x, double lo, double hi) {
	if (x != x) return x;
	return goMin(goMax(x, lo), hi);
}

// pointEval mirrors pointOp.eval case by case.
__device__ double pointEval(long long fn, double a, double b, double p1, double p2) {
	switch (fn) {
	case fnMaximum: // torch.maximum: NaN if either is NaN
		if (a != a || b != b) return nan_();
		return a > b ? a : b;
	case fnMinimum:
		if (a != a || b != b) return nan_();
		return a < b ? a : b;
	case fnMaxShare:
		if (a < b) return 0;
		if (a == b) return 0.5;
		return 1;
	case fnClamp:
		return clamp(a, p1, p2);
	case fnClampMask:
		return a >= p1 && a <= p2 ? 1 : 0;
	case fnAtan:
		return atan(a);
	case fnSigmoid:
		if (a >= 0) return 1 / (1 + exp(-a));
		{
			double e = exp(a);
			return e / (1 + e);
		}
	case fnSoftplus:
		return goMax(a, 0) + log1p(exp(-fabs(a)));
	case fnPow:
		return pow(a, p1);
	case fnDiv:
		return a / b;
	case fnCopy:
		return a;
	case fnMasked:
		return b != 0 ? a : 0;
	case fnBothPositive:
		return a > 0 && b > 0 ? 1 : 0;
	}
	return nan_(); // unknown code: the host never sends one
}

// point: out[i] = fn(a[i], b[i]) (b NULL: a unary function, b = 0).
template <typename T> __device__ void point(const T *a, const T *b, T *out, long long n, long long fn, double p1, double p2) {
	LOOP(i, n) out[i] = (T)pointEval(fn, (double)a[i], b ? (double)b[i] : 0.0, p1, p2);
}

// column_select: y[i] = x[i, j] of x [p, c]; column_embed: y [p, c] zero
// but column j = x; column_put: column j of y [p, c] = x, the rest left
// (StackColumns, a launch per column).
template <typename T> __device__ void columnSelect(const T *x, T *y, long long p, long long c, long long j) {
	LOOP(i, p) y[i] = x[i * c + j];
}
template <typename T> __device__ void columnEmbed(const T *x, T *y, long long p, long long c, long long j) {
	LOOP(i, p * c) y[i] = i % c == j ? x[i / c] : (T)0;
}
template <typename T> __device__ void columnPut(const T *x, T *y, long long p, long long c, long long j) {
	LOOP(i, p) y[i * c + j] = x[i];
}

// gather_rows: y[r, e] = x[idx[r], e], rows of n elements, p rows.
template <typename T> __device__ void gatherRows(const T *x, const long long *idx, T *y, long long p, long long n) {
	LOOP(i, p * n) y[i] = x[(long long)idx[i / n] * n + i % n];
}

// scatter_rows: y[d, e] = Σ g[r, e] over the rows r of d's list
// rows[start[d]:start[d+1]] (increasing r), summed from 0 in that order:
// the CPU's scatterAddRows, bitwise. k destination rows of n elements.
template <typename T> __device__ void scatterRows(const T *g, const long long *start, const long long *rows, T *y, long long k, long long n) {
	LOOP(i, k * n) {
		long long d = i / n, e = i % n;
		T acc = 0;
		for (long long q = start[d]; q < start[d + 1]; q++) acc += g[(long long)rows[q] * n + e];
		y[i] = acc;
	}
}

// convert: one of BoxConvert's maps (or its transpose) on k rows of 4, in
// T with every operation rounded as cpu.BoxConvert's.
template <typename T> __device__ void convert(const T *x, T *y, long long k, long long kind, long long transpose) {
	const T half = (T)0.5, two = (T)2;
	LOOP(r, k) {
		T a = x[4 * r], b = x[4 * r + 1], c = x[4 * r + 2], d = x[4 * r + 3];
		T o0, o1, o2, o3;
		if (kind == xyxyToXYWH && !transpose) {
			o0 = a, o1 = b, o2 = c - a, o3 = d - b;
		} else if (kind == xyxyToXYWH) {
			o0 = a - c, o1 = b - d, o2 = c, o3 = d;
		} else if (kind == xywhToXYXY && !transpose) {
			o0 = a, o1 = b, o2 = a + c, o3 = b + d;
		} else if (kind == xywhToXYXY) {
			o0 = a + c, o1 = b + d, o2 = c, o3 = d;
		} else if (kind == xyxyToCXCYWH && !transpose) {
			o0 = (a + c) / two, o1 = (b + d) / two, o2 = c - a, o3 = d - b;
		} else if (kind == xyxyToCXCYWH) {
			T a2 = a / two, b2 = b / two;
			o0 = a2 - c, o1 = b2 - d, o2 = a2 + c, o3 = b2 + d;
		} else if (!transpose) { // cxcywhToXYXY
			T c2 = half * c, d2 = half * d;
			o0 = a - c2, o1 = b - d2, o2 = a + c2, o3 = b + d2;
		} else {
			o0 = a + c, o1 = b + d, o2 = half * c - half * a, o3 = half * d - half * b;
		}
		y[4 * r] = o0, y[4 * r + 1] = o1, y[4 * r + 2] = o2, y[4 * r + 3] = o3;
	}
}

// clip: ClipBoxes (x clamped to [0, w] in columns 0 and 2, [0, h] in 1
// and 3, in double, rounded to T) or with mask its derivative (1 within
// the bounds, bounds included, else 0): clipKernel's.
template <typename T> __device__ void clip(const T *x, T *y, long long n, double w, double h, long long mask) {
	LOOP(i, n) {
		double v = (double)x[i], hi = i % 2 == 0 ? w : h;
		if (mask)
			y[i] = v >= 0 && v <= hi ? (T)1 : (T)0;
		else
			y[i] = (T)clamp(v, 0, hi);
	}
}

// rois: image's n boxes [n, 4] into rows off..off+n of the RoIs [K, 5],
// (image, x1, y1, x2, y2): boxesToRoIsKernel, a launch per image.
template <typename T> __device__ void rois(const T *boxes, T *out, long long off, long long n, long long image) {
	LOOP(i, n * 5) {
		long long r = i / 5, c = i % 5;
		out[(off + r) * 5 + c] = c == 0 ? (T)image : boxes[r * 4 + c - 1];
	}
}

// roi_rows: with embed, x [n, 4] into rows off..off+n, columns 1..4, of a
// zero y [k, 5] (RoIRowsEmbed); else those rows and columns of x [k, 5]
// as y [n, 4] (RoIRows): roiRowsKernel's.
template <typename T> __device__ void roiRows(const T *x, T *y, long long k, long long off, long long n, long long embed) {
	if (embed) {
		LOOP(i, k * 5) {
			long long r = i / 5 - off, c = i % 5;
			y[i] = r >= 0 && r < n && c > 0 ? x[r * 4 + c - 1] : (T)0;
		}
	} else {
		LOOP(i, n * 4) y[i] = x[(off + i / 4) * 5 + 1 + i % 4];
	}
}

#define KERNELS(t, T)                                                                                                         \
	extern "C" __global__ void boxops_point_##t(const T *a, const T *b, T *out, long long n, long long fn, double p1, double p2) {         \
		point<T>(a, b, out, n, fn, p1, p2);                                                                                \
	}                                                                                                                         \
	extern "C" __global__ void boxops_column_select_##t(const T *x, T *y, long long p, long long c, long long j) { columnSelect<T>(x, y, p, c, j); } \
	extern "C" __global__ void boxops_column_embed_##t(const T *x, T *y, long long p, long long c, long long j) { columnEmbed<T>(x, y, p, c, j); }   \
	extern "C" __global__ void boxops_column_put_##t(const T *x, T *y, long long p, long long c, long long j) { columnPut<T>(x, y, p, c, j); }       \
	extern "C" __global__ void boxops_gather_rows_##t(const T *x, const long long *idx, T *y, long long p, long long n) {                       \
		gatherRows<T>(x, idx, y, p, n);                                                                                    \
	}                                                                                                                         \
	extern "C" __global__ void boxops_scatter_rows_##t(const T *g, const long long *start, const long long *rows, T *y, long long k, long long n) {   \
		scatterRows<T>(g, start, rows, y, k, n);                                                                           \
	}                                                                                                                         \
	extern "C" __global__ void boxops_convert_##t(const T *x, T *y, long long k, long long kind, long long transpose) {                         \
		convert<T>(x, y, k, kind, transpose);                                                                              \
	}                                                                                                                         \
	extern "C" __global__ void boxops_clip_##t(const T *x, T *y, long long n, double w, double h, long long mask) {                       \
		clip<T>(x, y, n, w, h, mask);                                                                                      \
	}                                                                                                                         \
	extern "C" __global__ void boxops_rois_##t(const T *boxes, T *out, long long off, long long n, long long image) {                           \
		rois<T>(boxes, out, off, n, image);                                                                                \
	}                                                                                                                         \
	extern "C" __global__ void boxops_roi_rows_##t(const T *x, T *y, long long k, long long off, long long n, long long embed) {                      \
		roiRows<T>(x, y, k, off, n, embed);                                                                                \
	}

KERNELS(f32, float)
KERNELS(f64, double)
