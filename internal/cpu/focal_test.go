package cpu

import (
	"math"
	"math/rand/v2"
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

// BenchmarkFocalKernels times the fused kernels on a million float32
// logits (normal, σ 3; one target in 91 set to 1, as RetinaNet's), α 0.25,
// γ 2.
func BenchmarkFocalKernels(b *testing.B) {
	const n = 1 << 20
	r := rand.New(rand.NewPCG(1, 2))
	x, t, u, out := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
		u[i] = 1
		if r.IntN(91) == 0 {
			t[i] = 1
		}
	}
	b.Run("loss", func(b *testing.B) {
		for b.Loop() {
			FocalLoss(out, x, t, 0.25, 2)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
	})
	b.Run("gradx", func(b *testing.B) {
		for b.Loop() {
			FocalLossGrad(out, x, t, u, 0.25, 2, false)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
	})
}

// f32 is a float32 type other than float32: FocalLoss takes it through
// the generic loop (focalTerms32), float32 through vmath.
type f32 float32

// The float32 kernels give each element the same bits wherever the
// slices are cut (chunks, par's ranges), and agree with the generic loop
// to a float32 ulp or so.
func TestFocalChunks(t *testing.T) {
	const n = 3*focalChunk + 13
	r := rand.New(rand.NewPCG(5, 6))
	x, tg, u := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 5)
		if i%7 == 0 {
			x[i] *= 30 // saturated sigmoids, subnormal terms
		}
		tg[i] = float32(r.IntN(5)) / 4
		u[i] = float32(r.Float64() + 0.5)
	}
	named := func(v []float32) []f32 {
		o := make([]f32, len(v))
		for i, e := range v {
			o[i] = f32(e)
		}
		return o
	}
	xn, tn, un := named(x), named(tg), named(u)
	for _, c := range []struct{ alpha, gamma float64 }{{0.25, 2}, {-1, 1.5}, {0.5, 0}, {0.25, 1}} {
		for k := 0; k < 3; k++ {
			whole, parts := make([]float32, n), make([]float32, n)
			wn := make([]f32, n)
			run := func(out, x, tg, u []float32) {
				if k == 0 {
					FocalLoss(out, x, tg, c.alpha, c.gamma)
				} else {
					FocalLossGrad(out, x, tg, u, c.alpha, c.gamma, k == 2)
				}
			}
			run(whole, x, tg, u)
			for lo := 0; lo < n; {
				hi := min(n, lo+1+r.IntN(2*focalChunk))
				run(parts[lo:hi], x[lo:hi], tg[lo:hi], u[lo:hi])
				lo = hi
			}
			if k == 0 {
				FocalLoss(wn, xn, tn, c.alpha, c.gamma)
			} else {
				FocalLossGrad(wn, xn, tn, un, c.alpha, c.gamma, k == 2)
			}
			for i := range whole {
				if math.Float32bits(whole[i]) != math.Float32bits(parts[i]) {
					t.Fatalf("%+v kernel %d: [%d] = %v whole, %v in parts", c, k, i, whole[i], parts[i])
				}
				if d := math.Abs(float64(whole[i]) - float64(wn[i])); d > 1.2e-7*math.Abs(float64(wn[i]))+1e-44 {
					t.Fatalf("%+v kernel %d: [%d] = %v, generic loop %v", c, k, i, whole[i], wn[i])
				}
			}
		}
	}
}

// Infinite logits: the float32 loss equals the float64 one (±Inf, not
// NaN), and with γ = 0 the gradient w.r.t. x is torch's finite value
// (found by review: (|x| ± x)/2 and ce·0 gave NaN).
func TestFocalInfiniteLogits(t *testing.T) {
	inf := math.Inf(1)
	x64, t64, u64 := []float64{inf, -inf}, []float64{0, 1}, []float64{1, 1}
	x32, t32, u32 := []float32{float32(inf), float32(-inf)}, []float32{0, 1}, []float32{1, 1}
	for _, gamma := range []float64{2, 0} {
		l64, l32 := make([]float64, 2), make([]float32, 2)
		FocalLoss(l64, x64, t64, 0.25, gamma)
		FocalLoss(l32, x32, t32, 0.25, gamma)
		for i := range l64 {
			if !(float64(l32[i]) == l64[i]) || !math.IsInf(l64[i], 1) {
				t.Errorf("gamma %v: loss at x=%v t=%v: float32 %v, float64 %v, want +Inf", gamma, x64[i], t64[i], l32[i], l64[i])
			}
		}
	}
	want := []float64{0.75, -0.25} // torch's, gamma 0
	g64, g32 := make([]float64, 2), make([]float32, 2)
	FocalLossGrad(g64, x64, t64, u64, 0.25, 0, false)
	FocalLossGrad(g32, x32, t32, u32, 0.25, 0, false)
	for i := range want {
		if g64[i] != want[i] || float64(g32[i]) != want[i] {
			t.Errorf("gamma 0: dl/dx at x=%v t=%v: float64 %v, float32 %v, want %v", x64[i], t64[i], g64[i], g32[i], want[i])
		}
	}
}
