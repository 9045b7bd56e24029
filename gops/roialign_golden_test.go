package gops_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
)

func TestRoIAlignGolden(t *testing.T) {
	checkPoolGolden(t, "roialign_golden.json.gz", goldenRoIAlign, nil)
}

// roiBoxGoldenCase is one case of testdata/gen_golden_roialign_boxes.py:
// torch autograd over an independent float64 re-implementation of
// roi_align (its forward and input gradient checked against torchvision's).
type roiBoxGoldenCase struct {
	goldenCase
	GradBoxes []float64 `json:"grad_boxes"`
	KinkBoxes []int     `json:"kink_boxes"` // a sample point on an integer
}

// TestRoIAlignBoxGradientGolden: output, input gradient and box gradient of
// sum(RoIAlign(x, boxes) ⊙ grad_output), in float64 (1e-10) and, from the
// same values, in float32 (1e-4 relative to the largest value; box
// gradients of boxes with a sample point exactly on an integer are skipped
// there: float32 rounding may put it in the other cell, a kink).
func TestRoIAlignBoxGradientGolden(t *testing.T) {
	checkBoxGradientGolden(t, "roialign_boxes_golden.json.gz", goldenRoIAlign)
}

// TestPSRoIAlignBoxGradientGolden: as TestRoIAlignBoxGradientGolden for
// PSRoIAlign (testdata/gen_golden_psroialign_boxes.py).
func TestPSRoIAlignBoxGradientGolden(t *testing.T) {
	checkBoxGradientGolden(t, "psroialign_boxes_golden.json.gz", goldenPSRoIAlign)
}

// checkBoxGradientGolden compares output, input gradient and box gradient
// of sum(op(x, boxes) ⊙ grad_output) with each case of file.
func checkBoxGradientGolden(t *testing.T, file string, op goldenPoolOp) {
	for _, c := range loadGoldenFile[roiBoxGoldenCase](t, file) {
		for _, dt := range []string{"float64", "float32"} {
			t.Run(c.Name+"/"+dt, func(t *testing.T) {
				g := gorgonia.NewGraph()
				x := goldenNode(g, dt, "x", c.InputShape, c.Input)
				b := goldenNode(g, dt, "boxes", c.BoxesShape, c.Boxes)
				gy := goldenNode(g, dt, "gy", c.OutputShape, c.GradOutput)
				y, err := op(&c.goldenCase, x, b)
				if err != nil {
					t.Fatal(err)
				}
				grads, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gy)))), x, b)
				if err != nil {
					t.Fatal(err)
				}
				got := runRead(t, g, y, grads[0], grads[1])
				want := append([]float64(nil), c.GradBoxes...)
				if dt == "float32" {
					for _, k := range c.KinkBoxes {
						copy(got[2][5*k:5*k+5], want[5*k:5*k+5])
					}
				}
				tol := func(want []float64) (float64, float64) {
					if dt == "float64" {
						return 1e-10, 1e-10
					}
					m := 0.0
					for _, v := range want {
						m = math.Max(m, math.Abs(v))
					}
					return 1e-4, 1e-4 * m
				}
				for i, w := range [][]float64{c.Output, c.GradInput, want} {
					rtol, atol := tol(w)
					assertClose(t, []string{"output", "grad_input", "grad_boxes"}[i], got[i], w, rtol, atol)
				}
			})
		}
	}
}
