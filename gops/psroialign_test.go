package gops_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func psRoIAlignOp(opts gops.PSRoIAlignOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.PSRoIAlign(x, b, opts) }
}

// A bin without samples (a zero-width box, adaptive sampling) gives 0 and no
// gradient; torchvision gives NaN (0/0).
func TestPSRoIAlignNoSamplesIsZero(t *testing.T) {
	b := boxesTensor(
		[5]float64{0, 2, 1, 2, 4},     // zero width
		[5]float64{1, 1, 3, 4, 3},     // zero height
		[5]float64{0, 4, 1, 3.5, 3.5}, // slightly inverted: ceil(-0.25) = 0 samples
	)
	y, dx, err := runPool(psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}}), rangeTensor(2, 4, 5, 6), b)
	if err != nil {
		t.Fatal(err)
	}
	expectZeros(t, append(y, dx...))
}

// Sample points outside the input read nothing, in both directions, as in
// torchvision's ps_roi_align: a NaN in pixel 0 does not spread into an
// outside box's output, nor an infinite upstream gradient into pixel 0.
func TestPSRoIAlignOutsideReadsNothing(t *testing.T) {
	x := rangeTensor(1, 4, 4, 4)
	for c := 0; c < 4; c++ {
		x.Data().([]float64)[c*16] = math.NaN()
	}
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 4, 4, 4), gorgonia.WithValue(x))
	bn := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithValue(boxesTensor([5]float64{0, -9, -9, -8, -8})))
	y := gorgonia.Must(gops.PSRoIAlign(xn, bn, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2}))
	inf := tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]float64{math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1)}))
	dx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gorgonia.Must(ad.Constant(g, inf)))))), xn)
	if err != nil {
		t.Fatal(err)
	}
	got, err := graphtest.Eval(g, y, dx[0])
	if err != nil {
		t.Fatal(err)
	}
	expectZeros(t, append(got[0], got[1]...))
}

func TestPSRoIAlignBadInput(t *testing.T) {
	psBadInput(t, "PSRoIAlign", func(x, b *gorgonia.Node, size [2]int, scale float64) (*gorgonia.Node, error) {
		return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: size, SpatialScale: scale})
	}, badInputCase{"huge adaptive box", rangeTensor(2, 8, 5, 6), boxesTensor([5]float64{0, 0, 0, 1e12, 1e12}), [2]int{2, 2}, 0, false, "PSRoIAlign: box 0: adaptive sampling grid"})
	t.Run("huge sampling ratio", func(t *testing.T) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 4, 4, 4), gorgonia.WithInit(gorgonia.RangedFrom(0)))
		b := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithValue(boxesTensor([5]float64{0, 0, 0, 2, 2})))
		_, err := gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 5000})
		if err == nil || !strings.Contains(err.Error(), "SamplingRatio 5000 gives more than 2^24 samples per box") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestPSRoIAlignGolden(t *testing.T) {
	ran := checkPoolGolden(t, "psroialign_golden.json.gz", goldenPSRoIAlign, func(t *testing.T, c *poolGoldenCase, y, dx []float64, rtol, atol float64) {
		// torchvision's NaN (a bin without samples) is 0 here, as the
		// golden file already holds it; check that it is exactly 0.
		for _, i := range c.NaNOutput {
			if y[i] != 0 {
				t.Fatalf("output[%d] = %v where torchvision has NaN, want 0", i, y[i])
			}
		}
		assertPoolGolden(t, c, y, dx, rtol, atol)
	})
	nans := 0
	for _, c := range ran {
		nans += len(c.NaNOutput)
	}
	if nans == 0 {
		t.Errorf("no golden case has a bin without samples")
	}
}

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
