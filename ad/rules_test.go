package ad_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ruleCases exercise Grad's own rules for Gorgonia's Sum, Mean,
// HadamardProd, Square, Mul by a scalar, Add, Sub and BroadcastAdd
// (rules.go), each between nonlinear ops so that orders 2 and 3 are not
// zero. Inputs: x [2, 3, 2], y [2, 3, 2], v [3].
var ruleCases = []struct {
	name string
	f    func(x, y, v *gorgonia.Node) (*gorgonia.Node, error)
	uses string // the inputs f uses, of "xyv"; "" means x and y
}{
	{"Sum_all", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.HadamardProd(sin(x), y)))
	}, ""},
	{"Sum_axis0", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.HadamardProd(sin(x), y)), 0)
	}, ""},
	{"Sum_axis1", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.HadamardProd(sin(x), y)), 1)
	}, ""},
	{"Sum_axes02", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.HadamardProd(sin(x), y)), 0, 2)
	}, ""},
	{"Sum_of_Sum", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.Sum(must(gorgonia.HadamardProd(sin(x), sin(y))), 1)))
	}, ""},
	{"Mean_all", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Mean(must(gorgonia.HadamardProd(sin(x), y)))
	}, ""},
	{"Mean_axis2", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Mean(must(gorgonia.HadamardProd(sin(x), y)), 2)
	}, ""},
	{"HadamardProd", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.HadamardProd(sin(x), sin(y)) }, ""},
	{"HadamardProd_self", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.HadamardProd(must(gorgonia.HadamardProd(x, x)), sin(y))
	}, ""},
	{"Square", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Square(must(gorgonia.HadamardProd(sin(x), y)))
	}, ""},
	{"Sum_Square", func(x, _, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.Square(sin(x))))
	}, "x"},
	{"MSE", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Mean(must(gorgonia.Square(must(gorgonia.Sub(sin(x), y)))))
	}, ""},
	{"Mul_scalar", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Mul(sin(x), must(gorgonia.Sum(must(gorgonia.Square(y)))))
	}, ""},
	{"Mul_scalar_left", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.HadamardProd(must(gorgonia.Sum(sin(y))), must(gorgonia.Square(x)))))
	}, ""},
	{"Mul_constant", func(x, _, _ *gorgonia.Node) (*gorgonia.Node, error) {
		c := must(ad.Constant(x.Graph(), gorgonia.NewF64(-1.5)))
		if x.Dtype() == tensor.Float32 {
			c = must(ad.Constant(x.Graph(), gorgonia.NewF32(-1.5)))
		}
		return gorgonia.Sum(must(gorgonia.Mul(sin(x), c)))
	}, "x"},
	{"Div_scalar", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.HadamardDiv(sin(x), must(gorgonia.Sum(must(gorgonia.Exp(y)))))
	}, ""},
	{"Add", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Add(sin(x), must(gorgonia.Square(y)))
	}, ""},
	{"Sub", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.Sub(sin(x), must(gorgonia.HadamardProd(x, y)))))
	}, ""},
	{"Add_scalar", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Square(must(gorgonia.Add(sin(x), must(gorgonia.Sum(sin(y))))))
	}, ""},
	{"Sub_scalar_tensor", func(x, y, _ *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Sum(must(gorgonia.Square(must(gorgonia.Sub(must(gorgonia.Sum(sin(y))), sin(x))))))
	}, ""},
	{"BroadcastAdd", func(x, _, v *gorgonia.Node) (*gorgonia.Node, error) {
		m := must(gorgonia.Sum(sin(x), 2)) // [2, 3]
		return gorgonia.Sum(must(gorgonia.Square(must(gorgonia.BroadcastAdd(m, sin(v), nil, []byte{0})))))
	}, "xv"},
}

func sin(x *gorgonia.Node) *gorgonia.Node { return must(gorgonia.Sin(x)) }

// must is gorgonia.Must for the table's builders: a builder's error shows
// up as a panic of the test.
func must(n *gorgonia.Node, err error) *gorgonia.Node { return gorgonia.Must(n, err) }

// ruleInputs are the inputs of uses ("" for x and y) and f taking them.
func ruleInputs(uses string, f func(x, y, v *gorgonia.Node) (*gorgonia.Node, error)) ([]*tensor.Dense, graphtest.Func) {
	if uses == "" {
		uses = "xy"
	}
	all := ruleValues()
	var in []*tensor.Dense
	for _, c := range uses {
		in = append(in, all[strings.IndexRune("xyv", c)])
	}
	return in, func(ns gorgonia.Nodes) (*gorgonia.Node, error) {
		var args [3]*gorgonia.Node
		for i, c := range uses {
			args[strings.IndexRune("xyv", c)] = ns[i]
		}
		return f(args[0], args[1], args[2])
	}
}

func ruleValues() []*tensor.Dense {
	fill := func(a, b float64, shape ...int) *tensor.Dense {
		d := make([]float64, tensor.Shape(shape).TotalSize())
		for i := range d {
			d[i] = a*math.Sin(1.7*float64(i)+b) + 0.1*b
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
	}
	return []*tensor.Dense{fill(1.2, 0.3, 2, 3, 2), fill(0.9, 1.1, 2, 3, 2), fill(0.8, 2.3, 3)}
}

// TestGradRulesFiniteDifferences checks each case at orders 1–3 against
// finite differences (float64), and the TapeMachine against the
// LispMachine (which runs Gorgonia's own rules) in float64 and float32.
func TestGradRulesFiniteDifferences(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			in, f := ruleInputs(c.uses, c.f)
			if err := graphtest.Check(f, in, graphtest.Options{Order: 3, Seed: 3, RTol: 1e-5, ATol: 1e-7}); err != nil {
				t.Fatal(err)
			}
			for _, in := range [][]*tensor.Dense{in, graphtest.Float32(in)} {
				tol := 1e-12
				if in[0].Dtype() == tensor.Float32 {
					tol = 2e-5
				}
				if err := graphtest.CheckVMs(f, in, graphtest.Options{Seed: 3, RTol: tol, ATol: tol}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestGradRulesMatchGorgonia compares each case's first-order gradient of
// Sum(f ⊙ R) with gorgonia.Grad's, built by Gorgonia's own rules.
func TestGradRulesMatchGorgonia(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			var got [2][][]float64
			for k, grad := range []func(*gorgonia.Node, ...*gorgonia.Node) (gorgonia.Nodes, error){ad.Grad, gorgonia.Grad} {
				vals, f := ruleInputs(c.uses, c.f)
				g, in := graphtest.Inputs(vals)
				y := must(f(in))
				cost := y
				if !y.IsScalar() {
					r := tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(ruleValues()[1].Data().([]float64)[:y.Shape().TotalSize()]))
					cost = must(gorgonia.Sum(must(gorgonia.HadamardProd(y, must(ad.Constant(g, r))))))
				}
				gs, err := grad(cost, in...)
				if err != nil {
					t.Fatal(err)
				}
				got[k] = runRead(t, g, gs...)
			}
			for i := range got[0] {
				near(t, "gradient", got[0][i], got[1][i], 1e-12)
			}
		})
	}
}

// TestGradRulesSkipUnwanted: the gradient of Sum(y ⊙ R) w.r.t. y is R
// itself, and nothing is built for R, which is not wanted.
func TestGradRulesSkipUnwanted(t *testing.T) {
	g, in := graphtest.Inputs(ruleValues()[:2])
	y, r := in[0], in[1]
	cost := must(gorgonia.Sum(must(gorgonia.HadamardProd(y, r))))
	before := len(g.AllNodes())
	gs, err := ad.Grad(cost, y)
	if err != nil {
		t.Fatal(err)
	}
	if gs[0] != r {
		t.Errorf("gradient of Sum(y ⊙ R) w.r.t. y is node %v, want R", gs[0])
	}
	if n := len(g.AllNodes()) - before; n != 1 {
		t.Errorf("Grad added %d nodes, want 1 (its seed)", n)
	}
}

// TestGradRulesMixedDtypes: Square's rule makes its 2 with ad.Constant, so
// float32 and float64 gradients of squares run in one graph (Gorgonia's
// rule shares one constant 2 between them).
func TestGradRulesMixedDtypes(t *testing.T) {
	g := gorgonia.NewGraph()
	x64 := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x64"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	x32 := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3), gorgonia.WithName("x32"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	g64, err := ad.Grad(must(gorgonia.Sum(must(gorgonia.Square(x64)))), x64)
	if err != nil {
		t.Fatal(err)
	}
	g32, err := ad.Grad(must(gorgonia.Sum(must(gorgonia.Square(x32)))), x32)
	if err != nil {
		t.Fatal(err)
	}
	out := runRead(t, g, g64[0], g32[0])
	near(t, "float64", out[0], []float64{2, 4, 6}, 0)
	near(t, "float32", out[1], []float64{2, 4, 6}, 0)
}
