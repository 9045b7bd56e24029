package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestZZReshapeAlias(t *testing.T) {
	ops := map[string]func(*gorgonia.Node) (*gorgonia.Node, error){
		"cube": gorgonia.Cube, "square": gorgonia.Square, "sin": gorgonia.Sin, "exp": gorgonia.Exp, "tanh": gorgonia.Tanh, "sigmoid": gorgonia.Sigmoid, "neg": gorgonia.Neg, "softplus": gorgonia.Softplus,"inverse": gorgonia.Inverse,
	}
	for name, op := range ops {
		for _, gg := range []bool{false, true} {
		g := gorgonia.NewGraph()
		xv := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0.3, -0.7, 1.1, 0.5, -0.2, 0.9}))
		x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithValue(xv), gorgonia.WithName("x"))
		y := gorgonia.Must(op(gorgonia.Must(gorgonia.Reshape(x, tensor.Shape{6}))))
		s := gorgonia.Must(gorgonia.Sum(y))
		var gr gorgonia.Nodes
		var err error
		if gg {
			gr, err = gorgonia.Grad(s, x)
		} else {
			gr, err = gops.Grad(s, x)
		}
		if err != nil {
			t.Fatal(err)
		}
		var gv gorgonia.Value
		gorgonia.Read(gr[0], &gv)
		m := gorgonia.NewTapeMachine(g)
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		t.Log(name, gg, gv.Data(), xv.Data())
		m.Close()
		}
	}
}
