package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// normInputs is n values of mixed magnitudes (some far from the mean, so
// that x − m rounds) and a mean-like m.
func normInputs[T Float](r *rand.Rand, n int) (x []T, m T) {
	x = make([]T, n)
	for i := range x {
		x[i] = T(math.Ldexp(r.NormFloat64(), r.IntN(40)-20))
		if i%7 == 3 {
			x[i] = 0
		}
	}
	return x, T(r.NormFloat64())
}

func same[T Float](a, b []T) bool {
	for i := range a {
		if math.Float64bits(float64(a[i])) != math.Float64bits(float64(b[i])) && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

func sameF(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// testNormKernels compares each fused row-normalisation kernel with the
// chain of kernels it replaces, bitwise, over lengths leaving every tail.
func testNormKernels[T Float](t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vectorModes(func(mode string) {
		for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 100, 257, 3400} {
			x, m := normInputs[T](r, n)
			u, _ := normInputs[T](r, n)
			rr, w, b := T(r.Float64()+0.5), T(r.NormFloat64()), T(r.NormFloat64())
			a, nr, c := T(r.NormFloat64()), -rr, T(r.NormFloat64())
			d := make([]T, n)
			Axpb(d, x, 1, -m)
			if got, want := SubSqSum(x, m), Dot(d, d); !sameF(got, want) {
				t.Errorf("%s n=%d: SubSqSum %v, chain %v", mode, n, got, want)
			}
			if got, want := SubDot(u, x, m), Dot(u, d); !sameF(got, want) {
				t.Errorf("%s n=%d: SubDot %v, chain %v", mode, n, got, want)
			}
			y := make([]T, n)
			Axpb(y, d, rr, 0)
			su, suy := SumDotNorm(u, x, m, rr)
			if !sameF(su, Sum(u)) || !sameF(suy, Dot(u, y)) {
				t.Errorf("%s n=%d: SumDotNorm %v %v, chain %v %v", mode, n, su, suy, Sum(u), Dot(u, y))
			}
			want := make([]T, n)
			Axpb(want, y, w, b)
			got := make([]T, n)
			NormAffine(got, x, m, rr, w, b)
			if !same(got, want) {
				t.Errorf("%s n=%d: NormAffine differs from the chain", mode, n)
			}
			Axpb(want, y, a, b)
			Axpb(want, want, nr, 0)
			SubMul(want, want, u, c)
			NormGrad(got, u, x, m, rr, a, b, nr, c)
			if !same(got, want) {
				t.Errorf("%s n=%d: NormGrad differs from the chain", mode, n)
			}
		}
	})
}

func TestNormKernels(t *testing.T) {
	t.Run("float32", testNormKernels[float32])
	t.Run("float64", testNormKernels[float64])
}
