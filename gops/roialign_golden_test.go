package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestRoIAlignGolden(t *testing.T) {
	for _, c := range loadGoldenFile[goldenCase](t, "roialign_golden.json.gz") {
		if c.BoxesShape[0] == 0 {
			continue // K = 0: TestRoIAlignNoBoxes
		}
		t.Run(c.Name, func(t *testing.T) {
			rtol, atol := 1e-12, 1e-12
			dt := tensor.Float64
			if c.Dtype == "float32" {
				rtol, atol, dt = 1e-5, 1e-5, tensor.Float32
			}
			g := gorgonia.NewGraph()
			x := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(c.InputShape...), gorgonia.WithName("x"),
				gorgonia.WithValue(goldenTensor(c.Dtype, c.InputShape, c.Input)))
			b := gorgonia.NewTensor(g, dt, 2, gorgonia.WithShape(c.BoxesShape...), gorgonia.WithName("boxes"),
				gorgonia.WithValue(goldenTensor(c.Dtype, c.BoxesShape, c.Boxes)))
			gy := gorgonia.NewTensor(g, dt, 4, gorgonia.WithShape(c.OutputShape...), gorgonia.WithName("gy"),
				gorgonia.WithValue(goldenTensor(c.Dtype, c.OutputShape, c.GradOutput)))
			y, err := gops.RoIAlign(x, b, gops.RoIAlignOpts{OutputSize: c.OutputSize, SpatialScale: c.SpatialScale, SamplingRatio: c.SamplingRatio, Aligned: c.Aligned})
			if err != nil {
				t.Fatal(err)
			}
			cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gy))))
			grads, err := ad.Grad(cost, x)
			if err != nil {
				t.Fatal(err)
			}
			got := runRead(t, g, y, grads[0])
			assertClose(t, "output", got[0], c.Output, rtol, atol)
			assertClose(t, "grad_input", got[1], c.GradInput, rtol, atol)
		})
	}
}
