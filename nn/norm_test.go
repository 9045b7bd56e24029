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

// normGoldenCase is one torch evaluation written by
// testdata/gen_golden_norm.py.
type normGoldenCase struct {
	Name            string    `json:"name"`
	Op              string    `json:"op"`
	Dtype           string    `json:"dtype"`
	NumGroups       int       `json:"num_groups"`
	NormalizedShape []int     `json:"normalized_shape"`
	Eps             float64   `json:"eps"`
	InputShape      []int     `json:"input_shape"`
	Input           []float64 `json:"input"`
	Weight          []float64 `json:"weight"`
	Bias            []float64 `json:"bias"`
	GradOutput      []float64 `json:"grad_output"`
	Output          []float64 `json:"output"`
	GradInput       []float64 `json:"grad_input"`
	GradWeight      []float64 `json:"grad_weight"`
	GradBias        []float64 `json:"grad_bias"`
	VInput          []float64 `json:"v_input"`
	VWeight         []float64 `json:"v_weight"`
	HVPInput        []float64 `json:"hvp_input"`
	HVPWeight       []float64 `json:"hvp_weight"`
}

// TestNormGolden: GroupNorm (groups 1, 2 and one per channel, rank 3 and
// 4, with and without affine parameters, eps) and LayerNorm (one and two
// trailing axes) values, gradients of Σ G·out² w.r.t. input, weight and
// bias, and Hessian-vector products w.r.t. input and weight equal torch's,
// float32 and float64.
func TestNormGolden(t *testing.T) {
	for _, c := range golden.Load[normGoldenCase](t, filepath.Join("..", "testdata", "norm_golden.json.gz")) {
		t.Run(c.Name, func(t *testing.T) {
			gg := newGoldenGraph(t, c.Dtype)
			g, node := gg.g, gg.node
			rtol, atol := 1e-10, 1e-11 // variance and its inverse square root lose digits
			if c.Dtype == "float32" {
				rtol, atol = 1e-4, 1e-5
			}
			x := node("x", c.InputShape, c.Input)
			pshape := c.NormalizedShape
			if c.Op == "group_norm" {
				pshape = []int{c.InputShape[1]}
			}
			var w, b *gorgonia.Node
			wrt := gorgonia.Nodes{x}
			if c.Weight != nil {
				w, b = node("w", pshape, c.Weight), node("b", pshape, c.Bias)
				wrt = append(wrt, w, b)
			}
			var y *gorgonia.Node
			var err error
			if c.Op == "group_norm" {
				y, err = nn.GroupNorm(x, c.NumGroups, w, b, c.Eps)
			} else {
				y, err = nn.LayerNorm(x, c.NormalizedShape, w, b, c.Eps)
			}
			if err != nil {
				t.Fatal(err)
			}
			gy := node("G", c.InputShape, c.GradOutput)
			g1, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.HadamardProd(y, gy)), y)))), wrt...)
			if err != nil {
				t.Fatal(err)
			}
			h := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(g1[0], node("vx", c.InputShape, c.VInput)))))
			hwrt := gorgonia.Nodes{x}
			if w != nil {
				h = gorgonia.Must(gorgonia.Add(h, gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(g1[1], node("vw", pshape, c.VWeight)))))))
				hwrt = append(hwrt, w)
			}
			hv, err := ad.Grad(h, hwrt...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := graphtest.Eval(g, append(append(gorgonia.Nodes{y}, g1...), hv...)...)
			if err != nil {
				t.Fatal(err)
			}
			golden.AssertClose(t, "output", got[0], c.Output, rtol, atol)
			golden.AssertClose(t, "grad_input", got[1], c.GradInput, rtol, atol)
			if w != nil {
				golden.AssertClose(t, "grad_weight", got[2], c.GradWeight, rtol, atol)
				golden.AssertClose(t, "grad_bias", got[3], c.GradBias, rtol, atol)
				golden.AssertClose(t, "hvp_input", got[4], c.HVPInput, rtol, atol)
				golden.AssertClose(t, "hvp_weight", got[5], c.HVPWeight, rtol, atol)
			} else {
				golden.AssertClose(t, "hvp_input", got[2], c.HVPInput, rtol, atol)
			}
		})
	}
}

// TestNormBadInput: errors that name the tensor and the problem.
func TestNormBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 4, 3, 3))
	v := func(n int) *gorgonia.Node { return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(n)) }
	runErrCases(t, []errCase{
		{"groups", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 3, nil, nil, 0) }, "4 channels not divisible into numGroups 3"},
		{"zero groups", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 0, nil, nil, 0) }, "numGroups 0"},
		{"weight", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 2, v(3), nil, 0) }, "weight shape (3), want (4)"},
		{"eps", func() (*gorgonia.Node, error) { return nn.GroupNorm(x, 2, nil, nil, -1) }, "eps -1 must be non-negative"},
		{"nil", func() (*gorgonia.Node, error) { return nn.LayerNorm(nil, []int{3}, nil, nil, 0) }, "LayerNorm: input is nil"},
		{"shape", func() (*gorgonia.Node, error) { return nn.LayerNorm(x, []int{4, 3}, nil, nil, 0) }, "normalizedShape [4 3] must be the trailing axes"},
		{"empty shape", func() (*gorgonia.Node, error) { return nn.LayerNorm(x, nil, nil, nil, 0) }, "must be the trailing axes"},
		{"layer bias", func() (*gorgonia.Node, error) { return nn.LayerNorm(x, []int{3}, nil, v(4), 0) }, "bias shape (4), want (3)"},
	})
}
