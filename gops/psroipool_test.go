package gops_test

import (
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
