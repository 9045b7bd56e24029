package vmath

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ulps is the distance of got from want in units in the last place of
// want's type.
func ulps32(got, want float32) float64 {
	if got == want {
		return 0
	}
	return math.Abs(float64(got)-float64(want)) / float64(math.Nextafter32(float32(math.Abs(float64(want))), float32(math.Inf(1)))-float32(math.Abs(float64(want))))
}

func ulps64(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / (math.Nextafter(math.Abs(want), math.Inf(1)) - math.Abs(want))
}

// expInputs covers the polynomial's range: every power-of-two interval,
// the round-to-nearest boundaries at half-integers of x·log2 e, and lengths
// that leave every tail size.
func expInputs(r *rand.Rand, n int, lo float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		switch i % 4 {
		case 0:
			x[i] = lo * r.Float64()
		case 1:
			x[i] = -r.Float64() * 2
		case 2:
			x[i] = (float64(-r.IntN(int(-lo))) + 0.5) * math.Ln2
		default:
			x[i] = -math.Ldexp(r.Float64(), -r.IntN(30))
		}
	}
	return x
}

// eachKernel runs f once with every exp kernel this CPU has: the
// AVX-512 one (if present) and the AVX2 one, or the Go fallback.
func eachKernel(t *testing.T, f func(t *testing.T)) {
	old := hasAVX512
	defer func() { hasAVX512 = old }()
	for _, on := range []bool{old, false} {
		hasAVX512 = on
		t.Run(map[bool]string{true: "avx512", false: "avx2-or-go"}[on], f)
		if !old {
			return
		}
	}
}

func TestExpSum(t *testing.T) { eachKernel(t, testExpSum) }

func TestExpSumLimits(t *testing.T) { eachKernel(t, testExpSumLimits) }

func testExpSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 48, 1000, 1003, 5000} {
		x := expInputs(r, n, -87)
		x32 := make([]float32, n)
		for i, v := range x {
			x32[i] = float32(v)
		}
		shift := 0.75
		d32 := make([]float32, n)
		s32 := ExpSum(d32, x32, float32(shift))
		d64 := make([]float64, n)
		s64 := ExpSum(d64, x, shift)
		var w32, w64 float64
		var worst32, worst64 float64
		for i := range x {
			e32 := float32(math.Exp(float64(x32[i] - float32(shift))))
			e64 := math.Exp(x[i] - shift)
			w32 += float64(e32)
			w64 += e64
			if x32[i]-float32(shift) < -87.33 && d32[i] < 0x1p-125 {
				continue // 0 or a subnormal below the normal range, as documented
			}
			worst32 = math.Max(worst32, ulps32(d32[i], e32))
			worst64 = math.Max(worst64, ulps64(d64[i], e64))
		}
		if worst32 > 2 || worst64 > 2 {
			t.Errorf("n=%d: exp error %.2f ulp (float32), %.2f ulp (float64), want <= 2", n, worst32, worst64)
		}
		if math.Abs(s32-w32) > 1e-6*math.Abs(w32) || math.Abs(s64-w64) > 1e-14*math.Abs(w64) {
			t.Errorf("n=%d: sums %v %v, want %v %v", n, s32, s64, w32, w64)
		}
	}
}

func testExpSumLimits(t *testing.T) {
	inf := math.Inf(1)
	x := []float64{-inf, -800, -708.4, -100, -88, 0, 88, 700, -inf}
	d := make([]float64, len(x))
	ExpSum(d, x, 0)
	for i, v := range x {
		want := math.Exp(v)
		if v < -708.3 && d[i] < 0x1p-1021 {
			continue // 0 or a subnormal, as documented
		}
		if ulps64(d[i], want) > 2 {
			t.Errorf("exp(%v) = %v, want %v", v, d[i], want)
		}
	}
	x32 := []float32{float32(-inf), -100, -87.4, -87, -50, 0, 50, 88, float32(-inf)}
	d32 := make([]float32, len(x32))
	ExpSum(d32, x32, 0)
	for i, v := range x32 {
		want := float32(math.Exp(float64(v)))
		if v < -87.33 && d32[i] < 0x1p-125 {
			continue
		}
		if ulps32(d32[i], want) > 2 {
			t.Errorf("exp(%v) = %v, want %v", v, d32[i], want)
		}
	}
}

func TestMax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 4, 5, 8, 9, 17, 100} {
		for _, special := range []string{"", "nan", "inf", "-inf"} {
			x := make([]float64, n)
			for i := range x {
				x[i] = r.NormFloat64()
			}
			if n > 0 {
				k := r.IntN(n)
				switch special {
				case "nan":
					x[k] = math.NaN()
				case "inf":
					x[k] = math.Inf(1)
				case "-inf":
					for i := range x {
						x[i] = math.Inf(-1)
					}
				}
			}
			x32 := make([]float32, n)
			for i, v := range x {
				x32[i] = float32(v)
			}
			want, want32 := maxGo(x), maxGo(x32)
			got64, got32 := Max(x), Max(x32)
			if !(got64 == want || got64 != got64 && want != want) || !(got32 == want32 || got32 != got32 && want32 != want32) {
				t.Errorf("n=%d %s: Max = %v, %v, want %v, %v", n, special, got64, got32, want, want32)
			}
		}
	}
}

func TestAxpb(t *testing.T) {
	for _, n := range []int{0, 3, 8, 13, 64} {
		x := make([]float64, n)
		x32 := make([]float32, n)
		for i := range x {
			x[i] = float64(i) - 3.25
			x32[i] = float32(x[i])
		}
		d := make([]float64, n)
		d32 := make([]float32, n)
		Axpb(d, x, 1.5, -0.5)
		Axpb(d32, x32, 1.5, -0.5)
		for i := range x {
			if d[i] != 1.5*x[i]-0.5 || d32[i] != float32(1.5*x[i]-0.5) {
				t.Fatalf("n=%d: Axpb[%d] = %v, %v, want %v", n, i, d[i], d32[i], 1.5*x[i]-0.5)
			}
		}
	}
}

func BenchmarkExpSum(b *testing.B) {
	x := make([]float32, 1000)
	for i := range x {
		x[i] = -float32(i%37) / 5
	}
	d := make([]float32, 1000)
	b.SetBytes(4000)
	for b.Loop() {
		ExpSum(d, x, 0)
	}
}

func TestDotSumMulSubSubMul(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 5, 8, 12, 33, 1000} {
		x, y := make([]float64, n), make([]float64, n)
		x32, y32 := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = r.NormFloat64(), r.NormFloat64()
			x32[i], y32[i] = float32(x[i]), float32(y[i])
		}
		var dot, dot32, sum, sum32 float64
		for i := range x {
			dot += x[i] * y[i]
			sum += x[i]
			dot32 += float64(x32[i]) * float64(y32[i])
			sum32 += float64(x32[i])
		}
		if g := Dot(x, y); math.Abs(g-dot) > 1e-13*float64(n+1) {
			t.Errorf("n=%d: Dot = %v, want %v", n, g, dot)
		}
		if g := Dot(x32, y32); math.Abs(g-dot32) > 1e-6*float64(n+1) {
			t.Errorf("n=%d: Dot float32 = %v, want %v", n, g, dot32)
		}
		if g := Sum(x); math.Abs(g-sum) > 1e-13*float64(n+1) {
			t.Errorf("n=%d: Sum = %v, want %v", n, g, sum)
		}
		if g := Sum(x32); math.Abs(g-sum32) > 1e-6*float64(n+1) {
			t.Errorf("n=%d: Sum float32 = %v, want %v", n, g, sum32)
		}
		d := make([]float64, n)
		d32 := make([]float32, n)
		MulSub(d, x, y, 0.5)
		MulSub(d32, x32, y32, 0.5)
		for i := range x {
			if d[i] != x[i]*(y[i]-0.5) || d32[i] != x32[i]*(y32[i]-0.5) {
				t.Fatalf("n=%d: MulSub[%d] = %v, %v, want %v", n, i, d[i], d32[i], x[i]*(y[i]-0.5))
			}
		}
		SubMul(d, x, y, 1.25)
		SubMul(d32, x32, y32, 1.25)
		for i := range x {
			w := math.FMA(-1.25, y[i], x[i])
			w32 := float32(math.FMA(-1.25, float64(y32[i]), float64(x32[i])))
			if d[i] != w || d32[i] != w32 {
				t.Fatalf("n=%d: SubMul[%d] = %v, %v, want %v, %v", n, i, d[i], d32[i], w, w32)
			}
		}
	}
}

// TestAxpbAtParts: a vector done in parts with AxpbAt is bitwise one Axpb
// on it, for parts at any offset, float32 and float64, random values and,
// in float32, a·x + b where rounding the float64 FMA to float32 (Axpb's Go
// tail) differs from one rounding (its vector loop): a = 2⁻¹²(1 + 2⁻¹⁸),
// x = 2⁻¹²(1 − 2⁻¹⁸), b = 1 + 2⁻²³, a·x + b = 1 + 2⁻²³ + 2⁻²⁴ − 2⁻⁶⁰
// (1 + 2⁻²³ rounded once, 1 + 2⁻²² through float64's tie).
func TestAxpbAtParts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, x, b := float32(math.Ldexp(1+0x1p-18, -12)), float32(math.Ldexp(1-0x1p-18, -12)), float32(1+0x1p-23)
	for _, l := range []int{1, 5, 8, 13, 64, 100, 903} {
		tie := make([]float32, l)
		for i := range tie {
			tie[i] = x
		}
		axpbAtParts(t, r, tie, a, b)
		x32, x64 := make([]float32, l), make([]float64, l)
		for i := range x64 {
			x64[i] = r.NormFloat64()
			x32[i] = float32(x64[i])
		}
		axpbAtParts(t, r, x32, float32(r.NormFloat64()), float32(r.NormFloat64()))
		axpbAtParts(t, r, x64, r.NormFloat64(), r.NormFloat64())
	}
}

func axpbAtParts[T Float](t *testing.T, r *rand.Rand, x []T, a, b T) {
	l := len(x)
	want := make([]T, l)
	Axpb(want, x, a, b)
	for range 10 {
		got := slices.Clone(x)
		for p := 0; p < l; {
			q := min(l, p+1+r.IntN(17))
			AxpbAt(got[p:q], got[p:q], a, b, p, l)
			p = q
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%T length %d: AxpbAt's parts %v differ from Axpb's %v", x[0], l, got, want)
		}
	}
}
