// Conv2d's family on the GPU (nn/conv.go, internal/cpu/conv.go): a sample's
// columns (im2col) and their transpose (col2im); the products between them
// are cuBLAS' (nn/conv_cuda.go). float (f32) and double (f64).
//
// Geometry as cpu.ConvGeom: a sample x [C, H, W], its columns [C·K, L] with
// K = KH·KW and L = HO·WO; row c·K + ki·KW + kj, column ho·WO + wo holds
// x[c, ho·SH − PH + ki·DH, wo·SW − PW + kj·DW], 0 outside the image.

#include "common.cuh"

struct conv_geom {
	long long C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, HO, WO;
};

// im2col equals cpu.Im2col: one thread per column element; bitwise (a
// copy).
template <typename T> __device__ void im2col(const T *x, T *cols, conv_geom g) {
	long long K = g.KH * g.KW, L = g.HO * g.WO;
	LOOP(e, g.C * K * L) {
		long long col = e % L, row = e / L;
		long long c = row / K, k = row - c * K;
		long long ki = k / g.KW, kj = k - ki * g.KW;
		long long ho = col / g.WO, wo = col - ho * g.WO;
		long long y = ho * g.SH - g.PH + ki * g.DH, xx = wo * g.SW - g.PW + kj * g.DW;
		cols[e] = (y >= 0 && y < g.H && xx >= 0 && xx < g.W) ? x[(c * g.H + y) * g.W + xx] : (T)0;
	}
}

// col2im equals cpu.Col2im into a zeroed dx [C, H, W]: one thread per dx
// element, adding from 0 the column entries that land there in the CPU's
// order (kernel positions ki, then kj; each gives at most one (ho, wo));
// bitwise.
template <typename T> __device__ void col2im(const T *cols, T *dx, conv_geom g) {
	long long K = g.KH * g.KW, L = g.HO * g.WO;
	LOOP(e, g.C * g.H * g.W) {
		long long xx = e % g.W, y = e / g.W % g.H, c = e / (g.W * g.H);
		T acc = 0;
		for (long long ki = 0; ki < g.KH; ki++) {
			long long ty = y + g.PH - ki * g.DH;
			if (ty < 0 || ty % g.SH != 0) continue;
			long long ho = ty / g.SH;
			if (ho >= g.HO) continue;
			for (long long kj = 0; kj < g.KW; kj++) {
				long long tx = xx + g.PW - kj * g.DW;
				if (tx < 0 || tx % g.SW != 0) continue;
				long long wo = tx / g.SW;
				if (wo >= g.WO) continue;
				acc += cols[(c * K + ki * g.KW + kj) * L + ho * g.WO + wo];
			}
		}
		dx[e] = acc;
	}
}

#define CONV_ARGS long long C, long long H, long long W, long long KH, long long KW, long long SH, long long SW, long long PH, long long PW, long long DH, long long DW, long long HO, long long WO
#define CONV_GEOM make_geom(C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, HO, WO)

__device__ __forceinline__ conv_geom make_geom(CONV_ARGS) {
	conv_geom g = {C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, HO, WO};
	return g;
}

extern "C" __global__ void conv_im2col_f32(const float *x, float *cols, CONV_ARGS) { im2col<float>(x, cols, CONV_GEOM); }
extern "C" __global__ void conv_im2col_f64(const double *x, double *cols, CONV_ARGS) { im2col<double>(x, cols, CONV_GEOM); }
extern "C" __global__ void conv_col2im_f32(const float *cols, float *dx, CONV_ARGS) { col2im<float>(cols, dx, CONV_GEOM); }
extern "C" __global__ void conv_col2im_f64(const double *cols, double *dx, CONV_ARGS) { col2im<double>(cols, dx, CONV_GEOM); }
