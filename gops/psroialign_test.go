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
