package cpu

import "github.com/gops-dev/gops/internal/par"

// AffineGrid (torch.nn.functional.affine_grid) and the grid's halves.

// GridSplit copies half which (0: x, 1: y) of src [N, HO, WO, 2] into dst
// [N, HO, WO]; GridEmbed is its transpose (dst zero on entry).
func GridSplit[T Float](which int, src, dst []T) {
	for j := range dst {
		dst[j] = src[2*j+which]
	}
}

// GridEmbed puts src [N, HO, WO] into half which of dst [N, HO, WO, 2]
// (the other half stays zero).
func GridEmbed[T Float](which int, src, dst []T) {
	for j, v := range src {
		dst[2*j+which] = v
	}
}

// AffineGridBase is torch's base coordinate along an axis of n points
// (affine_grid's linspace_from_neg_one): 0 for n = 1, otherwise −1 to 1
// in n steps, times (n − 1)/n unless alignCorners (pixel centres), in
// T's arithmetic as torch's.
func AffineGridBase[T Float](n int, alignCorners bool) []T {
	v := make([]T, n)
	if n <= 1 {
		return v
	}
	step := T(2) / T(n-1)
	for i := range v {
		// torch's linspace: from the start in the first half, from the end
		// in the second.
		if i < n/2 {
			v[i] = -1 + step*T(i)
		} else {
			v[i] = 1 - step*T(n-1-i)
		}
		if !alignCorners {
			v[i] = v[i] * T(n-1) / T(n) // torch: range * (n − 1) / n
		}
	}
	return v
}

// AffineGrid writes grid[n, h, w] = θ[n]·(x_w, y_h, 1) into out
// [N, H, W, 2] for theta [N, 2, 3] (F.affine_grid), x and y from
// AffineGridBase.
func AffineGrid[T Float](n, h, w int, alignCorners bool, theta, out []T) {
	xs, ys := AffineGridBase[T](w, alignCorners), AffineGridBase[T](h, alignCorners)
	par.For(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			t := theta[6*k : 6*k+6]
			o := out[k*h*w*2:]
			for i, y := range ys {
				for j, x := range xs {
					p := 2 * (i*w + j)
					o[p] = x*t[0] + y*t[1] + t[2]
					o[p+1] = x*t[3] + y*t[4] + t[5]
				}
			}
		}
	})
}

// AffineGridT is AffineGrid's transpose in theta: dtheta[n, j, :] =
// Σ_(h, w) gr[n, h, w, j]·(x_w, y_h, 1), pixels in order; dtheta [N, 2, 3]
// is overwritten.
func AffineGridT[T Float](n, h, w int, alignCorners bool, gr, dtheta []T) {
	xs, ys := AffineGridBase[T](w, alignCorners), AffineGridBase[T](h, alignCorners)
	par.For(n, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			var s [6]T
			src := gr[k*h*w*2:]
			for i, y := range ys {
				for j, x := range xs {
					p := 2 * (i*w + j)
					g0, g1 := src[p], src[p+1]
					s[0] += g0 * x
					s[1] += g0 * y
					s[2] += g0
					s[3] += g1 * x
					s[4] += g1 * y
					s[5] += g1
				}
			}
			copy(dtheta[6*k:6*k+6], s[:])
		}
	})
}
