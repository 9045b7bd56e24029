package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/par"
	"github.com/gops-dev/gops/internal/vmath"
)

// The row normalisation of GroupNorm and LayerNorm (nn's RowNorm family;
// its derivatives are in nn/rownorm.go): a tensor seen as rows of n
// contiguous elements, with per row μ = mean x, σ² = mean (x − μ)²
// (biased, as torch), r = (σ² + eps)^(-1/2) and y = (x − μ)·r.

// RowGeom is a tensor seen as Rows rows of N contiguous elements,
// normalised with Eps.
type RowGeom struct {
	Rows, N int
	Eps     float64
}

// rowStats sets d = x − μ (in T, μ rounded to T) and returns
// r = (σ² + eps)^(-1/2), σ² = mean d²: two vector sums (vmath, float64
// across lanes), the same for every caller, so RowNorm, RowNormGrad and
// RowInvStd agree on a row's statistics.
func rowStats[T Float](d, x []T, eps float64) (r float64) {
	n := float64(len(x))
	vmath.Axpb(d, x, 1, -T(vmath.Sum(x)/n))
	return 1 / math.Sqrt(vmath.Dot(d, d)/n+eps)
}

// rowMoments returns rowStats's μ (rounded to T) and r without storing
// x − μ: the same sums (vmath.SubSqSum is Dot of vmath.Axpb's x − μ).
func rowMoments[T Float](x []T, eps float64) (mu T, r float64) {
	n := float64(len(x))
	mu = T(vmath.Sum(x) / n)
	return mu, 1 / math.Sqrt(vmath.SubSqSum(x, mu)/n+eps)
}

// eachRow runs f on rows [lo, hi) of rows rows of n elements, spread over
// goroutines when the tensor is large, in grains of about chanGrain
// elements handed out as workers finish (a descheduled worker does not
// hold the others up); a row's arithmetic does not depend on the split.
func eachRow(rows, n int, f func(lo, hi int)) {
	if rows*n < chanGrain {
		f(0, rows)
		return
	}
	par.ForGrains(rows, (chanGrain+n-1)/n, f)
}

// RowNorm sets y = (x − μ)·r row by row, x and y [Rows, N].
func RowNorm[T Float](g RowGeom, y, x []T) {
	eachRow(g.Rows, g.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			// fma(1, y, 0) is y: y = fma(r, x − μ, 0) is never −0.
			xr := x[i*g.N:][:g.N]
			mu, r := rowMoments(xr, g.Eps)
			vmath.NormAffine(y[i*g.N:][:g.N], xr, mu, T(r), 1, 0)
		}
	})
}

// RowNormGrad sets gr = r·(u − mean u − y·mean(u·y)) row by row (RowNorm's
// gradient for upstream u, y recomputed as RowNorm does), all [Rows, N].
func RowNormGrad[T Float](g RowGeom, gr, x, u []T) {
	n := float64(g.N)
	eachRow(g.Rows, g.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d, ur := gr[i*g.N:][:g.N], u[i*g.N:][:g.N]
			r := rowStats(d, x[i*g.N:][:g.N], g.Eps)
			vmath.Axpb(d, d, T(r), 0) // y
			mu, muy := vmath.Sum(ur)/n, vmath.Dot(ur, d)/n
			vmath.Axpb(d, d, T(muy), T(mu)) // mean u + y·mean(u·y)
			vmath.SubMul(d, ur, d, 1)       // u − that
			vmath.Axpb(d, d, T(r), 0)
		}
	})
}

// RowInvStd sets dst [Rows] to each row's r, x [Rows, N].
func RowInvStd[T Float](g RowGeom, dst, x []T) {
	eachRow(g.Rows, g.N, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			_, r := rowMoments(x[i*g.N:][:g.N], g.Eps)
			dst[i] = T(r)
		}
	})
}
