package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// reluInputs is n values starting with the special ones (±0, ±Inf, NaNs
// of both signs, subnormals, the extremes), then random ones.
func reluInputs[T Float](n int) []T {
	r := rand.New(rand.NewPCG(31, 32))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(math.NaN(), -1),
		5e-324, -5e-324, 1e-45, -1e-45, math.MaxFloat32, -math.MaxFloat32, math.MaxFloat64, -math.MaxFloat64, 1, -1}
	x := make([]T, n)
	for i := range x {
		if i < len(special) {
			x[i] = T(special[i])
		} else {
			x[i] = T(r.NormFloat64())
		}
	}
	return x
}

// sameFloats fails t unless got and want hold the same bits, or both a
// NaN (of the same sign) where want has one.
func sameFloats[T Float](t *testing.T, what string, got, want []T) {
	t.Helper()
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) && math.IsNaN(g) && math.Signbit(g) == math.Signbit(w) {
			continue
		}
		if math.Float64bits(g) != math.Float64bits(w) {
			t.Fatalf("%s: [%d] = %v (sign %v), want %v (sign %v)", what, i, g, math.Signbit(g), w, math.Signbit(w))
		}
	}
}

func testReLU[T Float](t *testing.T) {
	vectorModes(func(mode string) {
		for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 16, 17, 33, 1000} {
			x := reluInputs[T](n)
			name := fmt.Sprintf("%s/n=%d", mode, n)
			want := make([]T, n)
			for i, v := range x {
				want[i] = v
				if !(v > 0) && v == v {
					want[i] = 0 // +0, also for −0
				}
			}
			got := reluInputs[T](n)
			for i := range got {
				got[i] = -7 // every element must be written
			}
			ReLU(got, x)
			sameFloats(t, "ReLU "+name, got, want)
			for _, ab := range [][2]T{{1, 0}, {1, 0.01}, {1, -0.5}, {2, T(math.Copysign(0, -1))}} {
				for i, v := range x {
					want[i] = ab[1]
					if v > 0 {
						want[i] = ab[0]
					}
				}
				Positive(got, x, ab[0], ab[1])
				sameFloats(t, fmt.Sprintf("Positive %v %s", ab, name), got, want)
			}
			u := reluInputs[T](n)
			for i := range u {
				u[i] = u[(i*7+3)%n] // the specials against every sign of x
			}
			for _, ab := range [][2]T{{1, 0}, {1, 0.01}, {1, -0.5}} {
				slope := make([]T, n)
				Positive(slope, x, ab[0], ab[1])
				for i := range want {
					want[i] = u[i] * slope[i]
				}
				PositiveMul(got, x, u, ab[0], ab[1])
				sameFloats(t, fmt.Sprintf("PositiveMul %v %s", ab, name), got, want)
			}
			inPlace := append([]T(nil), x...)
			ReLU(inPlace, inPlace)
			ReLU(want, x)
			sameFloats(t, "ReLU in place "+name, inPlace, want)
		}
	})
}

// TestReLU: ReLU and Positive, with and without the assembly loops, give
// torch.relu's values (a NaN kept, with its sign; +0 for ±0) and the
// selection, at lengths around the vector widths, in place too.
func TestReLU(t *testing.T) {
	t.Run("float32", testReLU[float32])
	t.Run("float64", testReLU[float64])
}
