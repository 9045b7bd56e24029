//go:build cuda

package gops_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestGPUDeformConv2d(t *testing.T) {
	for _, dt := range gpuDtypes {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/masked=%t", dt, masked), func(t *testing.T) {
				gpuCheck(t, dt, func(g *gorgonia.ExprGraph, rng *rand.Rand) (*gorgonia.Node, gorgonia.Nodes) {
					x := input(g, "x", randValue(rng, dt, tensor.Shape{2, 4, 5, 5}))
					w := input(g, "w", randValue(rng, dt, tensor.Shape{6, 2, 3, 3}))
					off := input(g, "off", randValue(rng, dt, tensor.Shape{2, 36, 5, 5}))
					bias := input(g, "bias", randValue(rng, dt, tensor.Shape{6}))
					wrt := gorgonia.Nodes{x, off, w}
					var mask *gorgonia.Node
					if masked {
						mask = input(g, "mask", randValue(rng, dt, tensor.Shape{2, 18, 5, 5}))
						wrt = append(wrt, mask)
					}
					y, err := gops.DeformConv2d(x, off, w, bias, mask, gops.DeformConv2dOpts{Padding: [2]int{1, 1}})
					if err != nil {
						t.Fatal(err)
					}
					return y, wrt
				})
			})
		}
	}
}

// TestGPUGoldenDeformConv2d: differentiable in input, offset, weight, and
// bias and mask where the case has them (as TestDeformConv2dGolden).
func TestGPUGoldenDeformConv2d(t *testing.T) {
	needGPU(t)
	for _, c := range loadGoldenFile[deformGolden](t, "deformconv_golden.json.gz") {
		t.Run(c.Name, func(t *testing.T) {
			for _, s := range [][]int{c.InputShape, c.OffsetShape, c.WeightShape, c.OutputShape} {
				if tensor.Shape(s).TotalSize() == 0 {
					t.Skip("empty tensor: see the file comment")
				}
			}
			g := gorgonia.NewGraph()
			x := goldenNode(g, c.Dtype, "input", c.InputShape, c.Input)
			off := goldenNode(g, c.Dtype, "offset", c.OffsetShape, c.Offset)
			w := goldenNode(g, c.Dtype, "weight", c.WeightShape, c.Weight)
			wrt := gorgonia.Nodes{x, off, w}
			var bias, mask *gorgonia.Node
			if c.Bias != nil {
				bias = goldenNode(g, c.Dtype, "bias", []int{len(c.Bias)}, c.Bias)
				wrt = append(wrt, bias)
			}
			if c.Mask != nil {
				mask = goldenNode(g, c.Dtype, "mask", c.MaskShape, c.Mask)
				wrt = append(wrt, mask)
			}
			y, err := gops.DeformConv2d(x, off, w, bias, mask, gops.DeformConv2dOpts{Stride: c.Stride, Padding: c.Padding, Dilation: c.Dilation})
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
				t.Fatalf("output shape %v, want %v", y.Shape(), c.OutputShape)
			}
			gy := goldenNode(g, c.Dtype, "grad_output", c.OutputShape, c.GradOutput)
			gpuGoldenCompare(t, goldenDtype(c.Dtype), g, y, gy, wrt)
		})
	}
}
