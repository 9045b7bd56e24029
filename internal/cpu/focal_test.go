package cpu

import (
	"math"
	"testing"
)

// focalTerms32 agrees with focalTerms to 1e-9 relative (a float32 ulp is
// 6e-8) over the logits float32 can hold, down to float32's subnormals.
func TestFocalTerms32(t *testing.T) {
	worst := 0.0
	check := func(x float64) {
		s, sc, p, n := focalTerms(x)
		s2, sc2, p2, n2 := focalTerms32(x)
		for i, pair := range [][2]float64{{s, s2}, {sc, sc2}, {p, p2}, {n, n2}} {
			if math.Abs(pair[0]) < 1e-46 && math.Abs(pair[1]) < 1e-46 {
				continue // below float32's least subnormal: 0 in the result
			}
			if d := math.Abs(pair[1]-pair[0]) / math.Abs(pair[0]); !(d <= 1e-9) {
				t.Fatalf("x = %v: term %d = %v, want %v (rel %v)", x, i, pair[1], pair[0], d)
			} else {
				worst = max(worst, d)
			}
		}
	}
	for i := -200000; i <= 200000; i++ {
		check(float64(i) * 1e-3) // |x| ≤ 200, step 0.001
	}
	for _, x := range []float64{0, 1e-30, -1e-30, 500, -500, 699.9, 700, 745, 800, -800, math.MaxFloat32, -math.MaxFloat32} {
		check(x)
	}
	t.Logf("worst relative difference %.2g", worst)
}

// The fused kernels agree, float32 against float64, to a few float32
// ulps, and their gradients with central differences of the loss (float64).
func TestFocalKernels(t *testing.T) {
	const n = 2001
	x64, t64, u64 := make([]float64, n), make([]float64, n), make([]float64, n)
	x32, t32, u32 := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x64 {
		x32[i] = float32(float64(i-n/2) * 0.013)
		t32[i] = float32(i%5) / 4
		u32[i] = 1 + float32(i%3)
		x64[i], t64[i], u64[i] = float64(x32[i]), float64(t32[i]), float64(u32[i])
	}
	for _, c := range []struct{ alpha, gamma float64 }{{0.25, 2}, {-1, 1.5}, {0.5, 0}, {0.25, 1}} {
		l64, l32 := make([]float64, n), make([]float32, n)
		FocalLoss(l64, x64, t64, c.alpha, c.gamma)
		FocalLoss(l32, x32, t32, c.alpha, c.gamma)
		for i := range l64 {
			if d := math.Abs(float64(l32[i]) - l64[i]); d > 3e-7*math.Abs(l64[i])+1e-40 {
				t.Fatalf("%+v: l32[%d] = %v, l64 %v", c, i, l32[i], l64[i])
			}
		}
		for _, wrtT := range []bool{false, true} {
			g64, g32 := make([]float64, n), make([]float32, n)
			FocalLossGrad(g64, x64, t64, u64, c.alpha, c.gamma, wrtT)
			FocalLossGrad(g32, x32, t32, u32, c.alpha, c.gamma, wrtT)
			const h = 1e-6
			for i := range g64 {
				xp, xm, tp, tm := x64[i], x64[i], t64[i], t64[i]
				if wrtT {
					tp, tm = tp+h, tm-h
				} else {
					xp, xm = xp+h, xm-h
				}
				lp, lm := []float64{0}, []float64{0}
				FocalLoss(lp, []float64{xp}, []float64{tp}, c.alpha, c.gamma)
				FocalLoss(lm, []float64{xm}, []float64{tm}, c.alpha, c.gamma)
				fd := u64[i] * (lp[0] - lm[0]) / (2 * h)
				if d := math.Abs(fd - g64[i]); d > 1e-6*math.Abs(g64[i])+1e-8 {
					t.Fatalf("%+v wrtT %t: grad[%d] = %v, central difference %v", c, wrtT, i, g64[i], fd)
				}
				if d := math.Abs(float64(g32[i]) - g64[i]); d > 3e-7*math.Abs(g64[i])+1e-38 {
					t.Fatalf("%+v wrtT %t: g32[%d] = %v, g64 %v", c, wrtT, i, g32[i], g64[i])
				}
			}
		}
	}
}
