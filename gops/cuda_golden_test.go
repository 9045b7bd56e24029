//go:build cuda

package gops

import (
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GPU against CPU on the golden grid (issue 7): for every case of the
// testdata/*_golden.json.gz files, the op's forward, its first-order
// gradient Grad(Σ y ⊙ grad_output) w.r.t. the differentiable inputs, and the
// second-order gradient Grad(Σ_i Σ g1_i²) w.r.t. the same inputs, run on
// Gorgonia's CUDA TapeMachine and compared by gpuCompare with the CPU kernels
// node by node and with a CPU evaluation of the whole graph: float64 within
// 1e-10 relative, float32 within 1e-4 relative.
//
// The cases' inputs are the golden file's; agreement of the CPU results with
// torchvision's numbers is the CPU golden tests' business (golden_test.go,
// pool_golden_test.go, deform_golden_test.go).
//
// Cases with K = 0 boxes are skipped: their output is empty, and Gorgonia's
// elementwise ops (the HadamardProd of the cost) panic on empty tensors, on
// the CPU as on the GPU. TestRoIAlignNoBoxes and TestPoolNoBoxes cover K = 0
// on the CPU. The deformable grid has no empty case.

// gpuGoldenCompare adds to g1 = Grad(Σ y ⊙ gy, wrt...) the gradient of
// Σ_i Σ g1_i² w.r.t. wrt, and runs gpuCompare.
func gpuGoldenCompare(t *testing.T, dt tensor.Dtype, g *gorgonia.ExprGraph, y, gy *gorgonia.Node, wrt gorgonia.Nodes) {
	t.Helper()
	must := func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cost := must(gorgonia.Sum(must(gorgonia.HadamardProd(y, gy))))
	g1, err := Grad(cost, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	var cost2 *gorgonia.Node
	for _, d := range g1 {
		term := must(gorgonia.Sum(must(gorgonia.Square(d))))
		if cost2 == nil {
			cost2 = term
		} else {
			cost2 = must(gorgonia.Add(cost2, term))
		}
	}
	g2, err := Grad(cost2, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	gpuCompare(t, dt, g, y, wrt, g1, g2)
}

func goldenDtype(s string) tensor.Dtype {
	if s == "float32" {
		return tensor.Float32
	}
	return tensor.Float64
}

// gpuGoldenNode is a tensor input holding a golden case's values.
func gpuGoldenNode(g *gorgonia.ExprGraph, dtype, name string, shape []int, data []float64) *gorgonia.Node {
	return gorgonia.NewTensor(g, goldenDtype(dtype), len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
		gorgonia.WithValue(goldenTensor(dtype, shape, data)))
}

// gpuPoolGolden runs the GPU comparison for every non-empty case of file
// (RoIAlign, RoIPool, PSRoIAlign, PSRoIPool: differentiable in x only; the
// boxes have no gradient).
func gpuPoolGolden(t *testing.T, file string, op func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error)) {
	needGPU(t)
	ran := 0
	for _, c := range loadGoldenFile[poolGoldenCase](t, file) {
		if c.BoxesShape[0] == 0 {
			continue // K = 0: see the file comment
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := gpuGoldenNode(g, c.Dtype, "x", c.InputShape, c.Input)
			b := gpuGoldenNode(g, c.Dtype, "boxes", c.BoxesShape, c.Boxes)
			gy := gpuGoldenNode(g, c.Dtype, "grad_output", c.OutputShape, c.GradOutput)
			y, err := op(&c, x, b)
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
				t.Fatalf("output shape %v, want %v", y.Shape(), c.OutputShape)
			}
			gpuGoldenCompare(t, goldenDtype(c.Dtype), g, y, gy, gorgonia.Nodes{x})
		})
	}
	if ran == 0 {
		t.Fatalf("%s: no non-empty case", file)
	}
}

func TestGPUGoldenRoIAlign(t *testing.T) {
	gpuPoolGolden(t, "roialign_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return RoIAlign(x, b, RoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio, Aligned: c.Aligned})
	})
}

func TestGPUGoldenRoIPool(t *testing.T) {
	gpuPoolGolden(t, "roipool_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return RoIPool(x, b, RoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
	})
}

func TestGPUGoldenPSRoIAlign(t *testing.T) {
	gpuPoolGolden(t, "psroialign_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return PSRoIAlign(x, b, PSRoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio})
	})
}

func TestGPUGoldenPSRoIPool(t *testing.T) {
	gpuPoolGolden(t, "psroipool_golden.json.gz", func(c *poolGoldenCase, x, b *gorgonia.Node) (*gorgonia.Node, error) {
		return PSRoIPool(x, b, PSRoIPoolOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale})
	})
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
			x := gpuGoldenNode(g, c.Dtype, "input", c.InputShape, c.Input)
			off := gpuGoldenNode(g, c.Dtype, "offset", c.OffsetShape, c.Offset)
			w := gpuGoldenNode(g, c.Dtype, "weight", c.WeightShape, c.Weight)
			wrt := gorgonia.Nodes{x, off, w}
			var bias, mask *gorgonia.Node
			if c.Bias != nil {
				bias = gpuGoldenNode(g, c.Dtype, "bias", []int{len(c.Bias)}, c.Bias)
				wrt = append(wrt, bias)
			}
			if c.Mask != nil {
				mask = gpuGoldenNode(g, c.Dtype, "mask", c.MaskShape, c.Mask)
				wrt = append(wrt, mask)
			}
			y, err := DeformConv2d(x, off, w, bias, mask, DeformConv2dOpts{Stride: c.Stride, Padding: c.Padding, Dilation: c.Dilation})
			if err != nil {
				t.Fatal(err)
			}
			if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
				t.Fatalf("output shape %v, want %v", y.Shape(), c.OutputShape)
			}
			gy := gpuGoldenNode(g, c.Dtype, "grad_output", c.OutputShape, c.GradOutput)
			gpuGoldenCompare(t, goldenDtype(c.Dtype), g, y, gy, wrt)
		})
	}
}
