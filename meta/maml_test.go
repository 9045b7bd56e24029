package meta

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// input is an input node of g holding a copy of data in shape.
func input(g *gorgonia.ExprGraph, name string, data []float64, shape ...int) *gorgonia.Node {
	v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), data...)))
	return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithValue(v), gorgonia.WithName(name))
}

// constant is a constant node of g holding data in shape.
func constant(t *testing.T, g *gorgonia.ExprGraph, data []float64, shape ...int) *gorgonia.Node {
	t.Helper()
	n, err := ad.Constant(g, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), data...))))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eval runs g once and returns the values of nodes (graphtest.Eval: read
// while the graph runs, as a node's Value after the run may be memory a
// later op reused).
func eval(t *testing.T, g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) [][]float64 {
	t.Helper()
	vals, err := graphtest.Eval(g, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// TestMAMLQuadratic checks MAML on quadratics, whose meta-gradient has a
// closed form: with L_s(θ) = ½θ·Aθ − b·θ and L_q(θ) = ½‖θ − c‖², each
// inner step is θ_{k+1} = θ_k − α(Aθ_k − b) = Mθ_k + αb for M = I − αA,
// and the meta-gradient is M^K·(θ_K − c) (second order) or θ_K − c
// (first order), for K = 1, 2, 3.
func TestMAMLQuadratic(t *testing.T) {
	a := []float64{2, 0.5, 0, 0.5, 1, -0.3, 0, -0.3, 1.5}
	bv := []float64{1, -2, 0.5}
	c := []float64{0.3, 0.7, -1}
	theta0 := []float64{0.2, -0.4, 1.1}
	alpha := 0.2
	matVec := func(m, x []float64) []float64 {
		y := make([]float64, 3)
		for i := range y {
			for j := range x {
				y[i] += m[3*i+j] * x[j]
			}
		}
		return y
	}
	for _, steps := range []int{1, 2, 3} {
		for _, first := range []bool{false, true} {
			g := gorgonia.NewGraph()
			theta := input(g, "theta", theta0, 3)
			an, bn, cn := constant(t, g, a, 3, 3), constant(t, g, bv, 3), constant(t, g, c, 3)
			support := func(at gorgonia.Nodes) (*gorgonia.Node, error) {
				b := ad.NewBuilder(at[0])
				ax := b.Do(func() (*gorgonia.Node, error) { return gorgonia.Mul(an, at[0]) })
				return b.Node(b.Sub(b.Scale(b.Sum(b.HadamardProd(at[0], ax)), 0.5), b.Sum(b.HadamardProd(bn, at[0]))))
			}
			query := func(at gorgonia.Nodes) (*gorgonia.Node, error) {
				b := ad.NewBuilder(at[0])
				return b.Node(b.Scale(b.Sum(b.Square(b.Sub(at[0], cn))), 0.5))
			}
			step, err := MAML(gorgonia.Nodes{theta}, support, query, MAMLOpts{InnerLR: alpha, InnerSteps: steps, FirstOrder: first})
			if err != nil {
				t.Fatal(err)
			}
			vals := eval(t, g, step.Adapted[0], step.QueryLoss, step.MetaGrads[0])

			x := append([]float64(nil), theta0...)
			for k := 0; k < steps; k++ {
				ax := matVec(a, x)
				for i := range x {
					x[i] -= alpha * (ax[i] - bv[i])
				}
			}
			want := make([]float64, 3)
			lq := 0.0
			for i := range want {
				want[i] = x[i] - c[i]
				lq += 0.5 * want[i] * want[i]
			}
			if !first {
				m := make([]float64, 9)
				for i := range m {
					m[i] = -alpha * a[i]
					if i%4 == 0 {
						m[i]++
					}
				}
				for k := 0; k < steps; k++ {
					want = matVec(m, want)
				}
			}
			close := func(what string, got, want []float64) {
				t.Helper()
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-13 {
						t.Errorf("K %d, first order %v: %s = %v, want %v", steps, first, what, got, want)
						return
					}
				}
			}
			close("θ_K", vals[0], x)
			close("L_q(θ_K)", vals[1], []float64{lq})
			close("meta-gradient", vals[2], want)
			if len(step.SupportLosses) != steps || len(step.InnerGrads) != steps {
				t.Errorf("K %d: %d support losses, %d inner gradients", steps, len(step.SupportLosses), len(step.InnerGrads))
			}
		}
	}
}

// mlpTask is a small regression task: inputs [4, 3] and targets [4, 2].
type mlpTask struct{ x, y []float64 }

// mlpLoss is the mean squared error of tanh(x·W1)·W2 against y, at the
// parameters (W1 [3, 5], W2 [5, 2]).
func mlpLoss(t *testing.T, g *gorgonia.ExprGraph, task mlpTask) LossAt {
	x, y := constant(t, g, task.x, 4, 3), constant(t, g, task.y, 4, 2)
	return func(at gorgonia.Nodes) (*gorgonia.Node, error) {
		b := ad.NewBuilder(at[0])
		h := b.Do(func() (*gorgonia.Node, error) { return gorgonia.Mul(x, at[0]) })
		h = b.Do(func() (*gorgonia.Node, error) { return gorgonia.Tanh(h) })
		p := b.Do(func() (*gorgonia.Node, error) { return gorgonia.Mul(h, at[1]) })
		return b.Node(b.Scale(b.Sum(b.Square(b.Sub(p, y))), 1.0/8))
	}
}

// mlpSetup draws a support and a query task and the parameters.
func mlpSetup() (support, query mlpTask, w1, w2 []float64) {
	rng := rand.New(rand.NewPCG(3, 4))
	draw := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	return mlpTask{draw(12), draw(8)}, mlpTask{draw(12), draw(8)}, draw(15), draw(10)
}

// TestMAMLDirectional checks the meta-loss L_q(θ_K(θ)) of a tanh network
// with two inner steps along a random direction against central
// differences, orders 1 (the second-order meta-gradient) and 2 (its
// derivative: third derivatives of the losses).
func TestMAMLDirectional(t *testing.T) {
	sup, qry, w1, w2 := mlpSetup()
	g := gorgonia.NewGraph()
	theta := gorgonia.Nodes{input(g, "w1", w1, 3, 5), input(g, "w2", w2, 5, 2)}
	step, err := MAML(theta, mlpLoss(t, g, sup), mlpLoss(t, g, qry), MAMLOpts{InnerLR: 0.3, InnerSteps: 2})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := graphtest.Directional(step.QueryLoss, theta, graphtest.DirectionalOpts{Order: 2, Seed: 5, RTol: 1e-6, ATol: 1e-9})
	if err != nil {
		t.Fatalf("%v\n%v", err, rep)
	}
	t.Logf("%v", rep)
}

// TestMAMLFirstOrder checks the first-order meta-gradient against the
// gradient of the query loss on a graph of its own whose parameters are
// the values of θ_K, and that the second-order one differs from it.
func TestMAMLFirstOrder(t *testing.T) {
	sup, qry, w1, w2 := mlpSetup()
	build := func(first bool) (*MAMLGraph, *gorgonia.ExprGraph) {
		g := gorgonia.NewGraph()
		theta := gorgonia.Nodes{input(g, "w1", w1, 3, 5), input(g, "w2", w2, 5, 2)}
		step, err := MAML(theta, mlpLoss(t, g, sup), mlpLoss(t, g, qry), MAMLOpts{InnerLR: 0.3, InnerSteps: 2, FirstOrder: first})
		if err != nil {
			t.Fatal(err)
		}
		return step, g
	}
	fo, g1 := build(true)
	foVals := eval(t, g1, append(gorgonia.Nodes{fo.QueryLoss}, append(fo.Adapted, fo.MetaGrads...)...)...)
	so, g2 := build(false)
	soVals := eval(t, g2, append(gorgonia.Nodes{so.QueryLoss}, so.MetaGrads...)...)

	g := gorgonia.NewGraph()
	adapted := gorgonia.Nodes{
		input(g, "w1", foVals[1], 3, 5),
		input(g, "w2", foVals[2], 5, 2),
	}
	lq, err := mlpLoss(t, g, qry)(adapted)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := ad.Grad(lq, adapted...)
	if err != nil {
		t.Fatal(err)
	}
	wants := eval(t, g, grads...)
	for i, want := range wants {
		got, second := foVals[3+i], soVals[1+i]
		differ := 0.0
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-14*(1+math.Abs(want[j])) {
				t.Fatalf("first-order meta-gradient %d [%d] = %v, ∇L_q(θ_K) %v", i, j, got[j], want[j])
			}
			differ = math.Max(differ, math.Abs(second[j]-want[j]))
		}
		if differ < 1e-3 {
			t.Errorf("parameter %d: second-order meta-gradient within %v of the first-order one", i, differ)
		}
	}
	if a, b := foVals[0][0], soVals[0][0]; a != b {
		t.Errorf("query loss %v (first order) and %v (second order)", a, b)
	}
}

// TestMAMLErrors checks that bad arguments are errors naming the
// problem.
func TestMAMLErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	theta := input(g, "theta", []float64{1, 2}, 2)
	other := input(gorgonia.NewGraph(), "other", []float64{1}, 1)
	ints := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(2), gorgonia.WithName("ints"))
	sum := func(at gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Sum(at[0]) }
	vector := func(at gorgonia.Nodes) (*gorgonia.Node, error) { return at[0], nil }
	fails := func(gorgonia.Nodes) (*gorgonia.Node, error) { return nil, errFake }
	ok := MAMLOpts{InnerLR: 0.1}
	for _, c := range []struct {
		name           string
		theta          gorgonia.Nodes
		support, query LossAt
		opts           MAMLOpts
		want           string
	}{
		{"no theta", nil, sum, sum, ok, "no parameters"},
		{"nil node", gorgonia.Nodes{theta, nil}, sum, sum, ok, "theta[1] is nil"},
		{"two graphs", gorgonia.Nodes{theta, other}, sum, sum, ok, "another graph"},
		{"int theta", gorgonia.Nodes{ints}, sum, sum, ok, "want float32 or float64"},
		{"zero lr", gorgonia.Nodes{theta}, sum, sum, MAMLOpts{}, "InnerLR 0"},
		{"NaN lr", gorgonia.Nodes{theta}, sum, sum, MAMLOpts{InnerLR: math.NaN()}, "InnerLR NaN"},
		{"negative steps", gorgonia.Nodes{theta}, sum, sum, MAMLOpts{InnerLR: 1, InnerSteps: -1}, "InnerSteps -1"},
		{"nil support", gorgonia.Nodes{theta}, nil, sum, ok, "LossAt is nil"},
		{"support fails", gorgonia.Nodes{theta}, fails, sum, ok, "support loss of inner step 0: fake"},
		{"query fails", gorgonia.Nodes{theta}, sum, fails, ok, "query loss: fake"},
		{"vector loss", gorgonia.Nodes{theta}, vector, sum, ok, "want a scalar float64 node"},
		{"vector query", gorgonia.Nodes{theta}, sum, vector, ok, "query loss: want a scalar"},
	} {
		_, err := MAML(c.theta, c.support, c.query, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// errFake is a LossAt's error.
var errFake = fakeError{}

type fakeError struct{}

func (fakeError) Error() string { return "fake" }
