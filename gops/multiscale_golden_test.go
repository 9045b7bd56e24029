package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// multiScaleGoldenCase is one torchvision.ops.MultiScaleRoIAlign evaluation
// written by testdata/gen_golden_multiscale.py (schema at its top).
type multiScaleGoldenCase struct {
	Name           string      `json:"name"`
	Dtype          string      `json:"dtype"`
	OutputSize     [2]int      `json:"output_size"`
	SamplingRatio  int         `json:"sampling_ratio"`
	CanonicalScale int         `json:"canonical_scale"`
	CanonicalLevel int         `json:"canonical_level"`
	ImageSizes     [][2]int    `json:"image_sizes"`
	FeatureShapes  [][]int     `json:"feature_shapes"`
	Features       [][]float64 `json:"features"`
	BoxesShapes    [][]int     `json:"boxes_shapes"`
	Boxes          [][]float64 `json:"boxes"`
	Scales         []float64   `json:"scales"`
	Levels         []int       `json:"levels"`
	GradOutput     []float64   `json:"grad_output"`
	OutputShape    []int       `json:"output_shape"`
	Output         []float64   `json:"output"`
	GradFeatures   [][]float64 `json:"grad_features"`
}

// runMultiScaleGolden builds MultiScaleRoIAlign on a golden case (with
// the given Scales, nil to infer them) and the gradients of
// sum(out ⊙ grad_output) w.r.t. every feature map, and runs them: the
// output, then each map's gradient.
func runMultiScaleGolden(t *testing.T, c *multiScaleGoldenCase, scales []float64) [][]float64 {
	t.Helper()
	dt := tensor.Float64
	if c.Dtype == "float32" {
		dt = tensor.Float32
	}
	g := gorgonia.NewGraph()
	var feats, boxes gorgonia.Nodes
	for l, s := range c.FeatureShapes {
		feats = append(feats, goldenNode(g, c.Dtype, "f"+string(rune('0'+l)), s, c.Features[l]))
	}
	for i, s := range c.BoxesShapes {
		v := goldenTensor(c.Dtype, s, c.Boxes[i])
		if s[0] == 0 {
			v = tensor.New(tensor.Of(dt), tensor.WithShape(s...))
		}
		boxes = append(boxes, gorgonia.NewTensor(g, dt, 2, gorgonia.WithShape(s...), gorgonia.WithName("boxes"+string(rune('0'+i))), gorgonia.WithValue(v)))
	}
	y, err := gops.MultiScaleRoIAlign(feats, boxes, c.ImageSizes, gops.MultiScaleRoIAlignOpts{
		OutputSize: c.OutputSize, SamplingRatio: c.SamplingRatio,
		CanonicalScale: c.CanonicalScale, CanonicalLevel: c.CanonicalLevel, Scales: scales,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape(c.OutputShape)) {
		t.Fatalf("output shape %v, want %v", y.Shape(), c.OutputShape)
	}
	var cost *gorgonia.Node
	if y.Shape().TotalSize() == 0 {
		cost = gorgonia.Must(gorgonia.Sum(y)) // Gorgonia's elementwise ops panic on empty tensors
	} else {
		gy := goldenNode(g, c.Dtype, "gy", c.OutputShape, c.GradOutput)
		cost = gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gy))))
	}
	grads, err := ad.Grad(cost, feats...)
	if err != nil {
		t.Fatal(err)
	}
	return runRead(t, g, append(gorgonia.Nodes{y}, grads...)...)
}

// TestMultiScaleRoIAlignGolden compares the output and the gradients
// w.r.t. every feature map with torchvision's, with the scales inferred
// and with torchvision's scales given.
func TestMultiScaleRoIAlignGolden(t *testing.T) {
	for _, c := range loadGoldenFile[multiScaleGoldenCase](t, "multiscale_golden.json.gz") {
		for _, given := range []bool{false, true} {
			name := c.Name
			var scales []float64
			if given {
				name, scales = name+"/given-scales", c.Scales
			}
			t.Run(name, func(t *testing.T) {
				rtol, atol := 1e-12, 1e-12
				if c.Dtype == "float32" {
					rtol, atol = 1e-5, 1e-5
				}
				got := runMultiScaleGolden(t, &c, scales)
				assertClose(t, "output", got[0], c.Output, rtol, atol)
				for l, want := range c.GradFeatures {
					assertClose(t, "grad features["+string(rune('0'+l))+"]", got[1+l], want, rtol, atol)
				}
			})
		}
	}
}
