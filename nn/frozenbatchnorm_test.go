package nn_test

import (
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// frozenBNGoldenCase is one torchvision evaluation written by
// testdata/gen_golden_frozenbn.py.
type frozenBNGoldenCase struct {
	weightGolden
	Eps             float64   `json:"eps"`
	RunningMean     []float64 `json:"running_mean"`
	RunningVar      []float64 `json:"running_var"`
	GradRunningMean []float64 `json:"grad_running_mean"`
	GradRunningVar  []float64 `json:"grad_running_var"`
}

// TestFrozenBatchNorm2dGolden: torchvision's FrozenBatchNorm2d (eps 1e-5
// and 0, a 1×1 batch of one) values, gradients of Σ G·out² w.r.t. input,
// weight, bias, running_mean and running_var, and Hessian-vector products
// w.r.t. input and weight, float32 and float64.
func TestFrozenBatchNorm2dGolden(t *testing.T) {
	runGolden(t, "frozenbn_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *frozenBNGoldenCase) {
		gg.setTol(1e-11, 1e-12, 2e-5, 2e-6)
		ch := []int{c.InputShape[1]}
		build := func(gg *goldenGraph) (y, x, w, b, rm, rv *gorgonia.Node) {
			x = gg.node("x", c.InputShape, c.Input)
			w, b = gg.node("w", ch, c.Weight), gg.node("b", ch, c.Bias)
			rm, rv = gg.node("rm", ch, c.RunningMean), gg.node("rv", ch, c.RunningVar)
			y, err := nn.FrozenBatchNorm2d(x, w, b, rm, rv, c.Eps)
			if err != nil {
				t.Fatal(err)
			}
			return y, x, w, b, rm, rv
		}
		y, x, w, b, _, _ := build(gg)
		gg.checkWeight(y, x, w, b, false, &c.weightGolden)

		// The statistics' gradients, in a graph of their own.
		gs := newGoldenGraph(t, c.Dtype)
		gs.setTol(gg.rtol, gg.atol, gg.rtol, gg.atol)
		y, _, _, _, rm, rv := build(gs)
		cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.Square(y)), gs.node("G", y.Shape(), c.GradOutput)))))
		grads, err := ad.Grad(cost, rm, rv)
		if err != nil {
			t.Fatal(err)
		}
		got, err := graphtest.Eval(gs.g, grads...)
		if err != nil {
			t.Fatal(err)
		}
		golden.AssertClose(t, "grad_running_mean", got[0], c.GradRunningMean, gs.rtol, gs.atol)
		golden.AssertClose(t, "grad_running_var", got[1], c.GradRunningVar, gs.rtol, gs.atol)
	})
}

// TestFrozenBatchNorm2dBadInput: errors that name the tensor and the
// problem.
func TestFrozenBatchNorm2dBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 2, 2))
	x3 := gorgonia.NewTensor(g, tensor.Float64, 3, gorgonia.WithShape(2, 3, 2))
	v := func(n int) *gorgonia.Node { return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(n)) }
	v32 := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3))
	m := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 1))
	c := v(3)
	runErrCases(t, []errCase{
		{"nil input", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(nil, c, c, c, c, 0) }, "FrozenBatchNorm2d: input is nil"},
		{"nil runningVar", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(x, c, c, c, nil, 0) }, "runningVar is nil"},
		{"rank", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(x3, c, c, c, c, 0) }, "input must have rank 4"},
		{"weight shape", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(x, v(4), c, c, c, 0) }, "weight shape (4), want (3)"},
		{"mean shape", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(x, c, c, v(2), c, 0) }, "runningMean shape (2), want (3)"},
		{"var rank", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(x, c, c, c, m, 0) }, "runningVar must have rank 1"},
		{"dtype", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(x, c, v32, c, c, 0) }, "bias dtype float32 differs"},
		{"eps", func() (*gorgonia.Node, error) { return nn.FrozenBatchNorm2d(x, c, c, c, c, -1) }, "eps -1 must be non-negative"},
	})
}
