package nn_test

import (
	"strings"
	"testing"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// convGoldenCase is one torch evaluation written by
// testdata/gen_golden_conv.py.
type convGoldenCase struct {
	weightGolden
	Op            string `json:"op"`
	Stride        [2]int `json:"stride"`
	Padding       [2]int `json:"padding"`
	Dilation      [2]int `json:"dilation"`
	OutputPadding [2]int `json:"output_padding"`
	Groups        int    `json:"groups"`
	WeightShape   []int  `json:"weight_shape"`
	OutputShape   []int  `json:"output_shape"`
}

// TestConvGolden: Conv2d's and ConvTranspose2d's values, first-order
// gradients w.r.t. input, weight and bias, and the Hessian-vector product
// (the gradient of <∂input, v_input> + <∂weight, v_weight>) equal torch's,
// in float32 and float64, over strides larger than the kernel, padding,
// dilation, depthwise and grouped, pointwise, non-square and
// kernel-sized inputs.
func TestConvGolden(t *testing.T) {
	runGolden(t, "conv_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *convGoldenCase) {
		gg.setTol(1e-11, 1e-11, 2e-5, 2e-5)
		x, w := gg.node("x", c.InputShape, c.Input), gg.node("w", c.WeightShape, c.Weight)
		var b *gorgonia.Node
		if c.Bias != nil {
			b = gg.node("b", []int{len(c.Bias)}, c.Bias)
		}
		var y *gorgonia.Node
		var err error
		if c.Op == "conv2d" {
			y, err = nn.Conv2d(x, w, b, nn.Conv2dOpts{Stride: c.Stride, Padding: c.Padding, Dilation: c.Dilation, Groups: c.Groups})
		} else {
			y, err = nn.ConvTranspose2d(x, w, b, nn.ConvTranspose2dOpts{Stride: c.Stride, Padding: c.Padding,
				OutputPadding: c.OutputPadding, Dilation: c.Dilation, Groups: c.Groups})
		}
		if err != nil {
			t.Fatal(err)
		}
		if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
			t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
		}
		gg.checkWeight(y, x, w, b, true, &c.weightGolden)
	})
}

// TestConvBadInput: errors that name the tensor and the problem.
func TestConvBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	m := func(dt tensor.Dtype, shape ...int) *gorgonia.Node {
		return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...))
	}
	f32, f64 := tensor.Float32, tensor.Float64
	x, w := m(f64, 2, 4, 6, 6), m(f64, 6, 4, 3, 3)
	for _, c := range []struct {
		name          string
		x, w, b       *gorgonia.Node
		opts          nn.Conv2dOpts
		transposeOpts *nn.ConvTranspose2dOpts
		want          string
	}{
		{name: "nil input", w: w, want: "input is nil"},
		{name: "nil weight", x: x, want: "weight is nil"},
		{name: "int input", x: m(tensor.Int, 2, 4, 6, 6), w: w, want: "input dtype int"},
		{name: "dtypes differ", x: x, w: m(f32, 6, 4, 3, 3), want: "weight dtype float32 differs from input dtype float64"},
		{name: "input rank", x: m(f64, 4, 6, 6), w: w, want: "input must have rank 4"},
		{name: "weight rank", x: x, w: m(f64, 6, 4, 9), want: "weight must have rank 4"},
		{name: "weight channels", x: x, w: m(f64, 6, 3, 3, 3), want: "weight.shape[1] 3, want input channels / Groups = 4"},
		{name: "groups", x: x, w: m(f64, 6, 2, 3, 3), opts: nn.Conv2dOpts{Groups: 3}, want: "divisible by Groups 3"},
		{name: "negative groups", x: x, w: w, opts: nn.Conv2dOpts{Groups: -1}, want: "negative Groups"},
		{name: "negative padding", x: x, w: w, opts: nn.Conv2dOpts{Padding: [2]int{-1, 0}}, want: "Padding [-1 0]"},
		{name: "kernel too large", x: x, w: m(f64, 6, 4, 7, 3), want: "height: dilated kernel 7 larger than the padded input 6"},
		{name: "dilated too large", x: x, w: w, opts: nn.Conv2dOpts{Dilation: [2]int{1, 3}}, want: "width: dilated kernel 7"},
		{name: "bias shape", x: x, w: w, b: m(f64, 5), want: "bias shape (5), want (6)"},
		{name: "bias rank", x: x, w: w, b: m(f64, 6, 1), want: "bias must have rank 1"},
		{name: "transpose weight", x: x, w: m(f64, 3, 2, 3, 3), transposeOpts: &nn.ConvTranspose2dOpts{}, want: "weight.shape[0] 3 differs from the input channels 4"},
		{name: "huge padding", x: x, w: w, opts: nn.Conv2dOpts{Padding: [2]int{1 << 24, 1 << 24}}, want: "would have more than"},
		{name: "padding above limit", x: x, w: w, opts: nn.Conv2dOpts{Padding: [2]int{1 << 30, 0}}, want: "Padding [1073741824 0] must be in [0, "},
		{name: "transpose no channels", x: m(f64, 2, 0, 6, 6), w: m(f64, 0, 2, 3, 3), transposeOpts: &nn.ConvTranspose2dOpts{}, want: "input channels is 0"},
		{name: "transpose huge stride", x: x, w: m(f64, 4, 2, 3, 3), transposeOpts: &nn.ConvTranspose2dOpts{Stride: [2]int{1 << 30, 1}}, want: "Stride [1073741824 1] must be in"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.transposeOpts != nil {
				_, err = nn.ConvTranspose2d(c.x, c.w, c.b, *c.transposeOpts)
			} else {
				_, err = nn.Conv2d(c.x, c.w, c.b, c.opts)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	tw := m(f64, 4, 3, 3, 3)
	for _, c := range []struct {
		name string
		opts nn.ConvTranspose2dOpts
		want string
	}{
		{"output padding = stride", nn.ConvTranspose2dOpts{OutputPadding: [2]int{1, 0}}, "OutputPadding [1 0] must be non-negative and smaller than Stride [1 1]"},
		{"negative output padding", nn.ConvTranspose2dOpts{Stride: [2]int{2, 2}, OutputPadding: [2]int{0, -1}}, "OutputPadding [0 -1]"},
		{"result too small", nn.ConvTranspose2dOpts{Padding: [2]int{5, 5}}, "result size"},
	} {
		t.Run("transpose/"+c.name, func(t *testing.T) {
			_, err := nn.ConvTranspose2d(x, tw, nil, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}
