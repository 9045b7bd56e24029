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

func edgeFill(b float64, shape ...int) *tensor.Dense {
	d := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = 0.9*math.Sin(1.3*float64(i)+b) + 0.1*b
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

// TestGradRulesEdges checks Grad's own rules (rules.go) at orders 1–3
// against finite differences, and the TapeMachine against the LispMachine
// in float64 and float32, on the shapes the table in rules_test.go leaves
// out: axes of length 1, vectors, squares of views (Slice, Transpose),
// scalars made by Sum, a spread gradient passing through scalar
// arguments (Mul, Sub, HadamardDiv) and a partial Sum, a node reached by
// a spread and a dense gradient at once, and Mean along several axes.
func TestGradRulesEdges(t *testing.T) {
	cases := []struct {
		name string
		in   []*tensor.Dense
		f    graphtest.Func
	}{
		{"Sum_axis_len1", []*tensor.Dense{edgeFill(0.3, 3, 1)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Sum(must(gorgonia.Square(sin(n[0]))), 1)
		}},
		{"Sum_axis0_len1", []*tensor.Dense{edgeFill(0.3, 1, 4)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Sum(must(gorgonia.Square(sin(n[0]))), 0)
		}},
		{"Sum_vector", []*tensor.Dense{edgeFill(0.3, 4)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Sum(must(gorgonia.HadamardProd(sin(n[0]), n[0])), 0)
		}},
		{"Square_slice", []*tensor.Dense{edgeFill(0.3, 3, 4)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			v := must(gorgonia.Slice(sin(n[0]), gorgonia.S(1, 3)))
			return gorgonia.Sum(must(gorgonia.Square(v)), 1)
		}},
		{"Square_transpose", []*tensor.Dense{edgeFill(0.3, 3, 4)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			v := must(gorgonia.Transpose(sin(n[0])))
			return gorgonia.Sum(must(gorgonia.Square(v)), 0)
		}},
		{"Scalar_input", []*tensor.Dense{edgeFill(0.7, 1)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			s := must(gorgonia.Sum(n[0]))
			return gorgonia.Square(must(gorgonia.HadamardProd(sin(s), s)))
		}},
		{"Scalar_times_tensor", []*tensor.Dense{edgeFill(0.7, 1), edgeFill(0.1, 2, 3)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Sum(must(gorgonia.Square(must(gorgonia.Mul(sin(n[1]), sin(must(gorgonia.Sum(n[0]))))))))
		}},
		{"Spread_through_scalar_mul", []*tensor.Dense{edgeFill(0.7, 1), edgeFill(0.1, 2, 3)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			s := sin(must(gorgonia.Sum(n[0])))
			return gorgonia.Sum(must(gorgonia.HadamardProd(s, sin(n[1]))))
		}},
		{"Spread_through_scalar_add", []*tensor.Dense{edgeFill(0.7, 1), edgeFill(0.1, 2, 3)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			s := must(gorgonia.Square(sin(must(gorgonia.Sum(n[0])))))
			return gorgonia.Sum(must(gorgonia.Sub(s, must(gorgonia.Square(n[1])))))
		}},
		{"Spread_through_div", []*tensor.Dense{edgeFill(0.7, 1), edgeFill(0.1, 2, 3)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			s := must(gorgonia.Exp(must(gorgonia.Sum(n[0]))))
			return gorgonia.Sum(must(gorgonia.HadamardDiv(must(gorgonia.Square(n[1])), s)))
		}},
		{"Spread_partial_sum", []*tensor.Dense{edgeFill(0.1, 2, 3, 2)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			p := must(gorgonia.Sum(must(gorgonia.Square(sin(n[0]))), 1)) // [2, 2]
			return gorgonia.Sum(must(gorgonia.Mul(p, must(gorgonia.Sum(n[0])))))
		}},
		{"Mixed_terms", []*tensor.Dense{edgeFill(0.1, 2, 3)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			y := sin(n[0])
			return gorgonia.Add(must(gorgonia.Sum(y)), must(gorgonia.Sum(must(gorgonia.HadamardProd(y, y)))))
		}},
		{"Sum_Sum_axes", []*tensor.Dense{edgeFill(0.3, 2, 3, 4)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			s := must(gorgonia.Sum(must(gorgonia.Square(sin(n[0]))), 2))
			return gorgonia.Sum(must(gorgonia.HadamardProd(s, s)), 0)
		}},
		{"Mean_axes", []*tensor.Dense{edgeFill(0.3, 2, 3, 4)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Mean(must(gorgonia.Square(sin(n[0]))), 0, 2)
		}},
		{"Div_scalar_spread", []*tensor.Dense{edgeFill(0.3, 2, 3)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			s := must(gorgonia.Sum(must(gorgonia.Square(n[0]))))
			return gorgonia.HadamardDiv(s, must(gorgonia.Sum(must(gorgonia.Exp(n[0])))))
		}},
		{"Sub_same", []*tensor.Dense{edgeFill(0.3, 2, 3)}, func(n gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Sum(must(gorgonia.Square(must(gorgonia.Sub(sin(n[0]), n[0])))))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := graphtest.Check(c.f, c.in, graphtest.Options{Order: 3, Seed: 5, RTol: 1e-5, ATol: 1e-7}); err != nil {
				t.Fatal(err)
			}
			for _, in := range [][]*tensor.Dense{c.in, graphtest.Float32(c.in)} {
				tol := 1e-12
				if in[0].Dtype() == tensor.Float32 {
					tol = 2e-5
				}
				if err := graphtest.CheckVMs(c.f, in, graphtest.Options{Seed: 3, RTol: tol, ATol: tol}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestGradRulesSpreadWrt: a wrt node whose gradient is only spread
// scalars gets it as a tensor of its shape.
func TestGradRulesSpreadWrt(t *testing.T) {
	g, in := graphtest.Inputs([]*tensor.Dense{edgeFill(0.2, 2, 3)})
	x := in[0]
	two := must(ad.Constant(g, gorgonia.NewF64(2)))
	cost := must(gorgonia.Add(must(gorgonia.Sum(x)), must(gorgonia.Mul(must(gorgonia.Sum(x)), two))))
	gs, err := ad.Grad(cost, x)
	if err != nil {
		t.Fatal(err)
	}
	if !gs[0].Shape().Eq(x.Shape()) {
		t.Fatalf("gradient of shape %v, want %v", gs[0].Shape(), x.Shape())
	}
	near(t, "gradient of Sum(x) + 2·Sum(x)", runRead(t, g, gs[0])[0], []float64{3, 3, 3, 3, 3, 3}, 0)
}

// TestGradRulesRepeatedAxes: Gorgonia builds Sum along a repeated axis,
// and its own rule then gives a gradient of the wrong shape; Grad (whose
// rule does not take such axes) returns an error naming the input
// instead of a wrong gradient.
func TestGradRulesRepeatedAxes(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	s, err := gorgonia.Sum(x, 0, 0)
	if err != nil {
		t.Skipf("Gorgonia refuses Sum along [0 0] now: %v", err)
	}
	_, err = ad.Grad(must(gorgonia.Sum(s)), x)
	if err == nil || !strings.Contains(err.Error(), "(x)") {
		t.Errorf("Grad through Sum along [0 0]: %v, want an error naming x", err)
	}
}
