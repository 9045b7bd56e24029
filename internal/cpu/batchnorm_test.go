package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// bnRef is training BatchNorm of x [N, C, L] and its gradients for
// upstream u, in float64 from the definitions (torch's
// batch_norm_backward): y, dx, dw, db, and each channel's mean and
// unbiased variance.
func bnRef(g BatchGeom, x, u, w, b []float64) (y, dx, dw, db, mean, unbiased []float64) {
	y, dx = make([]float64, len(x)), make([]float64, len(x))
	dw, db, mean, unbiased = make([]float64, g.C), make([]float64, g.C), make([]float64, g.C), make([]float64, g.C)
	cnt := float64(g.N * g.L)
	for ci := range g.C {
		var s, ss float64
		each := func(f func(i int)) {
			for ni := range g.N {
				lo, hi := g.plane(ni, ci)
				for i := lo; i < hi; i++ {
					f(i)
				}
			}
		}
		each(func(i int) { s += x[i] })
		m := s / cnt
		each(func(i int) { ss += (x[i] - m) * (x[i] - m) })
		r := 1 / math.Sqrt(ss/cnt+g.Eps)
		mean[ci], unbiased[ci] = m, ss/(cnt-1)
		var su, suy float64
		each(func(i int) {
			xh := (x[i] - m) * r
			y[i] = xh*w[ci] + b[ci]
			su += u[i]
			suy += u[i] * xh
		})
		each(func(i int) { dx[i] = r * w[ci] * (u[i] - su/cnt - (x[i]-m)*r*suy/cnt) })
		dw[ci], db[ci] = suy, su
	}
	return y, dx, dw, db, mean, unbiased
}

// bnKernelsAt runs BatchNormTrain (with its statistics' callback),
// BatchNormGradX, BatchGradStats then BatchNormGradXStats and
// BatchStatsSum, BatchNormGradW, and BatchEvalStats then BatchStatsSum,
// on float64 data converted to T, at GOMAXPROCS procs, and returns their
// results as float64: y, dx, dx from the statistics, dw from the
// statistics, db from them, dw by BatchNormGradW, the callback's means and
// unbiased variances, and eval's Σu and Σu·x.
func bnKernelsAt[T Float](g BatchGeom, procs int, x, u, w, b []float64) [][]float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	cv := func(v []float64) []T {
		out := make([]T, len(v))
		for i, e := range v {
			out[i] = T(e)
		}
		return out
	}
	back := func(v []T) []float64 {
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = float64(e)
		}
		return out
	}
	xt, ut, wt, bt := cv(x), cv(u), cv(w), cv(b)
	y, dx, dxs := make([]T, len(x)), make([]T, len(x)), make([]T, len(x))
	dw, db, dwDirect := make([]T, g.C), make([]T, g.C), make([]T, g.C)
	mean, unbiased := make([]float64, g.C), make([]float64, g.C)
	BatchNormTrain(g, y, xt, wt, bt, func(ci int, m, v float64) { mean[ci], unbiased[ci] = m, v })
	BatchNormGradX(g, dx, xt, ut, wt)
	stats := make([]T, BatchGradStatsSize(g))
	BatchGradStats(g, stats, ut, xt)
	BatchNormGradXStats(g, dxs, xt, ut, wt, stats)
	BatchStatsSum(g, 1, dw, stats)
	BatchStatsSum(g, 0, db, stats)
	BatchNormGradW(g, dwDirect, ut, xt)
	evalStats, eu, eux := make([]T, BatchGradStatsSize(g)), make([]T, g.C), make([]T, g.C)
	BatchEvalStats(g, evalStats, ut, xt)
	BatchStatsSum(g, 0, eu, evalStats)
	BatchStatsSum(g, 1, eux, evalStats)
	return [][]float64{back(y), back(dx), back(dxs), back(dw), back(db), back(dwDirect), mean, unbiased, back(eu), back(eux)}
}

// TestBatchNormKernels: the BatchNorm kernels against bnRef (and eval's
// sums against theirs), each element
// within rtol of its tensor's largest magnitude (1e-12 float64, 2e-5
// float32), the running statistics' numbers against ChannelMean's (the
// composed graph's kernel: 1e-13 relative in float64, 1e-6 in float32);
// dx from the shared statistics bitwise the direct kernel's; every
// result bitwise the same for GOMAXPROCS 1, 2 and 4. Shapes: L = 1, one
// sample, one channel, odd sizes, and one big enough to split.
func TestBatchNormKernels(t *testing.T) {
	for _, g := range []BatchGeom{{N: 3, C: 2, L: 1, Eps: 1e-5}, {N: 1, C: 3, L: 7, Eps: 1e-5}, {N: 4, C: 5, L: 33, Eps: 1e-3}, {N: 2, C: 1, L: 1000, Eps: 1e-5}, {N: 8, C: 4, L: 1100, Eps: 1e-5}} {
		t.Run(fmt.Sprintf("%dx%dx%d", g.N, g.C, g.L), func(t *testing.T) {
			testBatchNormKernels[float32](t, g, 2e-5, 1e-6)
			testBatchNormKernels[float64](t, g, 1e-12, 1e-13)
		})
	}
}

func testBatchNormKernels[T Float](t *testing.T, g BatchGeom, rtol, statTol float64) {
	r := rand.New(rand.NewPCG(uint64(g.N*g.C), uint64(g.L)))
	rnd := func(n int, scale, shift float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(T(scale*r.NormFloat64() + shift))
		}
		return v
	}
	size := g.N * g.C * g.L
	x, u, w, b := rnd(size, 3, 1), rnd(size, 1, 0), rnd(g.C, 1, 0.5), rnd(g.C, 1, 0)
	got := bnKernelsAt[T](g, 1, x, u, w, b)
	for _, p := range []int{2, 4} {
		again := bnKernelsAt[T](g, p, x, u, w, b)
		for k := range got {
			for i, v := range again[k] {
				if math.Float64bits(v) != math.Float64bits(got[k][i]) {
					t.Fatalf("%T result %d element %d: %v at GOMAXPROCS %d, %v at 1", T(0), k, i, v, p, got[k][i])
				}
			}
		}
	}
	if !slices.Equal(got[1], got[2]) {
		t.Fatalf("%T: dx from BatchGradStats differs from BatchNormGradX's", T(0))
	}
	y, dx, dw, db, _, _ := bnRef(g, x, u, w, b)
	sux := make([]float64, g.C)
	for i := range x {
		sux[(i/g.L)%g.C] += u[i] * x[i]
	}
	for k, want := range [][]float64{y, dx, dx, dw, db, dw, nil, nil, db, sux} {
		if want == nil {
			continue // the running statistics, below
		}
		var scale float64
		for _, v := range want {
			scale = max(scale, math.Abs(v))
		}
		for i, v := range got[k] {
			if !(math.Abs(v-want[i]) <= rtol*scale) {
				t.Fatalf("%T result %d element %d: %v, want %v (scale %v)", T(0), k, i, v, want[i], scale)
			}
		}
	}
	// The running statistics' numbers, against ChannelMean's.
	xt := make([]T, size)
	for i, v := range x {
		xt[i] = T(v)
	}
	mean, unbiased := make([]float64, g.C), make([]float64, g.C)
	ChannelMean(g.N, g.C, g.L, make([]T, g.C), xt, func(ci int, m, v float64) { mean[ci], unbiased[ci] = m, v })
	for ci := range g.C {
		for _, p := range [][2]float64{{got[6][ci], mean[ci]}, {got[7][ci], unbiased[ci]}} {
			if !(math.Abs(p[0]-p[1]) <= statTol*max(math.Abs(p[1]), math.Sqrt(unbiased[ci]))) {
				t.Fatalf("%T channel %d: running statistic %v, ChannelMean's %v", T(0), ci, p[0], p[1])
			}
		}
	}
}

// TestBatchNormKernelsHugeValues: float32 inputs whose squares, or sums,
// overflow float32 (|x| ~ 1e18 and 1e36, finite) are normalised as torch
// does (its statistics accumulate in double): every kernel within 2e-5 of
// its tensor's largest magnitude of bnRef's float64 values, the running
// statistics within 1e-6 relative; none Inf or NaN.
func TestBatchNormKernelsHugeValues(t *testing.T) {
	g := BatchGeom{N: 2, C: 3, L: 3136, Eps: 1e-5}
	for _, scale := range []float64{1e18, 1e36} {
		r := rand.New(rand.NewPCG(4, 5))
		rnd := func(n int, scale float64) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(float32(scale * r.NormFloat64()))
			}
			return v
		}
		size := g.N * g.C * g.L
		x, u, w, b := rnd(size, scale), rnd(size, 1), rnd(g.C, 1), rnd(g.C, 1)
		got := bnKernelsAt[float32](g, 1, x, u, w, b)
		y, dx, dw, db, mean, unbiased := bnRef(g, x, u, w, b)
		for k, want := range [][]float64{y, dx, dx, dw, db, dw, mean, unbiased} {
			var big float64
			for _, v := range want {
				big = max(big, math.Abs(v))
			}
			tol := 2e-5 * big
			if k >= 6 {
				tol = 1e-6 * big
			}
			for i, v := range got[k] {
				if !(math.Abs(v-want[i]) <= tol) {
					t.Fatalf("scale %g: result %d element %d: %v, want %v", scale, k, i, v, want[i])
				}
			}
		}
	}
}
