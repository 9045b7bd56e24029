package nn_test

import (
	"strings"
	"testing"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// interpGoldenCase is one torch evaluation written by
// testdata/gen_golden_interp.py.
type interpGoldenCase struct {
	inputGolden
	Mode         string    `json:"mode"`
	AlignCorners bool      `json:"align_corners"`
	Size         []int     `json:"size"`
	ScaleFactor  []float64 `json:"scale_factor"`
	OutputShape  []int     `json:"output_shape"`
}

// TestInterpolateGolden: nearest (×2, non-integer ratios, scale factors
// below 1) and bilinear (align_corners both ways, up and down, scale
// factors, output 1×1) values, gradients of Σ G·out² and Hessian-vector
// products equal torch's, float32 and float64.
func TestInterpolateGolden(t *testing.T) {
	runGolden(t, "interp_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *interpGoldenCase) {
		x := gg.node("x", c.InputShape, c.Input)
		opts := nn.InterpolateOpts{Mode: c.Mode, AlignCorners: c.AlignCorners}
		if c.Size != nil {
			opts.Size = [2]int{c.Size[0], c.Size[1]}
		} else {
			opts.ScaleFactor = [2]float64{c.ScaleFactor[0], c.ScaleFactor[1]}
		}
		y, err := nn.Interpolate(x, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
			t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
		}
		gg.checkInput(y, x, &c.inputGolden)
	})
}

// TestInterpolateBadInput: errors that name the problem.
func TestInterpolateBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 2, 4, 4))
	for _, c := range []struct {
		name string
		opts nn.InterpolateOpts
		want string
	}{
		{"neither", nn.InterpolateOpts{}, "set exactly one of Size"},
		{"both", nn.InterpolateOpts{Size: [2]int{2, 2}, ScaleFactor: [2]float64{2, 2}}, "set exactly one of Size"},
		{"mode", nn.InterpolateOpts{Size: [2]int{2, 2}, Mode: "bicubic"}, `Mode "bicubic"`},
		{"align nearest", nn.InterpolateOpts{Size: [2]int{2, 2}, AlignCorners: true}, "AlignCorners is only for"},
		{"zero size", nn.InterpolateOpts{Size: [2]int{0, 2}}, "output size [0 2] must be in"},
		{"negative scale", nn.InterpolateOpts{ScaleFactor: [2]float64{-1, 2}}, "ScaleFactor [-1 2] must be positive"},
		{"tiny scale", nn.InterpolateOpts{ScaleFactor: [2]float64{0.1, 2}}, "output size [0 8] must be in"},
		{"huge scale", nn.InterpolateOpts{ScaleFactor: [2]float64{1e12, 1}}, "above"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := nn.Interpolate(x, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}
