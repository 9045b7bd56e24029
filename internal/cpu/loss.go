package cpu

import "math"

// The elementwise parts of nn's losses (softplus, smooth L1 and its
// derivatives) and CrossEntropy's target gather (Pick) and its transpose
// (Scatter).

// Softplus sets y to log(1 + exp(x)) (torch.nn.functional.softplus),
// computed in float64 as max(x, 0) + log1p(exp(−|x|)): no overflow.
func Softplus[T Float](y, x []T) {
	for i, v := range x {
		x := float64(v)
		y[i] = T(max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))))
	}
}

// SmoothL1 sets y to the order-th derivative of the smooth L1 function
// of torch.nn.functional.smooth_l1_loss at each d of x (order 0: the function),
// in T: 0.5·d²/beta where |d| < beta and |d| − 0.5·beta elsewhere; then
// clamp(d/beta, −1, 1) (−1 at d = 0 with beta = 0, torch 1.13's choice;
// NaN kept); then 1/beta inside the band and 0 outside for any order
// above 1.
func SmoothL1[T Float](beta float64, order int, y, x []T) {
	b := T(beta)
	for i, d := range x {
		a := max(d, -d)
		inside := a < b
		var v T
		switch order {
		case 0:
			if inside {
				v = 0.5 * d * d / b
			} else {
				v = a - 0.5*b
			}
		case 1:
			switch {
			case inside:
				v = d / b
			case d > 0:
				v = 1
			case d != d:
				v = d
			default:
				v = -1 // d < 0, and d = 0 with beta = 0 (torch 1.13's choice)
			}
		default:
			if inside {
				v = 1 / b
			}
		}
		y[i] = v
	}
}

// Pick sets dst[i] = x[i·c + t[i]] for x [n, c] and targets t [n], or,
// with vec, dst[i] = x[t[i]] for x [c]: CrossEntropy's gather of the
// target's entry. A target equal to ignore leaves dst[i] as it is (the
// caller zeroes it). The targets must be in [0, c) or ignore (the caller
// checks them).
func Pick[T Float](vec bool, c, ignore int, dst, x []T, t []int) {
	pick(vec, c, ignore, true, dst, x, t)
}

// Scatter is Pick's transpose: dst[i·c + t[i]] += g[i] (dst [n, c]), or
// with vec dst[t[i]] += g[i] (dst [c]), rows in order, ignored targets
// skipped. The targets must be in [0, c) or ignore.
func Scatter[T Float](vec bool, c, ignore int, dst, g []T, t []int) {
	pick(vec, c, ignore, false, dst, g, t)
}

// pick is Pick (forward) or Scatter.
func pick[T Float](vec bool, c, ignore int, forward bool, dst, src []T, t []int) {
	for i, ti := range t {
		if ti == ignore {
			continue
		}
		j := i*c + ti
		if vec {
			j = ti
		}
		if forward {
			dst[i] = src[j]
		} else {
			dst[j] += src[i]
		}
	}
}
