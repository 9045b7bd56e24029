package nn_test

import (
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// permuteGolden is a case of testdata/permute_golden.json.gz
// (gen_golden_permute.py): torch.permute's output and the input gradient
// of Σ G·y².
type permuteGolden struct {
	Name        string    `json:"name"`
	Dtype       string    `json:"dtype"`
	Dims        []int     `json:"dims"`
	InputShape  []int     `json:"input_shape"`
	Input       []float64 `json:"input"`
	GradOutput  []float64 `json:"grad_output"`
	OutputShape []int     `json:"output_shape"`
	Output      []float64 `json:"output"`
	GradInput   []float64 `json:"grad_input"`
}

// TestPermuteGolden: Permute's values and gradient are torch.permute's,
// exactly (a copy; the gradient 2·G·y permuted back is one rounding
// either way).
func TestPermuteGolden(t *testing.T) {
	for _, c := range golden.Load[permuteGolden](t, filepath.Join("..", "testdata", "permute_golden.json.gz")) {
		t.Run(c.Name, func(t *testing.T) {
			gg := newGoldenGraph(t, c.Dtype)
			x := gg.node("x", c.InputShape, c.Input)
			y, err := nn.Permute(x, c.Dims...)
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
				t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
			}
			cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.HadamardProd(y, y)), gg.node("G", c.OutputShape, c.GradOutput)))))
			gx, err := ad.Grad(cost, x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := graphtest.Eval(gg.g, y, gx[0])
			if err != nil {
				t.Fatal(err)
			}
			golden.AssertClose(t, "output", got[0], c.Output, 0, 0)
			golden.AssertClose(t, "grad_input", got[1], c.GradInput, gg.rtol, gg.atol)
		})
	}
}

// TestPermuteOrders: derivatives of orders 1–3 of Permute inside a smooth
// composite, for the heads' 5-D permute and a 3-D one, against finite
// differences.
func TestPermuteOrders(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		dims  []int
	}{
		{"NAKHW", []int{2, 2, 3, 2, 3}, []int{0, 3, 4, 1, 2}},
		{"batched", []int{2, 3, 4}, []int{0, -1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := cubeOf(func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Permute(in[0], c.dims...) })
			if err := graphtest.Check(f, []*tensor.Dense{smoothTensor(0.8, c.shape...)}, graphtest.Options{Order: 3, Seed: 3}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPermuteEmpty: an input without elements gives an empty result of
// the permuted shape, and a zero gradient.
func TestPermuteEmpty(t *testing.T) {
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Permute(in[0], 2, 0, 1) }
	if err := graphtest.CheckEmpty(f, []*tensor.Dense{emptyTensor(0, 3, 2)}, []int{0}); err != nil {
		t.Fatal(err)
	}
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(0, 3, 2), gorgonia.WithName("x"))
	y, err := nn.Permute(x, 2, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape{2, 0, 3}) {
		t.Fatalf("shape %v, want (2, 0, 3)", y.Shape())
	}
}

// TestPermuteBadInput: each bad argument is an error naming it.
func TestPermuteBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(2, 3, 4), gorgonia.WithName("x"))
	s := gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("s"))
	i := gorgonia.NewTensor(g, tensor.Int, 2, gorgonia.WithShape(2, 2), gorgonia.WithName("i"))
	runErrCases(t, []errCase{
		{"nil", func() (*gorgonia.Node, error) { return nn.Permute(nil, 0) }, "input is nil"},
		{"scalar", func() (*gorgonia.Node, error) { return nn.Permute(s) }, "rank at least 1"},
		{"int", func() (*gorgonia.Node, error) { return nn.Permute(i, 1, 0) }, "want float32 or float64"},
		{"too few dims", func() (*gorgonia.Node, error) { return nn.Permute(x, 0, 1) }, "has 2 entries, input (2, 3, 4) has rank 3"},
		{"too many dims", func() (*gorgonia.Node, error) { return nn.Permute(x, 0, 1, 2, 3) }, "has 4 entries"},
		{"out of range", func() (*gorgonia.Node, error) { return nn.Permute(x, 0, 3, 1) }, "dims[1] = 3 out of range"},
		{"negative out of range", func() (*gorgonia.Node, error) { return nn.Permute(x, -4, 1, 2) }, "dims[0] = -4 out of range"},
		{"repeated", func() (*gorgonia.Node, error) { return nn.Permute(x, 0, 2, -1) }, "repeats axis 2"},
	})
}
