package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestSoftmaxLarge checks Softmax and LogSoftmax and their gradients on
// tensors large enough to be split over goroutines, with contiguous lines
// (the last axis) and strided ones (a middle axis), against a float64
// reference written here with math.Exp, and bitwise across GOMAXPROCS.
func TestSoftmaxLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{40, 1003}, 1}, {[]int{3, 1001, 9}, 1}, {[]int{2, 5, 4099}, -1}} {
		size := tensor.Shape(c.shape).TotalSize()
		x, u := make([]float64, size), make([]float64, size)
		for i := range x {
			x[i], u[i] = 8*r.NormFloat64(), r.NormFloat64()
		}
		x[5] = math.Inf(-1) // a −Inf logit: probability 0
		for _, log := range []bool{false, true} {
			wantY, wantG := softmaxReference(c.shape, c.axis, x, u, log)
			for _, dtype := range []string{"float32", "float64"} {
				name := fmt.Sprintf("%v/axis%d/log=%v/%s", c.shape, c.axis, log, dtype)
				t.Run(name, func(t *testing.T) {
					// Absolute errors scale with a line's log Σ exp (the
					// log-softmax output) and Σ u (the gradients): about 30
					// and 60 here.
					rtol, atol := 1e-12, 1e-13
					if dtype == "float32" {
						rtol, atol = 1e-5, 5e-5
					}
					var first []float64
					for _, procs := range []int{1, 3} {
						old := runtime.GOMAXPROCS(procs)
						y, g := runSoftmax(t, dtype, c.shape, c.axis, log, x, u)
						runtime.GOMAXPROCS(old)
						golden.AssertClose(t, "output", y, wantY, rtol, atol)
						golden.AssertClose(t, "grad", g, wantG, rtol, atol)
						got := append(y, g...)
						if first == nil {
							first = got
							continue
						}
						for i := range got {
							if math.Float64bits(got[i]) != math.Float64bits(first[i]) {
								t.Fatalf("GOMAXPROCS %d: element %d = %v, %v with GOMAXPROCS 1", procs, i, got[i], first[i])
							}
						}
					}
				})
			}
		}
	}
}

// runSoftmax evaluates Softmax (or LogSoftmax) of x and the gradient of
// Σ u ⊙ y w.r.t. x on the TapeMachine.
func runSoftmax(t *testing.T, dtype string, shape []int, axis int, log bool, x, u []float64) (y, gx []float64) {
	t.Helper()
	dt := tensor.Float64
	if dtype == "float32" {
		dt = tensor.Float32
	}
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName("x"),
		gorgonia.WithValue(golden.Tensor(dtype, shape, x)))
	un := gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName("u"),
		gorgonia.WithValue(golden.Tensor(dtype, shape, u)))
	op := nn.Softmax
	if log {
		op = nn.LogSoftmax
	}
	yn, err := op(xn, axis)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(yn, un)))), xn)
	if err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	return graphtest.Floats(yn.Value()), graphtest.Floats(gr[0].Value())
}

// softmaxReference is softmax or log-softmax along axis and its gradient
// for upstream u, in float64 with math.Exp, line by line.
func softmaxReference(shape []int, axis int, x, u []float64, log bool) (y, g []float64) {
	if axis < 0 {
		axis += len(shape)
	}
	outer, n, inner := 1, shape[axis], 1
	for i, d := range shape {
		if i < axis {
			outer *= d
		} else if i > axis {
			inner *= d
		}
	}
	y, g = make([]float64, len(x)), make([]float64, len(x))
	for o := range outer {
		for i := range inner {
			at := func(k int) int { return (o*n+k)*inner + i }
			m := math.Inf(-1)
			for k := range n {
				m = math.Max(m, x[at(k)])
			}
			var s float64
			for k := range n {
				s += math.Exp(x[at(k)] - m)
			}
			var su, sus float64
			for k := range n {
				p := math.Exp(x[at(k)]-m) / s
				su += u[at(k)]
				sus += u[at(k)] * p
			}
			for k := range n {
				p := math.Exp(x[at(k)]-m) / s
				if log {
					y[at(k)] = x[at(k)] - m - math.Log(s)
					g[at(k)] = u[at(k)] - p*su
				} else {
					y[at(k)] = p
					g[at(k)] = p * (u[at(k)] - sus)
				}
			}
		}
	}
	return y, g
}
