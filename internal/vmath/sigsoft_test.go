package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sspRef is SigmoidSoftplus32's terms by math.Exp and math.Log1p (each
// within an ulp or so of float64), with e = 0 from |x| ≥ 708 as the
// kernel defines them.
func sspRef(x float64) (s, sc, l float64) {
	e := math.Exp(-math.Abs(x))
	if math.Abs(x) >= sspMax {
		e = 0
	}
	l = math.Log1p(e)
	if x < 0 {
		return e / (1 + e), 1 / (1 + e), l
	}
	return 1 / (1 + e), e / (1 + e), l
}

// sspInputs are the float32 logits the accuracy test sweeps: every
// 997th float32 of magnitude up to 130 (about 1.1e9/997 ≈ 1.1e6 values of
// each sign, all binades from the least subnormal up, where e is normal,
// subnormal and 0 in float32), every float32 within 64 ulps of the
// thresholds 87.3 (float32 e subnormal), 103.97 (0) and 708, and the
// special values.
func sspInputs() []float32 {
	var x []float32
	for b := uint32(0); ; b += 997 {
		v := math.Float32frombits(b)
		if v > 130 {
			break
		}
		x = append(x, v, -v)
	}
	for _, c := range []float32{87.33655, 88.72284, 103.27893, 103.97208, 708} {
		b := math.Float32bits(c)
		for d := b - 64; d <= b+64; d++ {
			v := math.Float32frombits(d)
			x = append(x, v, -v)
		}
	}
	inf := float32(math.Inf(1))
	x = append(x, 0, float32(math.Copysign(0, -1)), 1, -1, 1e-45, -1e-45, 1.17549435e-38, -1.17549435e-38,
		707.99994, -707.99994, 5000, -5000, math.MaxFloat32, -math.MaxFloat32, inf, -inf)
	return x
}

// SigmoidSoftplus32 agrees with math.Exp and math.Log1p to 1e-11
// relative for every float32 logit swept, so each term rounded to float32
// is within one ulp of the reference's (and float32's subnormal terms are
// not flushed); ±Inf give s 1 or 0, sc and l 0; NaN gives NaNs; the
// assembly and the Go loop agree bitwise.
func TestSigmoidSoftplus32(t *testing.T) {
	x := sspInputs()
	n := len(x)
	gs, gsc, gl := make([]float64, n), make([]float64, n), make([]float64, n)
	sigmoidSoftplusGo(x, gs, gsc, gl)
	sspModes(func(mode string) { t.Run(mode, func(t *testing.T) { testSigmoidSoftplus32(t, x, gs, gsc, gl) }) })
}

func testSigmoidSoftplus32(t *testing.T, x []float32, gs, gsc, gl []float64) {
	n := len(x)
	s, sc, l := make([]float64, n), make([]float64, n), make([]float64, n)
	SigmoidSoftplus32(x, s, sc, l)
	worst, worstUlp := 0.0, 0.0
	for i, xv := range x {
		rs, rsc, rl := sspRef(float64(xv))
		for j, p := range [][3]float64{{s[i], rs, gs[i]}, {sc[i], rsc, gsc[i]}, {l[i], rl, gl[i]}} {
			got, want, gogot := p[0], p[1], p[2]
			if math.Float64bits(got) != math.Float64bits(gogot) {
				t.Fatalf("x = %v: term %d = %v, Go loop %v", xv, j, got, gogot)
			}
			d := 0.0
			if got != want {
				d = math.Abs(got-want) / math.Abs(want)
			}
			if !(d <= 1e-11) {
				t.Fatalf("x = %v: term %d = %v, want %v (rel %v)", xv, j, got, want, d)
			}
			worst = max(worst, d)
			u := ulps32(float32(got), float32(want))
			if u > 1 {
				t.Fatalf("x = %v: term %d rounds to %v, want %v (%v ulps)", xv, j, float32(got), float32(want), u)
			}
			worstUlp = max(worstUlp, u)
		}
	}
	t.Logf("%d logits: worst relative difference %.2g, worst float32 ulps %v", n, worst, worstUlp)

	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	x = []float32{inf, -inf, nan, -nan, 1, nan, 2, 3, -inf}
	s, sc, l = make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
	SigmoidSoftplus32(x, s, sc, l)
	for i, xv := range x {
		switch {
		case xv != xv:
			if s[i] == s[i] || sc[i] == sc[i] || l[i] == l[i] {
				t.Errorf("x = NaN: %v %v %v, want NaNs", s[i], sc[i], l[i])
			}
		case math.IsInf(float64(xv), 0):
			ws, wsc := 1.0, 0.0
			if xv < 0 {
				ws, wsc = 0, 1
			}
			if s[i] != ws || sc[i] != wsc || l[i] != 0 {
				t.Errorf("x = %v: %v %v %v, want %v %v 0", xv, s[i], sc[i], l[i], ws, wsc)
			}
		}
	}
}

// SigmoidSoftplus32's tails (every length to 40, at every offset of the
// AVX-512 vector width in a larger slice) give each element the bits of the
// element alone.
func TestSigmoidSoftplus32Tails(t *testing.T) {
	sspModes(func(mode string) {
		r := rand.New(rand.NewPCG(3, 4))
		buf := make([]float32, 64)
		for i := range buf {
			buf[i] = float32(r.NormFloat64() * 8)
		}
		buf[5], buf[17] = float32(math.Inf(1)), 95 // a padded lane past an Inf, a subnormal e
		for off := 0; off < 16; off++ {
			for n := 0; n <= 40; n++ {
				x := buf[off : off+n]
				// outputs unaligned too, with a sentinel past the end
				s, sc, l := make([]float64, n+3), make([]float64, n+3), make([]float64, n+3)
				for _, o := range [][]float64{s, sc, l} {
					o[n+1], o[n+2] = 7, 7
				}
				SigmoidSoftplus32(x, s[1:n+1], sc[1:n+1], l[1:n+1])
				for i, xv := range x {
					ws, wsc, wl := sigmoidSoftplus1(float64(xv))
					if s[1+i] != ws || sc[1+i] != wsc || l[1+i] != wl {
						t.Fatalf("%s off %d n %d: [%d] = %v %v %v, want %v %v %v", mode, off, n, i, s[1+i], sc[1+i], l[1+i], ws, wsc, wl)
					}
				}
				for _, o := range [][]float64{s, sc, l} {
					if o[0] != 0 || o[n+1] != 7 || o[n+2] != 7 {
						t.Fatalf("%s off %d n %d: wrote outside the slice", mode, off, n)
					}
				}
			}
		}
	})
}

// sspModes runs f with each of SigmoidSoftplus32's loops this CPU has:
// AVX-512, AVX2, Go.
func sspModes(f func(mode string)) {
	old := hasAVX512
	defer func() { hasAVX512 = old }()
	if old {
		f("avx512")
	}
	hasAVX512 = false
	vectorModes(f)
}

func BenchmarkSigmoidSoftplus32(b *testing.B) {
	sspModes(func(mode string) {
		b.Run(mode, func(b *testing.B) {
			const n = 4096
			r := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 3)
			}
			s, sc, l := make([]float64, n), make([]float64, n), make([]float64, n)
			b.SetBytes(4 * n)
			for b.Loop() {
				SigmoidSoftplus32(x, s, sc, l)
			}
		})
	})
}
