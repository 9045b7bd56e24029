package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// leakyComposed is LeakyReLU with the Backward it had before LeakyGrad:
// Gorgonia's HadamardProd(U, slopeSpec(x)), the reference LeakyGrad must
// equal bitwise.
func leakyComposed(x *gorgonia.Node, slope float64) (*gorgonia.Node, error) {
	s := x.Shape()
	spec := leakySpec(s, slope)
	spec.Name = "LeakyReLUComposed"
	spec.Backward = func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
		m, err := ad.Apply(slopeSpec(s, slope), in[0])
		if err != nil {
			return nil, err
		}
		d, err := gorgonia.HadamardProd(u, m)
		return gorgonia.Nodes{d}, err
	}
	return ad.Apply(spec, x)
}

// leakyOrders runs leaky on x (length n) and returns its value and the
// derivatives of orders 1-3 w.r.t. x of f = Σ r⊙y⊙y, Σ v⊙∂f and Σ w⊙∂²f
// (the upstream of each LeakyGrad depends on x, so every order is
// nonzero), on the TapeMachine (graphtest.Eval: float32 values widened,
// which keeps their bits apart).
func leakyOrders[T ad.Float](t *testing.T, leaky func(*gorgonia.Node) (*gorgonia.Node, error), x, r, v, w []T) [][]float64 {
	t.Helper()
	var in []*tensor.Dense
	for _, d := range [][]T{x, r, v, w} {
		in = append(in, tensor.New(tensor.WithShape(len(d)), tensor.WithBacking(d)))
	}
	g, ins := graphtest.Inputs(in) // copies
	must := func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	xn, rn, vn, wn := ins[0], ins[1], ins[2], ins[3]
	y := must(leaky(xn))
	f := must(gorgonia.Sum(must(gorgonia.HadamardProd(must(gorgonia.HadamardProd(y, rn)), y))))
	nodes := []*gorgonia.Node{y}
	for _, up := range []*gorgonia.Node{nil, vn, wn} {
		if up != nil {
			f = must(gorgonia.Sum(must(gorgonia.HadamardProd(nodes[len(nodes)-1], up))))
		}
		d, err := ad.Grad(f, xn)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, d[0])
	}
	out, err := graphtest.Eval(g, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// leakyGradInputs is x, r, v, w of length n: random, with NaN, ±0, ±Inf
// in x at the front and in r and v further on (upstream specials against
// either sign of x).
func leakyGradInputs[T ad.Float](n int) (x, r, v, w []T) {
	rng := rand.New(rand.NewPCG(26, uint64(n)))
	x, r, v, w = make([]T, n), make([]T, n), make([]T, n), make([]T, n)
	for i := range x {
		x[i], r[i], v[i], w[i] = T(3*rng.NormFloat64()), T(rng.NormFloat64()), T(rng.NormFloat64()), T(rng.NormFloat64())
	}
	special := []float64{math.NaN(), math.Copysign(math.NaN(), -1), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
	for i, s := range special {
		if i < n {
			x[i] = T(s)
		}
		if j := n - 1 - 2*i; j >= 0 {
			r[j] = T(s)
		}
		if j := n - 2 - 2*i; j >= 0 {
			v[j] = T(s)
		}
	}
	return x, r, v, w
}

// TestLeakyGradBitwise: LeakyReLU's value and derivatives of orders 1-3
// (through LeakyGrad) are bitwise those of the composed gradient
// HadamardProd(U, LeakySlope(x)) they replaced, NaNs included, for slopes
// 0 and 0.01, odd lengths on both sides of the worker split, at
// GOMAXPROCS 1, 2 and 4.
func TestLeakyGradBitwise(t *testing.T) {
	t.Run("float32", checkLeakyGradBitwise[float32])
	t.Run("float64", checkLeakyGradBitwise[float64])
}

func checkLeakyGradBitwise[T ad.Float](t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, n := range []int{1, 7, 13, 101, 3*5001 + 2} {
		x, r, v, w := leakyGradInputs[T](n)
		for _, slope := range []float64{0, 0.01} {
			want := leakyOrders(t, func(x *gorgonia.Node) (*gorgonia.Node, error) { return leakyComposed(x, slope) }, x, r, v, w)
			for _, procs := range []int{1, 2, 4} {
				runtime.GOMAXPROCS(procs)
				got := leakyOrders(t, func(x *gorgonia.Node) (*gorgonia.Node, error) { return LeakyReLU(x, slope) }, x, r, v, w)
				for o := range got {
					name := fmt.Sprintf("n=%d slope=%v GOMAXPROCS=%d order %d", n, slope, procs, o)
					for i, b := range want[o] {
						if a := got[o][i]; math.Float64bits(a) != math.Float64bits(b) {
							t.Fatalf("%s: [%d] (x = %v): LeakyGrad %v, composed %v", name, i, x[i], a, b)
						}
					}
				}
			}
		}
	}
}
