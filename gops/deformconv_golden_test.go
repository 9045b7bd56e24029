package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
)

// deformGolden is one torchvision.ops.deform_conv2d evaluation written by
// testdata/gen_golden_deform.py. Optional tensors are null.
type deformGolden struct {
	Name        string    `json:"name"`
	Dtype       string    `json:"dtype"`
	Stride      [2]int    `json:"stride"`
	Padding     [2]int    `json:"padding"`
	Dilation    [2]int    `json:"dilation"`
	InputShape  []int     `json:"input_shape"`
	Input       []float64 `json:"input"`
	WeightShape []int     `json:"weight_shape"`
	Weight      []float64 `json:"weight"`
	OffsetShape []int     `json:"offset_shape"`
	Offset      []float64 `json:"offset"`
	MaskShape   []int     `json:"mask_shape"`
	Mask        []float64 `json:"mask"`
	Bias        []float64 `json:"bias"`
	GradOutput  []float64 `json:"grad_output"`
	OutputShape []int     `json:"output_shape"`
	Output      []float64 `json:"output"`
	GradInput   []float64 `json:"grad_input"`
	GradOffset  []float64 `json:"grad_offset"`
	GradWeight  []float64 `json:"grad_weight"`
	GradBias    []float64 `json:"grad_bias"`
	GradMask    []float64 `json:"grad_mask"`
}

func TestDeformConv2dGolden(t *testing.T) {
	cases := loadGoldenFile[deformGolden](t, "deformconv_golden.json.gz")
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			rtol, atol := 1e-11, 1e-11
			if c.Dtype == "float32" {
				rtol, atol = 2e-5, 2e-5
			}
			g := gorgonia.NewGraph()
			node := func(name string, shape []int, data []float64) *gorgonia.Node {
				return goldenNode(g, c.Dtype, name, shape, data)
			}
			x := node("input", c.InputShape, c.Input)
			off := node("offset", c.OffsetShape, c.Offset)
			w := node("weight", c.WeightShape, c.Weight)
			wrt := gorgonia.Nodes{x, off, w}
			want := [][]float64{c.GradInput, c.GradOffset, c.GradWeight}
			var bias, mask *gorgonia.Node
			if c.Bias != nil {
				bias = node("bias", []int{len(c.Bias)}, c.Bias)
				wrt, want = append(wrt, bias), append(want, c.GradBias)
			}
			if c.Mask != nil {
				mask = node("mask", c.MaskShape, c.Mask)
				wrt, want = append(wrt, mask), append(want, c.GradMask)
			}
			y, err := gops.DeformConv2d(x, off, w, bias, mask, gops.DeformConv2dOpts{Stride: c.Stride, Padding: c.Padding, Dilation: c.Dilation})
			if err != nil {
				t.Fatal(err)
			}
			gy := node("grad_output", c.OutputShape, c.GradOutput)
			cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gy))))
			grads, err := ad.Grad(cost, wrt...)
			if err != nil {
				t.Fatal(err)
			}
			got := runRead(t, g, append(gorgonia.Nodes{y}, grads...)...)
			assertClose(t, "output", got[0], c.Output, rtol, atol)
			for i, v := range got[1:] {
				assertClose(t, "grad of "+wrt[i].Name(), v, want[i], rtol, atol*10)
			}
		})
	}
}
