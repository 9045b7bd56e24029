package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/tensor"
)

// psSmoothBoxes are smoothBoxes' rows and one above and right of the image
// (clamped rows, last-column and outside samples), on a [2, C, 6, 7] input
// (feature-map coordinates): no sample point of PSRoIAlign's grid (aligned:
// −0.5) in psRoIAlignBoxCases is within 0.01 of an integer (cells, 0, −1,
// the last row or column) and no adaptive grid size is near a step, so
// finite differences see no kink.
var psSmoothBoxes = boxesTensor(append(smoothBoxRows[:len(smoothBoxRows):len(smoothBoxRows)],
	[5]float64{1, 3.91, -0.83, 7.77, 2.53})...)

// psRoIAlignBoxCases are PSRoIAlign's configurations for the box gradients:
// input channels c, box coordinates multiplied by scale (SpatialScale
// 1/scale).
var psRoIAlignBoxCases = []struct {
	name  string
	opts  gops.PSRoIAlignOpts
	c     int
	scale float64
}{
	{"out=2x2/adaptive", gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}}, 8, 1},
	{"out=3x2/sampling2/scale0.5", gops.PSRoIAlignOpts{OutputSize: [2]int{3, 2}, SpatialScale: 0.5, SamplingRatio: 2}, 6, 2},
	{"out=1x2/sampling3/scale0.25", gops.PSRoIAlignOpts{OutputSize: [2]int{1, 2}, SpatialScale: 0.25, SamplingRatio: 3}, 4, 4},
	{"out=2x3/adaptive/c'=1", gops.PSRoIAlignOpts{OutputSize: [2]int{2, 3}, SamplingRatio: -1}, 6, 1},
}

// TestPSRoIAlignBoxGradients: orders 1–3 w.r.t. the boxes alone and w.r.t.
// input and boxes together, VMs and determinism (checkBoxGradients).
func TestPSRoIAlignBoxGradients(t *testing.T) {
	for i, c := range psRoIAlignBoxCases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]*tensor.Dense{rangeTensor(2, c.c, 6, 7)}, roisToLists(psSmoothBoxes, c.scale)...)
			checkBoxGradients(t, poolOfLists(psRoIAlignOp(c.opts)), in, uint64(i+31))
		})
	}
}

// TestPSRoIAlignBoxGradientBatchColumn: checkBoxGradientBatchColumn.
func TestPSRoIAlignBoxGradientBatchColumn(t *testing.T) {
	checkBoxGradientBatchColumn(t, psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2}), rangeTensor(2, 8, 6, 7), psSmoothBoxes)
}

// TestPSRoIAlignBoxGradientEmpty: checkBoxGradientEmpty.
func TestPSRoIAlignBoxGradientEmpty(t *testing.T) {
	checkBoxGradientEmpty(t, psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}}), rangeTensor(2, 8, 6, 7))
}
