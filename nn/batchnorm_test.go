package nn_test

import (
	"path/filepath"
	"testing"

	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// batchNormGoldenCase is one torch evaluation written by
// testdata/gen_golden_batchnorm.py.
type batchNormGoldenCase struct {
	weightGolden
	Training         bool      `json:"training"`
	Momentum         float64   `json:"momentum"`
	Eps              float64   `json:"eps"`
	RunningMean      []float64 `json:"running_mean"`
	RunningVar       []float64 `json:"running_var"`
	RunningMeanAfter []float64 `json:"running_mean_after"`
	RunningVarAfter  []float64 `json:"running_var_after"`
}

// TestBatchNormGolden: training (batch statistics, with and without
// affine parameters, rank 2 to 4) and eval (running statistics, batch 1)
// values, gradients of Σ G·out² w.r.t. input, weight and bias,
// Hessian-vector products w.r.t. input and weight, and the running
// statistics after one run, equal torch's, float32 and float64.
func TestBatchNormGolden(t *testing.T) {
	for _, c := range golden.Load[batchNormGoldenCase](t, filepath.Join("..", "testdata", "batchnorm_golden.json.gz")) {
		t.Run(c.Name, func(t *testing.T) {
			gg := newGoldenGraph(t, c.Dtype)
			gg.rtol, gg.atol = 1e-10, 1e-11
			if c.Dtype == "float32" {
				gg.rtol, gg.atol = 1e-4, 1e-5
			}
			x := gg.node("x", c.InputShape, c.Input)
			ch := c.InputShape[1]
			var w, b *gorgonia.Node
			if c.Weight != nil {
				w, b = gg.node("w", []int{ch}, c.Weight), gg.node("b", []int{ch}, c.Bias)
			}
			rm, rv := golden.Tensor(c.Dtype, []int{ch}, c.RunningMean), golden.Tensor(c.Dtype, []int{ch}, c.RunningVar)
			y, err := nn.BatchNorm(x, w, b, rm, rv, nn.BatchNormOpts{Training: c.Training, Momentum: c.Momentum, Eps: c.Eps})
			if err != nil {
				t.Fatal(err)
			}
			gg.checkWeight(y, x, w, b, false, &c.weightGolden)
			// One run of the graph updated the running statistics once.
			golden.AssertClose(t, "running_mean", graphtest.Floats(rm), c.RunningMeanAfter, gg.rtol, gg.atol)
			golden.AssertClose(t, "running_var", graphtest.Floats(rv), c.RunningVarAfter, gg.rtol, gg.atol)
		})
	}
}

// TestBatchNormBadInput: errors that name the tensor and the problem.
func TestBatchNormBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 2, 2))
	r := func(n int) *tensor.Dense { return tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(n)) }
	one := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 3))
	runErrCases(t, []errCase{
		{"eval without stats", func() (*gorgonia.Node, error) { return nn.BatchNorm(x, nil, nil, nil, nil, nn.BatchNormOpts{}) }, "runningMean is nil in eval mode"},
		{"stats shape", func() (*gorgonia.Node, error) { return nn.BatchNorm(x, nil, nil, r(2), r(3), nn.BatchNormOpts{}) }, "runningMean float64 (2), want (3) float64"},
		{"momentum", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(x, nil, nil, r(3), r(3), nn.BatchNormOpts{Training: true, Momentum: 2})
		}, "Momentum 2 must be in [0, 1]"},
		{"one value per channel", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(one, nil, nil, nil, nil, nn.BatchNormOpts{Training: true})
		}, "more than one value per channel"},
		{"weight", func() (*gorgonia.Node, error) {
			return nn.BatchNorm(x, gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2)), nil, r(3), r(3), nn.BatchNormOpts{})
		}, "weight shape (2), want (3)"},
	})
}
