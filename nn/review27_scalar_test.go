package nn_test

import (
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A [1] parameter (Params' substitute for torch's 0-d) used through a few
// scalar-producing ops: Grads.Values must hold a [1] tensor for it, never
// nil (a nil is silently skipped by the optimizers).
func TestReview27OneElementParamGrads(t *testing.T) {
	for _, c := range []struct {
		name string
		cost func(w, x *gorgonia.Node) (*gorgonia.Node, error)
	}{
		{"Sum(w*x)", func(w, x *gorgonia.Node) (*gorgonia.Node, error) {
			p, err := gorgonia.HadamardProd(w, x)
			if err != nil {
				return nil, err
			}
			return gorgonia.Sum(p)
		}},
		{"Sum(x)*Sum(w)", func(w, x *gorgonia.Node) (*gorgonia.Node, error) {
			a, err := gorgonia.Sum(w)
			if err != nil {
				return nil, err
			}
			b, err := gorgonia.Sum(x)
			if err != nil {
				return nil, err
			}
			return gorgonia.Mul(a, b)
		}},
		{"Sum(w)^2 via Square", func(w, x *gorgonia.Node) (*gorgonia.Node, error) {
			a, err := gorgonia.Sum(w)
			if err != nil {
				return nil, err
			}
			return gorgonia.Square(a)
		}},
	} {
		for _, kind := range []string{"tape", "lisp"} {
			p := nn.NewParams()
			if err := p.Add("w", denseOf(tensor.Float64, []float64{3}, 1)); err != nil {
				t.Fatal(err)
			}
			g := gorgonia.NewGraph()
			w, err := p.Node(g, "w")
			if err != nil {
				t.Fatal(err)
			}
			x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(1), gorgonia.WithName("x"),
				gorgonia.WithValue(denseOf(tensor.Float64, []float64{2}, 1)))
			cost, err := c.cost(w, x)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := p.Grad(cost)
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			var m gorgonia.VM
			if kind == "tape" {
				m = gorgonia.NewTapeMachine(g)
			} else {
				m = gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly())
			}
			if err := ad.RunAll(m); err != nil {
				t.Errorf("%s %s: %v", c.name, kind, err)
				m.Close()
				continue
			}
			v := gs.Values()[0]
			if v == nil {
				t.Errorf("%s on %s: Grads.Values()[0] is nil for a parameter the cost uses (read %v)", c.name, kind, gs.Nodes()[0].Value())
			} else if !v.Shape().Eq(tensor.Shape{1}) || v.Shape().Dims() != 1 {
				t.Errorf("%s on %s: gradient shape %v for a [1] parameter", c.name, kind, v.Shape())
			} else {
				t.Logf("%s %s: %v", c.name, kind, v.Data())
			}
			m.Close()
		}
	}
}

// A LispMachine over a graph holding Params.Grad's nodes runs them with
// gorgonia.ExecuteFwdOnly() (Params.Node's doc): the gradient is right. The
// default LispMachine back-propagates by itself from the last node and
// fails with Gorgonia's "Expected cost to be a scalar" here, which the doc
// warns of.
func TestReview27LispMachineDefaultWithGrad(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float64, []float64{3}, 1)); err != nil {
		t.Fatal(err)
	}
	g := gorgonia.NewGraph()
	w, _ := p.Node(g, "w")
	a, _ := gorgonia.Sum(w)
	cost, _ := gorgonia.Square(a)
	gs, err := p.Grad(cost)
	if err != nil {
		t.Fatal(err)
	}
	m := gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly())
	defer m.Close()
	if err := ad.RunAll(m); err != nil {
		t.Fatalf("LispMachine with ExecuteFwdOnly over a graph with Params.Grad: %v", err)
	}
	if got := graphtest.Floats(gs.Values()[0]); len(got) != 1 || got[0] != 6 {
		t.Errorf("d(Σw)²/dw at w = 3: %v, want [6]", got)
	}
	d := gorgonia.NewLispMachine(g)
	defer d.Close()
	if err := ad.RunAll(d); err == nil {
		t.Logf("the default LispMachine ran too (Gorgonia may have changed): the doc's warning can go")
	}
}
