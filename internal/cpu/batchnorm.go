package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/vmath"
)

// ChannelMean sets mean[ci] to the mean of channel ci of x [n, c, l]
// (BatchNorm's batch mean), summed in float64 sample by sample. With
// stats not nil it also computes the channel's unbiased variance
// Σ (x − mean)²/(n·l − 1) in float64 and calls stats(ci, mean,
// variance), channel by channel in order (BatchNorm's running
// statistics).
func ChannelMean[T Float](n, c, l int, mean, x []T, stats func(ci int, mean, unbiased float64)) {
	cnt := float64(n * l)
	for ci := 0; ci < c; ci++ {
		var sum float64
		for ni := 0; ni < n; ni++ {
			for _, v := range x[(ni*c+ci)*l:][:l] {
				sum += float64(v)
			}
		}
		m := sum / cnt
		mean[ci] = T(m)
		if stats == nil {
			continue
		}
		var ss float64
		for ni := 0; ni < n; ni++ {
			for _, v := range x[(ni*c+ci)*l:][:l] {
				d := float64(v) - m
				ss += d * d
			}
		}
		stats(ci, m, ss/(cnt-1))
	}
}

// BatchGeom is BatchNorm's input seen as [N, C, L] (L the product of the
// axes after the channel's), contiguous, normalised with Eps.
type BatchGeom struct {
	N, C, L int
	Eps     float64
	// Keep, if not nil ([N]), names the samples whose planes make the
	// batch statistics (BatchNorm's Mask): μ and r are theirs, over
	// count·L values; nil keeps every sample.
	Keep []bool
}

// kept reports whether sample ni counts in the statistics.
func (g BatchGeom) kept(ni int) bool { return g.Keep == nil || g.Keep[ni] }

// count is the number of values the statistics are over: L per kept
// sample.
func (g BatchGeom) count() int {
	if g.Keep == nil {
		return g.N * g.L
	}
	n := 0
	for _, k := range g.Keep {
		if k {
			n++
		}
	}
	return n * g.L
}

// plane is the plane of sample ni, channel ci of x seen as g.
func (g BatchGeom) plane(ni, ci int) (lo, hi int) {
	lo = (ni*g.C + ci) * g.L
	return lo, lo + g.L
}

// batchMoments returns channel ci's mean μ, r = (σ² + Eps)^(-1/2) with σ²
// the biased variance, and the unbiased one, all in float64: Σ x as
// vmath.Sum of each kept plane added in sample order, then Σ (x − μ)²
// likewise (vmath.SubSqSum, μ rounded to T), over g.count() values (none:
// μ = σ² = 0; one: the unbiased variance NaN). vmath sums float32 in
// float32 lanes, which overflow for finite values near 1e18 (squares) or
// 1e35 (values); a sum that comes out ±Inf is taken again in float64
// (planeSums64), as torch's statistics, accumulated in double.
func batchMoments[T Float](g BatchGeom, ci int, x []T) (mean, r, unbiased float64) {
	cnt := float64(g.count())
	if cnt == 0 {
		return 0, 1 / math.Sqrt(g.Eps), math.NaN()
	}
	var sum float64
	for ni := 0; ni < g.N; ni++ {
		if g.kept(ni) {
			lo, hi := g.plane(ni, ci)
			sum += vmath.Sum(x[lo:hi])
		}
	}
	if math.IsInf(sum, 0) {
		sum = planeSums64(g, ci, x, 0, false)
	}
	mean = sum / cnt
	var ss float64
	for ni := 0; ni < g.N; ni++ {
		if g.kept(ni) {
			lo, hi := g.plane(ni, ci)
			ss += vmath.SubSqSum(x[lo:hi], T(mean))
		}
	}
	if math.IsInf(ss, 0) {
		ss = planeSums64(g, ci, x, mean, true)
	}
	unbiased = math.NaN()
	if cnt > 1 {
		unbiased = ss / (cnt - 1)
	}
	return mean, 1 / math.Sqrt(ss/cnt+g.Eps), unbiased
}

// planeSums64 is Σ x, or with squares Σ (x − m)², over channel ci's kept
// planes in float64, element by element in order: batchMoments' sums
// where T's lanes overflow.
func planeSums64[T Float](g BatchGeom, ci int, x []T, m float64, squares bool) float64 {
	var s float64
	for ni := 0; ni < g.N; ni++ {
		if !g.kept(ni) {
			continue
		}
		lo, hi := g.plane(ni, ci)
		for _, v := range x[lo:hi] {
			d := float64(v) - m
			if squares {
				d *= d
			}
			s += d
		}
	}
	return s
}

// param is p[ci], or def when p is nil (no weight or bias).
func param[T Float](p []T, ci int, def T) T {
	if p == nil {
		return def
	}
	return p[ci]
}

// BatchNormTrain sets y = (x − μ)·r·w[c] + b[c] for x and y [N, C, L]
// (vmath.NormAffine), μ and r the channel's batch statistics
// (batchMoments); w or b nil for none. With stats not nil it calls
// stats(ci, μ, unbiased variance) once per channel (BatchNorm's running
// statistics; not called when the statistics are over fewer than two
// values, which only Keep allows), from the goroutine of the channel.
// With Keep, every plane is normalised with the kept planes' statistics.
// Channels are spread over goroutines, each channel's three passes over
// its planes done while they are in cache; a channel's numbers do not
// depend on the split.
func BatchNormTrain[T Float](g BatchGeom, y, x, w, b []T, stats func(ci int, mean, unbiased float64)) {
	parallelIf(g.C, len(x), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			m, r, unbiased := batchMoments(g, ci, x)
			if stats != nil && !math.IsNaN(unbiased) {
				stats(ci, m, unbiased)
			}
			wc, bc := param(w, ci, 1), param(b, ci, 0)
			for ni := 0; ni < g.N; ni++ {
				plo, phi := g.plane(ni, ci)
				vmath.NormAffine(y[plo:phi], x[plo:phi], T(m), T(r), wc, bc)
			}
		}
	})
}

// BatchNormGradX sets dx, for upstream u, to the gradient w.r.t. x of
// Σ u·BatchNormTrain(x, w): per channel, torch's batch_norm_backward,
//
//	dx = r·w[c]·(u − mean u − x̂·mean(u·x̂)), x̂ = (x − μ)·r,
//
// with μ, r, Σu and Σu·x̂ computed by batchGradStats, then one
// vmath.NormGrad pass; w nil for 1. With Keep, the sums are over every
// plane and divided by g.count(), and a plane not kept (whose x is not in
// μ and r) gets r·w[c]·u alone. dx, u and x [N, C, L]; channels spread
// over goroutines as BatchNormTrain.
func BatchNormGradX[T Float](g BatchGeom, dx, x, u, w []T) {
	parallelIf(g.C, len(x), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			m, r, su, suy := batchGradStats(g, ci, u, x, false)
			batchNormGradX(g, ci, dx, x, u, w, m, r, su, suy, false)
		}
	})
}

// BatchNormGradXT is BatchNormGradX's transpose: the derivative of
// BatchNormTrain(x, w) along u (the gradient w.r.t. u of Σ v·GradX(x, u,
// w)), dx = r·w[c]·(u − mean u − x̂·mean(u·x̂)) on every plane with the
// sums over the kept planes only. Without Keep it is BatchNormGradX
// (batch_norm_backward is symmetric in u).
func BatchNormGradXT[T Float](g BatchGeom, dx, x, u, w []T) {
	parallelIf(g.C, len(x), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			m, r, su, suy := batchGradStats(g, ci, u, x, true)
			batchNormGradX(g, ci, dx, x, u, w, m, r, su, suy, true)
		}
	})
}

// batchGradStats returns channel ci's μ and r (batchMoments) and Σu and
// Σu·x̂ in float64 (vmath.SumDotNorm of each plane, added in sample
// order), over every plane, or the kept ones if keptOnly.
func batchGradStats[T Float](g BatchGeom, ci int, u, x []T, keptOnly bool) (m, r, su, suy float64) {
	m, r, _ = batchMoments(g, ci, x)
	for ni := 0; ni < g.N; ni++ {
		if keptOnly && !g.kept(ni) {
			continue
		}
		lo, hi := g.plane(ni, ci)
		s, sy := vmath.SumDotNorm(u[lo:hi], x[lo:hi], T(m), T(r))
		su += s
		suy += sy
	}
	return m, r, su, suy
}

// batchNormGradX writes channel ci of BatchNormGradX's dx (all planes
// corrected: BatchNormGradXT's) from its statistics: one vmath.NormGrad
// pass per plane, the planes not kept without the mean terms unless all.
func batchNormGradX[T Float](g BatchGeom, ci int, dx, x, u, w []T, m, r, su, suy float64, all bool) {
	var a, b T
	if cnt := float64(g.count()); cnt > 0 {
		a, b = T(suy/cnt), T(su/cnt)
	}
	rw := T(-r * float64(param(w, ci, 1)))
	for ni := 0; ni < g.N; ni++ {
		lo, hi := g.plane(ni, ci)
		if all || g.kept(ni) {
			vmath.NormGrad(dx[lo:hi], u[lo:hi], x[lo:hi], T(m), T(r), a, b, rw, rw)
		} else {
			vmath.NormGrad(dx[lo:hi], u[lo:hi], x[lo:hi], T(m), T(r), 0, 0, rw, rw)
		}
	}
}

// BatchGradStatsSize is the length of BatchGradStats's result for g: four
// float64 slots (StatSlot) per channel.
func BatchGradStatsSize(g BatchGeom) int { return 8 * g.C }

// BatchGradStats sets dst (BatchGradStatsSize elements) to channel c's
// μ, r, Σu and Σu·x̂ in slots 4c to 4c + 3 (batchGradStats), for upstream
// u and input x [N, C, L]: what BatchNormGradX, BatchNormGradW and the
// bias's gradient share. Channels spread over goroutines as
// BatchNormTrain.
func BatchGradStats[T Float](g BatchGeom, dst, u, x []T) {
	parallelIf(g.C, len(x), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			m, r, su, suy := batchGradStats(g, ci, u, x, false)
			for k, v := range [4]float64{m, r, su, suy} {
				setStatSlot(dst, 4*ci+k, v)
			}
		}
	})
}

// BatchNormGradXStats is BatchNormGradX with each channel's statistics
// from BatchGradStats's result stats: one pass over u and x, channels
// spread over goroutines as BatchNormTrain.
func BatchNormGradXStats[T Float](g BatchGeom, dx, x, u, w, stats []T) {
	parallelIf(g.C, len(x), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			batchNormGradX(g, ci, dx, x, u, w, StatSlot(stats, 4*ci), StatSlot(stats, 4*ci+1), StatSlot(stats, 4*ci+2), StatSlot(stats, 4*ci+3), false)
		}
	})
}

// BatchEvalStats sets dst (BatchGradStatsSize elements) to channel c's
// Σu and Σu·x in slots 4c + 2 and 4c + 3 (slots 4c and 4c + 1 zero), for
// u and x [N, C, L]: the sums that eval BatchNorm's gradients w.r.t. its
// per-channel scale and shift share, from one pass over u and x
// (vmath.SumDotNorm with μ = 0 and r = 1: the products u·x; planes added
// in sample order in float64). Channels spread over goroutines as
// BatchNormTrain.
func BatchEvalStats[T Float](g BatchGeom, dst, u, x []T) {
	parallelIf(g.C, len(x), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			var su, sux float64
			for ni := 0; ni < g.N; ni++ {
				plo, phi := g.plane(ni, ci)
				s, sx := vmath.SumDotNorm(u[plo:phi], x[plo:phi], 0, 1)
				su += s
				sux += sx
			}
			for k, v := range [4]float64{0, 0, su, sux} {
				setStatSlot(dst, 4*ci+k, v)
			}
		}
	})
}

// BatchStatsSum sets dst [C] to each channel's Σu (which 0: the gradient
// w.r.t. the bias) or Σu·x̂ (which 1: w.r.t. the weight) from
// BatchGradStats's result stats, or Σu or Σu·x from BatchEvalStats's.
func BatchStatsSum[T Float](g BatchGeom, which int, dst, stats []T) {
	for ci := range g.C {
		dst[ci] = T(StatSlot(stats, 4*ci+2+which))
	}
}

// BatchNormGradW sets dw[c] = Σ u·x̂ over channel c's N·L values, the
// gradient w.r.t. the weight of Σ u·BatchNormTrain(x, w): r·Σ u·(x − μ)
// in float64 (vmath.SubDot per plane, added in sample order), μ and r
// recomputed (batchMoments: with Keep, the kept planes'). u and x [N, C,
// L], dw [C].
func BatchNormGradW[T Float](g BatchGeom, dw, u, x []T) {
	parallelIf(g.C, len(x), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			m, r, _ := batchMoments(g, ci, x)
			var s float64
			for ni := 0; ni < g.N; ni++ {
				plo, phi := g.plane(ni, ci)
				s += vmath.SubDot(u[plo:phi], x[plo:phi], T(m))
			}
			dw[ci] = T(r * s)
		}
	})
}
