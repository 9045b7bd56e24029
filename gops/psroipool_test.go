package gops_test

import (
	"slices"
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
)

func psRoIPoolOp(opts gops.PSRoIPoolOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIPool(x, b, opts) }
}

// borderBoxes reach the last row and column of a [2, C, 5, 6] input, or
// beyond, where torchvision's ps_roi_pool forward and backward disagree.
var borderBoxes = boxesTensor(
	[5]float64{0, 0, 0, 6, 5},     // one past the last column and row
	[5]float64{1, 3, 2, 7.4, 6.6}, // beyond both
	[5]float64{0, 2.5, 0.5, 5, 4}, // ends on the last column, .5 start
	[5]float64{1, -1, 3, 4, 5.5},  // left of the image and beyond the last row
)

func TestPSRoIPoolBadInput(t *testing.T) {
	psBadInput(t, "PSRoIPool", func(x, b *gorgonia.Node, size [2]int, scale float64) (*gorgonia.Node, error) {
		return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: size, SpatialScale: scale})
	})
}

// PSRoIPool equals torchvision's forward on the input padded by a zero row
// and column everywhere (the clip at [0, H]), torchvision's own forward on
// every box that does not reach the border, and torchvision's gradient
// everywhere (its backward clips at [0, H] too).
func TestPSRoIPoolGolden(t *testing.T) {
	differ := 0
	checkPoolGolden(t, "psroipool_golden.json.gz", goldenPSRoIPool, func(t *testing.T, c *poolGoldenCase, y, dx []float64, rtol, atol float64) {
		assertClose(t, "output (clipped at H, W)", y, c.OutputGops, rtol, atol)
		assertClose(t, "grad_input", dx, c.GradInput, rtol, atol)
		per := len(y) / c.BoxesShape[0]
		for k := 0; k < c.BoxesShape[0]; k++ {
			got, want := y[k*per:(k+1)*per], c.Output[k*per:(k+1)*per]
			if slices.Contains(c.BorderBoxes, k) {
				if !slices.Equal(got, want) {
					differ++
				}
				continue
			}
			assertClose(t, "output of a box inside", got, want, rtol, atol)
		}
	})
	if differ == 0 {
		t.Errorf("no border box where torchvision's forward differs: the golden grid misses the case")
	}
}
