package gemm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gops-dev/gops/gemm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Sgemm and Dgemm agree with gonum's over the four transpose cases.
func TestMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var ours gemm.Implementation
	var ref gonum.Implementation
	m, n, k := 37, 53, 301
	for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			a, b := make([]float64, m*k), make([]float64, k*n)
			for i := range a {
				a[i] = r.NormFloat64()
			}
			for i := range b {
				b[i] = r.NormFloat64()
			}
			lda, ldb := k, n
			if tA == blas.Trans {
				lda = m
			}
			if tB == blas.Trans {
				ldb = k
			}
			c0 := make([]float64, m*n)
			for i := range c0 {
				c0[i] = r.NormFloat64()
			}
			got, want := append([]float64(nil), c0...), append([]float64(nil), c0...)
			ours.Dgemm(tA, tB, m, n, k, 0.7, a, lda, b, ldb, -1.5, got, n)
			ref.Dgemm(tA, tB, m, n, k, 0.7, a, lda, b, ldb, -1.5, want, n)
			a32, b32, g32 := f32(a), f32(b), f32(c0)
			ours.Sgemm(tA, tB, m, n, k, 0.7, a32, lda, b32, ldb, -1.5, g32, n)
			for i := range want {
				if d := math.Abs(got[i] - want[i]); d > 1e-12 {
					t.Fatalf("Dgemm %v %v: C[%d] = %v, gonum %v", tA, tB, i, got[i], want[i])
				}
				if d := math.Abs(float64(g32[i]) - want[i]); d > 1e-4 {
					t.Fatalf("Sgemm %v %v: C[%d] = %v, gonum (float64) %v", tA, tB, i, g32[i], want[i])
				}
			}
		}
	}
}

func f32(s []float64) []float32 {
	o := make([]float32, len(s))
	for i, v := range s {
		o[i] = float32(v)
	}
	return o
}

// Bad arguments panic, as in every gonum BLAS routine, with the problem named.
func TestPanicsOnBadArguments(t *testing.T) {
	var ours gemm.Implementation
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "a: leading dimension 2 < 3") {
			t.Fatalf("recovered %v, want the leading-dimension message", r)
		}
	}()
	ours.Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 3, 1, make([]float64, 6), 2, make([]float64, 6), 2, 0, make([]float64, 4), 2)
}

// counting is gemm.Implementation counting its Dgemm calls.
type counting struct {
	gemm.Implementation
	calls *int
}

func (c counting) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, cs []float64, ldc int) {
	*c.calls++
	c.Implementation.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, cs, ldc)
}

// gorgonia.Use(gemm.Implementation{}) runs Gorgonia's own Mul on it.
func TestGorgoniaUse(t *testing.T) {
	calls := 0
	prev := G.WhichBLAS()
	G.Use(counting{calls: &calls})
	defer G.Use(prev)
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 3), G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))))
	b := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 0, 0, 1, 1, 1}))))
	p := G.Must(G.Mul(a, b))
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	want := []float64{4, 5, 10, 11}
	got := p.Value().Data().([]float64)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Mul = %v, want %v", got, want)
		}
	}
	if calls == 0 {
		t.Fatal("Gorgonia's Mul did not call Dgemm")
	}
}

func ExampleImplementation() {
	var impl gemm.Implementation // gorgonia.Use(impl) makes Gorgonia's products use it
	c := make([]float64, 4)
	impl.Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 3, 1,
		[]float64{1, 2, 3, 4, 5, 6}, 3, // A 2×3
		[]float64{1, 0, 0, 1, 1, 1}, 2, // B 3×2
		0, c, 2)
	fmt.Println(c)
	// Output: [4 5 10 11]
}
