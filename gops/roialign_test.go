package gops_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rangeTensor is a float64 tensor with smooth, distinct values.
func rangeTensor(shape ...int) *tensor.Dense {
	n := tensor.Shape(shape).TotalSize()
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Sin(0.37*float64(i)+0.1) + 0.05*float64(i%7)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

func boxesTensor(rows ...[5]float64) *tensor.Dense {
	d := make([]float64, 0, 5*len(rows))
	for _, r := range rows {
		d = append(d, r[:]...)
	}
	return tensor.New(tensor.WithShape(len(rows), 5), tensor.WithBacking(d))
}

func toFloat32(t *tensor.Dense) *tensor.Dense {
	src := t.Data().([]float64)
	d := make([]float32, len(src))
	for i, v := range src {
		d[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(t.Shape()...), tensor.WithBacking(d))
}

// testBoxes covers inside, partly outside, fully outside, tiny, degenerate
// and inverted boxes on both images of a [2, C, 5, 6] input.
var testBoxes = boxesTensor(
	[5]float64{0, 0.5, 0.5, 4.2, 3.7},
	[5]float64{1, -1.5, 1.0, 3.0, 6.5},
	[5]float64{1, 2.2, 0.3, 2.6, 0.9},
	[5]float64{0, 7.0, 6.0, 9.0, 8.0},
	[5]float64{0, 3.0, 2.0, 3.0, 4.5},
	[5]float64{1, 4.0, 3.0, 1.0, 0.5},
)

// cubeOfRoIAlign is (RoIAlign(sin(x), boxes))³: nonlinear, so derivatives of
// every order w.r.t. x are non-zero and pass through both RoIAlign kernels.
func cubeOfRoIAlign(opts gops.RoIAlignOpts) graphtest.Func {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		s, err := gorgonia.Sin(in[0])
		if err != nil {
			return nil, err
		}
		y, err := gops.RoIAlign(s, in[1], opts)
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(y)
	}
}

var roiAlignOptGrid = []struct {
	name string
	opts gops.RoIAlignOpts
}{
	{"aligned/adaptive", gops.RoIAlignOpts{OutputSize: [2]int{2, 3}, Aligned: true}},
	{"unaligned/sampling2", gops.RoIAlignOpts{OutputSize: [2]int{3, 2}, SamplingRatio: 2}},
	{"unaligned/scale0.5/adaptive", gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: 0.5, SamplingRatio: -1}},
}

func TestRoIAlignDerivativesOrder3(t *testing.T) {
	for _, c := range roiAlignOptGrid {
		t.Run(c.name, func(t *testing.T) {
			in := []*tensor.Dense{rangeTensor(2, 2, 5, 6), testBoxes}
			err := graphtest.Check(cubeOfRoIAlign(c.opts), in, graphtest.Options{Order: 3, Wrt: []int{0}, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRoIAlignTapeEqualsLisp(t *testing.T) {
	for _, c := range roiAlignOptGrid {
		for _, dt := range []string{"float64", "float32"} {
			t.Run(c.name+"/"+dt, func(t *testing.T) {
				checkVMs(t, cubeOfRoIAlign(c.opts), rangeTensor(2, 2, 5, 6), testBoxes, dt)
			})
		}
	}
}

// expectZeros fails the test unless every value is 0.
func expectZeros(t *testing.T, vals []float64) {
	t.Helper()
	for i, v := range vals {
		if v != 0 {
			t.Fatalf("value %d = %v, want 0", i, v)
		}
	}
}

func roiAlignOp(opts gops.RoIAlignOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIAlign(x, b, opts) }
}

// runRoIAlign evaluates RoIAlign and the input gradient of sum(y ⊙ gy) on a
// TapeMachine (runPool with RoIAlign as the op).
func runRoIAlign(x, boxes *tensor.Dense, opts gops.RoIAlignOpts) (y, dx []float64, err error) {
	return runPool(roiAlignOp(opts), x, boxes)
}

func values(v gorgonia.Value) []float64 {
	t := v.(tensor.Tensor)
	if t.Shape().TotalSize() == 0 {
		return []float64{}
	}
	switch d := t.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	}
	return nil
}

func TestRoIAlignDeterministic(t *testing.T) {
	opts := gops.RoIAlignOpts{OutputSize: [2]int{3, 3}, SamplingRatio: 0, Aligned: true}
	checkDeterministic(t, roiAlignOp(opts), rangeTensor(2, 8, 5, 6), testBoxes)
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
		{"NaN coordinate", x4, boxesTensor([5]float64{0, 0, math.NaN(), 1, 1}), ok, false, "box 0: coordinate 2 is NaN"},
		{"infinite coordinate", x4, boxesTensor([5]float64{1, 0, 0, math.Inf(1), 1}), ok, false, "box 0: coordinate 3 is +Inf"},
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
	gs, err := gops.Grad(gorgonia.Must(gorgonia.Sum(y)), x)
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

func TestRoIAlignBoxesNotDifferentiable(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 4, 4), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	b := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithValue(boxesTensor([5]float64{0, 0, 0, 2, 2})))
	y := gorgonia.Must(gops.RoIAlign(x, b, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}}))
	_, err := gops.Grad(gorgonia.Must(gorgonia.Sum(y)), b)
	if err == nil || !strings.Contains(err.Error(), "no gradient w.r.t. its input 1") {
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
