package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// The activation loops as they were before they ran in chunks without
// branches on the sign: the references the kernels must equal bitwise.

func leakyReLURef[T Float](slope float64, y, x []T) {
	for i, v := range x {
		switch {
		case v > 0 || v != v:
			y[i] = v
		case slope == 0:
			y[i] = 0
		default:
			y[i] = T(slope) * v
		}
	}
}

func leakySlopeRef[T Float](slope float64, y, x []T) {
	for i, v := range x {
		if v > 0 {
			y[i] = 1
		} else {
			y[i] = T(slope)
		}
	}
}

// activationInputs is random values with the special ones: ±0, ±Inf,
// NaNs of both signs, the smallest subnormals and normals, ±1; n long.
func activationInputs[T Float](n int) []T {
	r := rand.New(rand.NewPCG(21, 22))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(math.NaN(), -1),
		5e-324, -5e-324, 1e-45, -1e-45, 1.2e-38, -1.2e-38, 2.2e-308, -2.2e-308, 1, -1, math.MaxFloat32, -math.MaxFloat32}
	x := make([]T, n)
	for i := range x {
		if i < len(special) {
			x[i] = T(special[i])
			continue
		}
		x[i] = T(3 * r.NormFloat64())
	}
	return x
}

func testActivations[T Float](t *testing.T) {
	for _, n := range []int{0, 1, 7, 100, 1 << 15, 1<<15 + 3} {
		x := activationInputs[T](n)
		for _, slope := range []float64{0, 0.01, -0.5, 1, 2} {
			name := fmt.Sprintf("n=%d/slope=%v", n, slope)
			got, want := activationInputs[T](n), make([]T, n)
			LeakyReLU(slope, got, x)
			leakyReLURef(slope, want, x)
			if !slices.Equal(bitsOf(got), bitsOf(want)) { // NaNs too
				t.Fatalf("LeakyReLU %s: not the reference's bits", name)
			}
			LeakySlope(slope, got, x)
			leakySlopeRef(slope, want, x)
			sameBits(t, "LeakySlope "+name, got, want)
			u := slices.Clone(x)
			slices.Reverse(u) // the specials against random signs of x
			for i := range want {
				want[i] *= u[i] // u ⊙ LeakySlope(x), as nn's gradient was
			}
			LeakyGrad(slope, got, x, u)
			if !slices.Equal(bitsOf(got), bitsOf(want)) { // NaNs too
				t.Fatalf("LeakyGrad %s: not u ⊙ LeakySlope's bits", name)
			}
		}
	}
}

// TestActivationsRef: LeakyReLU and LeakySlope equal the branching loops
// they replaced (LeakyGrad u ⊙ LeakySlope's), bitwise (LeakyReLU's NaNs too), on special and random
// values at lengths on both
// sides of the split.
func TestActivationsRef(t *testing.T) {
	t.Run("float32", testActivations[float32])
	t.Run("float64", testActivations[float64])
}

// TestActivationsProcs: every activation kernel gives the same bits for
// any GOMAXPROCS.
func TestActivationsProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	x := activationInputs[float32](1<<16 + 5)
	kernels := map[string]func(y, x []float32){
		"Tanh": Tanh[float32], "Sigmoid": Sigmoid[float32], "Erf": Erf[float32],
		"ReLU":       func(y, x []float32) { LeakyReLU(0, y, x) },
		"LeakyReLU":  func(y, x []float32) { LeakyReLU(0.01, y, x) },
		"LeakySlope": func(y, x []float32) { LeakySlope(0.01, y, x) },
		"LeakyGrad":  func(y, x []float32) { LeakyGrad(0.01, y, x, x) },
	}
	for name, k := range kernels {
		var first []uint64
		for _, p := range []int{1, 2, 4} {
			runtime.GOMAXPROCS(p)
			y := make([]float32, len(x))
			k(y, x)
			if first == nil {
				first = bitsOf(y)
				continue
			}
			for i, b := range bitsOf(y) {
				if b != first[i] {
					t.Fatalf("%s: GOMAXPROCS=%d: [%d] differs from GOMAXPROCS=1", name, p, i)
				}
			}
		}
	}
}

// BenchmarkActivationKernels: ReLU and its slope over [8, 64, 112, 112]
// float32 (the ResNet stem's activation), against the branching loops
// (ref).
func BenchmarkActivationKernels(b *testing.B) {
	x := activationInputs[float32](8 * 64 * 112 * 112)
	y := make([]float32, len(x))
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"relu", func() { LeakyReLU(0, y, x) }},
		{"relu/ref", func() { leakyReLURef(0, y, x) }},
		{"slope", func() { LeakySlope(0, y, x) }},
		{"slope/ref", func() { leakySlopeRef(0, y, x) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
		})
	}
}
