package nn_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/internal/golden"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// poolGoldenCase is one torch evaluation written by
// testdata/gen_golden_nnpool.py.
type poolGoldenCase struct {
	inputGolden
	Op              string `json:"op"`
	KernelSize      [2]int `json:"kernel_size"`
	Stride          [2]int `json:"stride"`
	Padding         [2]int `json:"padding"`
	Dilation        [2]int `json:"dilation"`
	CeilMode        bool   `json:"ceil_mode"`
	CountIncludePad bool   `json:"count_include_pad"`
	DivisorOverride int    `json:"divisor_override"`
	OutputSize      [2]int `json:"output_size"`
	InputNaN        []int  `json:"input_nan"`
	InputNegInf     []int  `json:"input_neginf"`
	OutputShape     []int  `json:"output_shape"`
	OutputNaN       []int  `json:"output_nan"`
	OutputNegInf    []int  `json:"output_neginf"`
	Square          bool   `json:"square"`
}

// apply builds the case's pooling of x.
func (c *poolGoldenCase) apply(x *gorgonia.Node) (*gorgonia.Node, error) {
	switch c.Op {
	case "max_pool2d":
		return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: c.KernelSize, Stride: c.Stride, Padding: c.Padding, Dilation: c.Dilation, CeilMode: c.CeilMode})
	case "avg_pool2d":
		return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: c.KernelSize, Stride: c.Stride, Padding: c.Padding, CeilMode: c.CeilMode,
			ExcludePad: !c.CountIncludePad, DivisorOverride: c.DivisorOverride})
	case "adaptive_max_pool2d":
		return nn.AdaptiveMaxPool2d(x, c.OutputSize)
	default:
		return nn.AdaptiveAvgPool2d(x, c.OutputSize)
	}
}

// TestPoolGolden: the four poolings' values, the input gradient of
// Σ G·pool(x)² and its Hessian-vector product equal torch's, float32 and
// float64: ceil_mode windows over the edge and starting in the padding,
// dilation, stride > kernel, ties, windows of −Inf and with NaN (torch's
// max: the last NaN), count_include_pad both ways, divisor_override,
// adaptive windows that overlap or repeat.
func TestPoolGolden(t *testing.T) {
	runGolden(t, "nnpool_golden.json.gz", func(t *testing.T, gg *goldenGraph, c *poolGoldenCase) {
		rtol, atol := gg.rtol, gg.atol
		in := append([]float64(nil), c.Input...)
		for _, i := range c.InputNaN {
			in[i] = math.NaN()
		}
		for _, i := range c.InputNegInf {
			in[i] = math.Inf(-1)
		}
		x := gg.node("x", c.InputShape, in)
		y, err := c.apply(x)
		if err != nil {
			t.Fatal(err)
		}
		if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
			t.Fatalf("shape %v, want %v", y.Shape(), c.OutputShape)
		}
		got := gg.gradHVP(y, x, nil, nil, !c.Square, c.GradOutput, c.VInput, nil)
		out := got[0]
		for _, i := range c.OutputNaN {
			if !math.IsNaN(out[i]) {
				t.Fatalf("output[%d] = %v, want NaN", i, out[i])
			}
			out[i] = 0
		}
		for _, i := range c.OutputNegInf {
			if !math.IsInf(out[i], -1) {
				t.Fatalf("output[%d] = %v, want -Inf", i, out[i])
			}
			out[i] = 0
		}
		golden.AssertClose(t, "output", out, c.Output, rtol, atol)
		golden.AssertClose(t, "grad_input", got[1], c.GradInput, rtol, atol)
		golden.AssertClose(t, "hvp_input", got[2], c.HVPInput, rtol, atol)
	})
}

// TestPoolBadInput: errors that name the op and the problem.
func TestPoolBadInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 2, 5, 5))
	k2 := [2]int{2, 2}
	runErrCases(t, []errCase{
		{"nil", func() (*gorgonia.Node, error) { return nn.MaxPool2d(nil, nn.MaxPool2dOpts{KernelSize: k2}) }, "MaxPool2d: input is nil"},
		{"rank", func() (*gorgonia.Node, error) {
			return nn.AvgPool2d(gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(5, 5)), nn.AvgPool2dOpts{KernelSize: k2})
		}, "AvgPool2d: input must have rank 4"},
		{"int", func() (*gorgonia.Node, error) {
			return nn.MaxPool2d(gorgonia.NewTensor(g, tensor.Int, 4, gorgonia.WithShape(1, 1, 2, 2)), nn.MaxPool2dOpts{KernelSize: k2})
		}, "input dtype int"},
		{"zero kernel", func() (*gorgonia.Node, error) { return nn.MaxPool2d(x, nn.MaxPool2dOpts{}) }, "KernelSize [0 0]"},
		{"negative stride", func() (*gorgonia.Node, error) {
			return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: k2, Stride: [2]int{-1, 1}})
		}, "Stride [-1 1]"},
		{"padding over half", func() (*gorgonia.Node, error) {
			return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: [2]int{3, 3}, Padding: [2]int{2, 0}})
		}, "at most half of KernelSize"},
		{"negative padding", func() (*gorgonia.Node, error) {
			return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: k2, Padding: [2]int{0, -1}})
		}, "Padding [0 -1] must be non-negative"},
		{"kernel too large", func() (*gorgonia.Node, error) { return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: [2]int{6, 2}}) }, "output size 0x2 too small"},
		{"dilated too large", func() (*gorgonia.Node, error) {
			return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: k2, Dilation: [2]int{1, 5}})
		}, "too small"},
		{"divisor", func() (*gorgonia.Node, error) {
			return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: k2, DivisorOverride: -2})
		}, "negative DivisorOverride -2"},
		{"adaptive size", func() (*gorgonia.Node, error) { return nn.AdaptiveAvgPool2d(x, [2]int{0, 3}) }, "AdaptiveAvgPool2d: output size [0 3]"},
		{"adaptive empty input", func() (*gorgonia.Node, error) {
			return nn.AdaptiveMaxPool2d(gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 0, 3)), [2]int{1, 1})
		}, "must have a height and width in [1, "},
	})
}

// TestPoolEdgeCases: torch's answers where a window hangs over the edge
// in ceil mode although the kernel is larger than the padded input, and
// where a dilated window lies entirely in the padding (−Inf); sizes whose
// tables or results could not be allocated are errors, not a crash.
func TestPoolEdgeCases(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 2, 3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))))
	mx, err := nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: [2]int{1, 4}, Stride: [2]int{1, 4}, CeilMode: true})
	if err != nil {
		t.Fatal(err)
	}
	av, err := nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: [2]int{1, 4}, Stride: [2]int{1, 4}, CeilMode: true})
	if err != nil {
		t.Fatal(err)
	}
	x2 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 2, 2), gorgonia.WithName("x2"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]float64{1, 2, 3, 4}))))
	empty, err := nn.MaxPool2d(x2, nn.MaxPool2dOpts{KernelSize: [2]int{2, 2}, Padding: [2]int{1, 1}, Dilation: [2]int{3, 3}})
	if err != nil {
		t.Fatal(err)
	}
	dx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(mx)), x)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, mx, av, empty, dx[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(got[2]) != 1 || !math.IsInf(got[2][0], -1) {
		t.Fatalf("empty window: %v, want [-Inf]", got[2])
	}
	for i, want := range [][]float64{{3, 6}, {2, 5}, nil, {0, 0, 1, 0, 0, 1}} {
		if want != nil {
			golden.AssertClose(t, []string{"max", "avg", "", "max gradient"}[i], got[i], want, 0, 0)
		}
	}
	big := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 1<<20, 1<<20))
	huge := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 1<<30, 1))
	runErrCases(t, []errCase{
		{"adaptive output", func() (*gorgonia.Node, error) { return nn.AdaptiveAvgPool2d(x, [2]int{1 << 20, 1 << 20}) }, "the result would have more than"},
		{"adaptive axis", func() (*gorgonia.Node, error) { return nn.AdaptiveMaxPool2d(x, [2]int{1 << 30, 1}) }, "output size [1073741824 1] must be in"},
		{"input elements", func() (*gorgonia.Node, error) { return nn.MaxPool2d(big, nn.MaxPool2dOpts{KernelSize: [2]int{1, 1}}) }, "the result would have more than"},
		{"input axis", func() (*gorgonia.Node, error) { return nn.AvgPool2d(huge, nn.AvgPool2dOpts{KernelSize: [2]int{1, 1}}) }, "input height 1073741824 must be in"},
	})
}
