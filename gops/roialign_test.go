package gops_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var roiAlignOptGrid = []struct {
	name string
	opts gops.RoIAlignOpts
}{
	{"aligned/adaptive", gops.RoIAlignOpts{OutputSize: [2]int{2, 3}, Aligned: true}},
	{"unaligned/sampling2", gops.RoIAlignOpts{OutputSize: [2]int{3, 2}, SamplingRatio: 2}},
	{"unaligned/scale0.5/adaptive", gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: 0.5, SamplingRatio: -1}},
}

func roiAlignOp(opts gops.RoIAlignOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIAlign(x, b, opts) }
}

// runRoIAlign evaluates RoIAlign and the input gradient of sum(y ⊙ gy) on a
// TapeMachine (runPool with RoIAlign as the op).
func runRoIAlign(x, boxes *tensor.Dense, opts gops.RoIAlignOpts) (y, dx []float64, err error) {
	return runPool(roiAlignOp(opts), x, boxes)
}

func TestRoIAlignInvertedAlignedAdaptiveIsZero(t *testing.T) {
	b := boxesTensor(
		[5]float64{0, 4, 1, 1, 3}, // x inverted: torchvision throws
		[5]float64{0, 1, 4, 3, 1}, // y inverted: torchvision throws
		[5]float64{0, 4, 4, 1, 1}, // both inverted
	)
	y, dx, err := runRoIAlign(rangeTensor(1, 2, 5, 6), b, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, Aligned: true})
	if err != nil {
		t.Fatal(err)
	}
	expectZeros(t, append(y, dx...))
}

func TestRoIAlignBadInput(t *testing.T) {
	ok := gops.RoIAlignOpts{OutputSize: [2]int{2, 2}}
	x4 := rangeTensor(2, 3, 5, 6)
	cases := []struct {
		name  string
		x, b  *tensor.Dense
		opts  gops.RoIAlignOpts
		build bool // error when the node is built (else when it runs)
		want  string
	}{
		{"input rank", rangeTensor(3, 5, 6), testBoxes, ok, true, "input must have rank 4"},
		{"boxes rank", x4, rangeTensor(30), ok, true, "boxes must have rank 2"},
		{"boxes columns", x4, rangeTensor(3, 4), ok, true, "boxes must be [K, 5]"},
		{"dtype mismatch", x4, toFloat32(testBoxes), ok, true, "boxes dtype float32 differs from input dtype float64"},
		{"int input", tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]int{1, 2, 3, 4})), testBoxes, ok, true, "input dtype int"},
		{"output size zero", x4, testBoxes, gops.RoIAlignOpts{OutputSize: [2]int{0, 2}}, true, "OutputSize [0 2] must be positive"},
		{"output size negative", x4, testBoxes, gops.RoIAlignOpts{OutputSize: [2]int{2, -1}}, true, "OutputSize [2 -1] must be positive"},
		{"negative scale", x4, testBoxes, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: -0.5}, true, "SpatialScale -0.5"},
		{"NaN scale", x4, testBoxes, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: math.NaN()}, true, "SpatialScale NaN"},
		{"batch index too large", x4, boxesTensor([5]float64{0, 0, 0, 1, 1}, [5]float64{2, 0, 0, 1, 1}), ok, false, "box 1: batch index 2 is not an integer in [0, 2)"},
		{"negative batch index", x4, boxesTensor([5]float64{-1, 0, 0, 1, 1}), ok, false, "box 0: batch index -1"},
		{"fractional batch index", x4, boxesTensor([5]float64{0.5, 0, 0, 1, 1}), ok, false, "box 0: batch index 0.5"},
		{"NaN batch index", x4, boxesTensor([5]float64{math.NaN(), 0, 0, 1, 1}), ok, false, "box 0: batch index NaN"},
		{"NaN coordinate", x4, boxesTensor([5]float64{0, 0, math.NaN(), 1, 1}), ok, false, "box 0: coordinate 2 (y1) is NaN"},
		{"infinite coordinate", x4, boxesTensor([5]float64{1, 0, 0, math.Inf(1), 1}), ok, false, "box 0: coordinate 3 (x2) is +Inf"},
		{"huge adaptive box", x4, boxesTensor([5]float64{0, 0, 0, 1e12, 1e12}), ok, false, "box 0: adaptive sampling grid"},
		{"no pixels", rangeTensor(1, 1, 0, 4), testBoxes, ok, true, "has no pixels"},
		{"float32 scale overflow", toFloat32(x4), toFloat32(testBoxes), gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: 1e39}, true, "SpatialScale 1e+39 does not fit in float32"},
		{"huge sampling ratio", x4, testBoxes, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 1 << 30}, true, "SamplingRatio 1073741824 gives more than 2^24 samples"},
		{"huge output size", x4, testBoxes, gops.RoIAlignOpts{OutputSize: [2]int{1 << 30, 1 << 30}}, true, "more than 2^24 bins"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectOpError(t, c.x, c.b, c.build, c.want, roiAlignOp(c.opts))
		})
	}
}

// The transposed kernel checks boxes too: a bad box reached only through the
// gradient still gives an error, not an out-of-range write.
func TestRoIAlignGradientBadBox(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 4, 4), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	b := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithValue(boxesTensor([5]float64{3, 0, 0, 2, 2})))
	y := gorgonia.Must(gops.RoIAlign(x, b, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}}))
	gs, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), x)
	if err != nil {
		t.Fatal(err)
	}
	_ = gs
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err == nil || !strings.Contains(err.Error(), "batch index 3") {
		t.Fatalf("error %v", err)
	}
}

// Boxes whose size overflows to Inf give NaN sample points: no crash, no
// out-of-range read, zeros.
func TestRoIAlignOverflowingBox(t *testing.T) {
	b := boxesTensor([5]float64{0, -1e308, 0, 1e308, 1})
	y, dx, err := runRoIAlign(rangeTensor(1, 1, 4, 4), b, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	expectZeros(t, append(y, dx...))
}

// A bin of 270×240 adaptive samples is walked in several chunks: the average
// of a row-index image over a box inside it is the box's centre row, and the
// transpose spreads each upstream value with total weight 1.
func TestRoIAlignHugeBinInChunks(t *testing.T) {
	const h, w = 300, 300
	d := make([]float64, h*w)
	for i := range d {
		d[i] = float64(i / w)
	}
	x := tensor.New(tensor.WithShape(1, 1, h, w), tensor.WithBacking(d))
	b := boxesTensor([5]float64{0, 10, 20, 250, 290})
	y, dx, err := runRoIAlign(x, b, gops.RoIAlignOpts{OutputSize: [2]int{1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(y[0]-155) > 1e-9 {
		t.Fatalf("output %v, want 155", y[0])
	}
	var sum float64
	for _, v := range dx {
		sum += v
	}
	// runRoIAlign's upstream gradient is rangeTensor(1, 1, 1, 1) = sin(0.1).
	if want := math.Sin(0.1); math.Abs(sum-want) > 1e-9 {
		t.Fatalf("gradient sums to %v, want %v", sum, want)
	}
}
