package cpu

import (
	"math"

	"github.com/gops-dev/gops/internal/vmath"
)

// CrossEntropy's row kernels on logits x [rows, n] (nn's LogSumExp, NLL,
// their gradients and Mask; the formulas and why NLL does not go through
// LogSumExp are in nn/lse.go). Targets t [rows] are class indices, or
// ignore; the callers check that every other target is in [0, n).

// LogSumExp sets dst[r] = log Σ_k exp(x[r, k]) for x [rows, n], as
// torch.logsumexp(x, 1): m + log Σ exp(x − m), m the row's maximum. A row
// holding NaN gives NaN, one holding +Inf gives +Inf, one of only −Inf (or
// empty) −Inf.
func LogSumExp[T Float](rows, n int, dst, x []T) {
	eachRow(rows, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			dst[r] = lseRow(x[r*n : (r+1)*n])
		}
	})
}

// lseChunk is the length of lseRow's scratch, on the stack: the
// exponentials of a row are summed lseChunk at a time (a multiple of the
// vector width, so only a row's last chunk has a tail).
const lseChunk = 512

// lseRow is LogSumExp of one row (see maxLogSum).
func lseRow[T Float](x []T) T {
	m, ls, ok := maxLogSum(x)
	if !ok {
		return m
	}
	return T(float64(m) + ls)
}

// maxLogSum returns m = max x and log Σ exp(x − m), the sum in float64
// over vmath.ExpSum's chunks; ok false, and no sum, when m is NaN or ±Inf.
func maxLogSum[T Float](x []T) (m T, logSum float64, ok bool) {
	m = vmath.Max(x)
	if f := float64(m); math.IsNaN(f) || math.IsInf(f, 0) {
		return m, 0, false
	}
	var buf [lseChunk]T
	var s float64
	for lo := 0; lo < len(x); lo += lseChunk {
		s += vmath.ExpSum(buf[:], x[lo:min(lo+lseChunk, len(x))], m)
	}
	return m, math.Log(s), true
}

// NLL sets dst[r] = −log_softmax(x)[r, t[r]] for x [len(t), n]:
// (m − x[r, t[r]]) + log s in float64, rounded once to T (maxLogSum), 0
// where t[r] is ignore; NaN for a row whose maximum is NaN or ±Inf, as
// torch's log_softmax there.
func NLL[T Float](n, ignore int, dst, x []T, t []int) {
	eachRow(len(t), n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			var v T
			if ti := t[r]; ti != ignore {
				m, ls, ok := maxLogSum(x[r*n : (r+1)*n])
				if ok {
					v = T(float64(m) - float64(x[r*n+ti]) + ls)
				} else {
					v = T(math.NaN())
				}
			}
			dst[r] = v
		}
	})
}

// LogSumExpGrad sets g [len(u), n] to u[r]·exp(x − lse[r]), LogSumExp's
// gradient for upstream u, lse = LogSumExp(x) (vmath.ExpSum shifted by
// lse[r], then scaled by u[r] over its sum: see lseGradRow); a row whose
// lse is NaN or ±Inf takes math.Exp element by element: NaN where x is NaN
// or equals an infinite lse, as torch.
func LogSumExpGrad[T Float](n int, g, x, lse, u []T) {
	eachRow(len(u), n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			lseGradRow(g[r*n:(r+1)*n], x[r*n:(r+1)*n], lse[r], u[r])
		}
	})
}

// NLLGrad sets g [len(u), n] to NLL's gradient for upstream u:
// u[r]·exp(x − m)/s (ExpSum shifted by the row's maximum m), less u[r] at
// the target; a zero row where the target is ignored, a NaN row where m
// is NaN or ±Inf (torch's log_softmax is NaN there).
func NLLGrad[T Float](n, ignore int, g, x, u []T, t []int) {
	eachRow(len(u), n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			gr, xr := g[r*n:(r+1)*n], x[r*n:(r+1)*n]
			if t[r] == ignore {
				clear(gr)
				continue
			}
			m := vmath.Max(xr)
			if f := float64(m); math.IsNaN(f) || math.IsInf(f, 0) {
				fillNaN(gr)
				continue
			}
			s := vmath.ExpSum(gr, xr, m)
			vmath.Axpb(gr, gr, T(float64(u[r])/s), 0)
			gr[t[r]] -= u[r]
		}
	})
}

// lseGradRow sets g = u·exp(x − lse)/Σ exp(x − lse), u·softmax(x) for any
// finite lse ≥ max x: lse = m + log s is rounded to T, and once |m| is
// large the rounding takes all of log s (1e30 + log 2 is 1e30 in float64,
// 1e8 + log 2 is 1e8 in float32), so exp(x − lse) alone would sum to s,
// not 1; for logits of 1e4 in float32 it is off by 1e-4 relative. The sum
// is the one ExpSum returns, so this is still one pass of exponentials.
func lseGradRow[T Float](g, x []T, lse, u T) {
	if f := float64(lse); math.IsNaN(f) || math.IsInf(f, 0) {
		for i, v := range x {
			g[i] = u * T(math.Exp(float64(v-lse)))
		}
		return
	}
	s := vmath.ExpSum(g, x, lse)
	vmath.Axpb(g, g, T(float64(u)/s), 0)
}

// Mask sets dst[r] = v[r] where t[r] is not ignore, leaving the other
// elements (zero on entry) alone: a select, so a NaN or infinite v[r]
// on an ignored row stays out.
func Mask[T Float](ignore int, dst, v []T, t []int) {
	for r, tr := range t {
		if tr != ignore {
			dst[r] = v[r]
		}
	}
}
