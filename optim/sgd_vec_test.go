package optim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSGDMomVec compares sgdMomVec (the AVX2 kernel on amd64) with the
// Go loop's fma32 bit for bit, with and without weight decay, on the
// first step (a new buffer) and after, on random
// values of many magnitudes with zeros of both signs, subnormals,
// infinities and NaNs, over lengths around the 8-float register.
func TestSGDMomVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e-39, float32(math.Inf(1)),
		float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, 1}
	value := func() float32 {
		if rng.IntN(10) == 0 {
			return special[rng.IntN(len(special))]
		}
		return float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6)))
	}
	done := 0
	for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 64, 1003} {
		for _, flags := range []int{0, 1, 2, 3} {
			decay, first := flags&1 != 0, flags&2 != 0
			ps, gs, bs := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range ps {
				ps[i], gs[i], bs[i] = value(), value(), value()
			}
			wp, wb := append([]float32(nil), ps...), append([]float32(nil), bs...)
			wd, mom, damp1, negLR := float32(1e-4), float32(0.9), float32(0.75), float32(-0.0125)
			if !decay {
				wd = 0
			}
			for j := range wp {
				d := gs[j]
				if decay {
					d = fma(wd, wp[j], d)
				}
				if first {
					wb[j] = d
				} else {
					wb[j] = fma(damp1, d, wb[j]*mom)
				}
				wp[j] = fma(negLR, wb[j], wp[j])
			}
			k := 0
			if n > 0 {
				k = sgdMomVec(ps, gs, bs, wd, mom, damp1, negLR, decay, first)
			}
			done += k
			for j := 0; j < k; j++ {
				if math.Float32bits(ps[j]) != math.Float32bits(wp[j]) || math.Float32bits(bs[j]) != math.Float32bits(wb[j]) {
					t.Fatalf("n %d, decay %v, first %v, element %d: p %v b %v, Go loop p %v b %v", n, decay, first, j, ps[j], bs[j], wp[j], wb[j])
				}
			}
			if k > n || k%8 != 0 {
				t.Fatalf("n %d: updated %d elements", n, k)
			}
		}
	}
	if sgdAVX2 && done == 0 {
		t.Error("the kernel updated nothing with AVX2 and FMA3 present")
	}
}
