package nn_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestLayoutValues: Concat, Narrow, Flatten and Reshape copy exactly what
// torch.cat, torch.narrow, torch.flatten and torch.reshape return (values
// written out by hand for [2, 3] and [2, 2] inputs and a [2, 2, 3] one).
func TestLayoutValues(t *testing.T) {
	g := gorgonia.NewGraph()
	m := func(name string, shape []int, d ...float64) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))))
	}
	a := m("a", []int{2, 3}, 1, 2, 3, 4, 5, 6)
	b := m("b", []int{2, 2}, 7, 8, 9, 10)
	c := m("c", []int{2, 2, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	cat1, err := nn.Concat(1, a, b)
	if err != nil {
		t.Fatal(err)
	}
	cat0, err := nn.Concat(-2, a, a)
	if err != nil {
		t.Fatal(err)
	}
	nar, err := nn.Narrow(c, 2, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := nn.Flatten(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := nn.Reshape(c, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, cat1, cat0, nar, flat, rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]float64{
		{1, 2, 3, 7, 8, 4, 5, 6, 9, 10},
		{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6},
		{2, 3, 5, 6, 8, 9, 11, 12},
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
	} {
		golden.AssertClose(t, []string{"cat axis 1", "cat axis -2", "narrow", "flatten", "reshape"}[i], got[i], want, 0, 0)
	}
	if !cat1.Shape().Eq(tensor.Shape{2, 5}) || !nar.Shape().Eq(tensor.Shape{2, 2, 2}) || !flat.Shape().Eq(tensor.Shape{2, 6}) {
		t.Fatalf("shapes %v %v %v", cat1.Shape(), nar.Shape(), flat.Shape())
	}
	runErrCases(t, []errCase{
		{"concat none", func() (*gorgonia.Node, error) { return nn.Concat(0) }, "Concat: no inputs"},
		{"concat nil", func() (*gorgonia.Node, error) { return nn.Concat(0, a, nil) }, "input 1 is nil"},
		{"concat shapes", func() (*gorgonia.Node, error) { return nn.Concat(0, a, b) }, "input 1 shape (2, 2) differs from input 0 (2, 3) outside axis 0"},
		{"concat axis", func() (*gorgonia.Node, error) { return nn.Concat(2, a, b) }, "axis 2 out of range"},
		{"narrow range", func() (*gorgonia.Node, error) { return nn.Narrow(c, 2, 2, 2) }, "start 2 and length 2 outside axis 2 of size 3"},
		{"narrow negative", func() (*gorgonia.Node, error) { return nn.Narrow(c, 0, -1, 1) }, "start -1"},
		{"flatten axis", func() (*gorgonia.Node, error) { return nn.Flatten(c, 3) }, "axis 3 out of range"},
		{"reshape size", func() (*gorgonia.Node, error) { return nn.Reshape(c, 5, 2) }, "nn: Reshape: "},
	})
}

// TestEmptyInputs: ops built on Gorgonia's elementwise ops (which panic on
// empty tensors) give an empty result and zero gradients for an input with
// no elements; a loss of nothing is 0 summed and NaN averaged, as torch.
func TestEmptyInputs(t *testing.T) {
	empty := []*tensor.Dense{tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 3))}
	for name, f := range map[string]graphtest.Func{
		"ReLU":      func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.ReLU(in[0]) },
		"GELU":      func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GELU(in[0], "") },
		"Softmax":   func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Softmax(in[0], 1) },
		"LayerNorm": func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.LayerNorm(in[0], []int{3}, nil, nil, 0) },
		"GroupNorm": func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GroupNorm(in[0], 3, nil, nil, 0) },
		"Dropout":   func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Dropout(in[0], 0.5, true, 1) },
		"MSELoss":   func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.MSELoss(in[0], in[0], "none") },
	} {
		t.Run(name, func(t *testing.T) {
			if err := graphtest.CheckEmpty(f, empty, []int{0}); err != nil {
				t.Fatal(err)
			}
		})
	}
	g, nodes := graphtest.Inputs(empty)
	sum, err := nn.SmoothL1Loss(nodes[0], nodes[0], 1, "sum")
	if err != nil {
		t.Fatal(err)
	}
	mean, err := nn.BinaryCrossEntropyWithLogits(nodes[0], nodes[0], nn.BCEWithLogitsOpts{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, sum, mean)
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != 0 || !math.IsNaN(got[1][0]) {
		t.Fatalf("sum %v, mean %v; want 0 and NaN", got[0], got[1])
	}
}
