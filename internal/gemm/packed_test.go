package gemm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gops-dev/gops/internal/vmath"
)

// TestGemmPackedA checks GemmPackedA against Gemm bitwise, over shapes
// that take both of Gemm's splits, the direct B path (m ≤ MC), edge tiles
// in m and n and K blocks, with a NaN-filled C (beta 0 does not read it).
func TestGemmPackedA(t *testing.T) {
	testGemmPackedA[float32](t)
	testGemmPackedA[float64](t)
}

func testGemmPackedA[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, s := range []struct{ m, n, k int }{
		{1, 1, 1}, {5, 7, 3}, {12, 32, 256}, {96, 40, 300}, {97, 33, 257}, {256, 512, 256},
		{256, 64, 600}, {13, 2000, 70}, {300, 5, 9}, {64, 0, 5}, {0, 4, 4}, {7, 9, 0},
	} {
		lda, ldb, ldc := s.k+3, s.n+1, s.n+2
		a, b := make([]T, max(0, s.m*lda)), make([]T, max(0, s.k*ldb))
		for i := range a {
			a[i] = T(rng.NormFloat64())
		}
		for i := range b {
			b[i] = T(rng.NormFloat64())
		}
		want := make([]T, s.m*ldc)
		if err := Gemm(false, false, s.m, s.n, s.k, 1, a, max(1, lda), b, max(1, ldb), 0, want, max(1, ldc)); err != nil {
			t.Fatal(err)
		}
		pa, err := PackA(s.m, s.k, a, max(1, lda))
		if err != nil {
			t.Fatal(err)
		}
		// With a bias (−0, a NaN payload, an infinity among its values):
		// Gemm's C, then vmath.Axpb's pass of 1·c + b over each row.
		bias := make([]T, s.m)
		for i := range bias {
			bias[i] = T(rng.NormFloat64())
			switch i % 5 {
			case 1:
				bias[i] = T(math.Copysign(0, -1))
			case 2:
				bias[i] = nanPayload[T](rng)
			case 3:
				bias[i] = T(math.Inf(-1))
			}
		}
		wantBias := slices.Clone(want)
		for i := 0; i < s.m; i++ {
			row := wantBias[i*ldc:][:s.n]
			vmath.Axpb(row, row, 1, bias[i])
		}
		for round := 0; round < 3; round++ { // the packed A serves more than once
			got := make([]T, s.m*ldc)
			for i := range got {
				got[i] = T(math.NaN())
			}
			for i := 0; i < s.m; i++ { // outside the product: Gemm leaves it
				copy(got[i*ldc+s.n:(i+1)*ldc], want[i*ldc+s.n:(i+1)*ldc])
			}
			var bs []T
			w := want
			if round == 2 {
				bs, w = bias, wantBias
			}
			if err := GemmPackedA(pa, s.n, b, max(1, ldb), got, max(1, ldc), bs); err != nil {
				t.Fatal(err)
			}
			if i := bitsEq(got, w); i >= 0 {
				t.Fatalf("%T %+v bias %v: GemmPackedA's C[%d] = %v, want %v", T(0), s, bs != nil, i, got[i], w[i])
			}
		}
		pa.Release()
		pa.Release() // twice: nothing
		if s.m*s.k > 0 {
			if err := GemmPackedA(pa, s.n, b, max(1, ldb), want, max(1, ldc), nil); err == nil {
				t.Errorf("%+v: a released PackedA ran", s)
			}
		}
	}
}

// TestGemmPackedABadInput checks PackA's and GemmPackedA's errors.
func TestGemmPackedABadInput(t *testing.T) {
	if _, err := PackA(2, 3, make([]float32, 5), 3); err == nil {
		t.Error("PackA accepted a short A")
	}
	if _, err := PackA(-1, 3, make([]float32, 5), 3); err == nil {
		t.Error("PackA accepted a negative size")
	}
	if err := GemmPackedA[float32](nil, 1, make([]float32, 3), 1, make([]float32, 2), 1, nil); err == nil {
		t.Error("GemmPackedA accepted nil")
	}
	pa, err := PackA(2, 3, make([]float32, 6), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Release()
	if err := GemmPackedA(pa, 4, make([]float32, 12), 4, make([]float32, 8), 4, make([]float32, 3)); err == nil {
		t.Error("GemmPackedA accepted a bias of 3 for 2 rows")
	}
	if err := GemmPackedA(pa, 4, make([]float32, 11), 4, make([]float32, 8), 4, nil); err == nil {
		t.Error("GemmPackedA accepted a short B")
	}
	if err := GemmPackedA(pa, 4, make([]float32, 12), 4, make([]float32, 7), 4, nil); err == nil {
		t.Error("GemmPackedA accepted a short C")
	}
	if err := GemmPackedA(pa, -1, make([]float32, 12), 4, make([]float32, 8), 4, nil); err == nil {
		t.Error("GemmPackedA accepted a negative n")
	}

}

// TestGemmPackedAT checks PackAT's products against Gemm(true, false, ...)
// bitwise (a [k, m] with lda ≥ m, C's values NaN beforehand), and that a
// leading dimension below m is refused.
func TestGemmPackedAT(t *testing.T) {
	testGemmPackedAT[float32](t)
	testGemmPackedAT[float64](t)
}

func testGemmPackedAT[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range []struct{ m, n, k int }{
		{1, 1, 1}, {5, 7, 3}, {12, 32, 256}, {97, 33, 257}, {256, 196, 1024}, {13, 200, 70}, {300, 5, 9}, {64, 0, 5}, {7, 9, 0},
	} {
		lda, ldb := s.m+2, s.n+1
		a, b := make([]T, s.k*lda), make([]T, s.k*ldb)
		for i := range a {
			a[i] = T(rng.NormFloat64())
		}
		for i := range b {
			b[i] = T(rng.NormFloat64())
		}
		want := make([]T, s.m*max(1, s.n))
		if err := Gemm(true, false, s.m, s.n, s.k, 1, a, lda, b, ldb, 0, want, max(1, s.n)); err != nil {
			t.Fatal(err)
		}
		pa, err := PackAT(s.m, s.k, a, lda)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]T, len(want))
		for i := range got {
			got[i] = T(math.NaN())
		}
		if err := GemmPackedA(pa, s.n, b, ldb, got, max(1, s.n), nil); err != nil {
			t.Fatal(err)
		}
		pa.Release()
		if s.n > 0 && !slices.EqualFunc(got, want, func(x, y T) bool { return math.Float64bits(float64(x)) == math.Float64bits(float64(y)) }) {
			t.Fatalf("%T %+v: GemmPackedA of PackAT differs from Gemm(true, false)", T(0), s)
		}
	}
	if _, err := PackAT(4, 3, make([]T, 12), 3); err == nil {
		t.Error("PackAT took a leading dimension of 3 for 4 columns")
	}
}
