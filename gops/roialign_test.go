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

// smoothBoxes lie on a [2, C, 6, 7] input (scale 1) so that no sample point
// of roiAlignBoxGrid is near an integer, 0, −1 or the last row or column
// and no adaptive grid size is near a step: finite differences see no kink.
// They cover a box inside, one reaching left of the image (its samples
// with x < 0 are clamped: zero x-derivative there), one whose unaligned
// height and width are clamped to 1, and one on the other image.
var smoothBoxes = boxesTensor(smoothBoxRows...)

var smoothBoxRows = [][5]float64{
	{0, 1.13, 0.87, 5.41, 4.29},
	{1, -0.63, 1.19, 2.47, 3.77},
	{1, 2.37, 2.21, 2.83, 2.66},
	{0, 0.71, 1.37, 3.93, 4.61},
}

// boxLists are smoothBoxes' coordinates per image, times s (for
// SpatialScale 1/s): BoxesToRoIs makes them RoI rows, so that finite
// differences never touch a batch index.
func boxLists(s float64) []*tensor.Dense { return roisToLists(smoothBoxes, s) }

// roisToLists splits RoI rows [K, 5] on two images into per-image box lists
// [Li, 4], coordinates times s.
func roisToLists(rois *tensor.Dense, s float64) []*tensor.Dense {
	d := rois.Data().([]float64)
	var per [2][]float64
	for k := 0; k < len(d)/5; k++ {
		for _, v := range d[5*k+1 : 5*k+5] {
			per[int(d[5*k])] = append(per[int(d[5*k])], v*s)
		}
	}
	return []*tensor.Dense{
		tensor.New(tensor.WithShape(len(per[0])/4, 4), tensor.WithBacking(per[0])),
		tensor.New(tensor.WithShape(len(per[1])/4, 4), tensor.WithBacking(per[1])),
	}
}

// roiAlignBoxCases are RoIAlign's configurations for the box gradients.
var roiAlignBoxCases = []struct {
	name  string
	opts  gops.RoIAlignOpts
	scale float64 // box coordinates multiplied by
}{
	{"aligned/adaptive", gops.RoIAlignOpts{OutputSize: [2]int{2, 3}, Aligned: true}, 1},
	{"unaligned/sampling2", gops.RoIAlignOpts{OutputSize: [2]int{3, 2}, SamplingRatio: 2}, 1},
	{"unaligned/scale0.5/adaptive", gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SpatialScale: 0.5}, 2},
	{"aligned/scale0.25/sampling3", gops.RoIAlignOpts{OutputSize: [2]int{1, 2}, SpatialScale: 0.25, SamplingRatio: 3, Aligned: true}, 4},
}

// roiAlignOfLists is cube(RoIAlign(sin(x), BoxesToRoIs(b0, b1))).
func roiAlignOfLists(opts gops.RoIAlignOpts) graphtest.Func { return poolOfLists(roiAlignOp(opts)) }

// poolOfLists is cube(op(sin(x), BoxesToRoIs(b0, b1))).
func poolOfLists(op poolOp) graphtest.Func {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		rois, err := gops.BoxesToRoIs(in[1:])
		if err != nil {
			return nil, err
		}
		return cubeOfSinPool(op)(gorgonia.Nodes{in[0], rois})
	}
}

// checkBoxGradients: orders 1–3 of f w.r.t. the box lists in[1:] alone and
// together with the input in[0] (mixed terms), against finite differences;
// the two VMs agree; value and gradients are bitwise the same for any
// GOMAXPROCS.
func checkBoxGradients(t *testing.T, f graphtest.Func, in []*tensor.Dense, seed uint64) {
	t.Helper()
	if err := graphtest.Check(f, in, graphtest.Options{Order: 3, Wrt: []int{1, 2}, Seed: seed}); err != nil {
		t.Fatal("boxes:", err)
	}
	if err := graphtest.Check(f, in, graphtest.Options{Order: 3, Wrt: []int{0, 1, 2}, Seed: seed + 10}); err != nil {
		t.Fatal("input and boxes:", err)
	}
	if err := graphtest.CheckVMs(f, in, graphtest.Options{}); err != nil {
		t.Fatal("vms/float64:", err)
	}
	if err := graphtest.CheckVMs(f, graphtest.Float32(in), graphtest.Options{RTol: 1e-5, ATol: 1e-5}); err != nil {
		t.Fatal("vms/float32:", err)
	}
	if err := graphtest.CheckDeterministic(f, graphtest.Float32(in), []int{0, 1, 2}, 1, 2, 3, 8); err != nil {
		t.Fatal("deterministic:", err)
	}
}

// TestRoIAlignBoxGradients: orders 1–3 w.r.t. the boxes alone and w.r.t.
// input and boxes together (mixed terms), against finite differences; the
// two VMs agree; value and gradients are bitwise the same for any
// GOMAXPROCS.
func TestRoIAlignBoxGradients(t *testing.T) {
	for i, c := range roiAlignBoxCases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]*tensor.Dense{rangeTensor(2, 2, 6, 7)}, boxLists(c.scale)...)
			checkBoxGradients(t, roiAlignOfLists(c.opts), in, uint64(i+1))
		})
	}
}

// TestRoIAlignBoxGradientBatchColumn: checkBoxGradientBatchColumn.
func TestRoIAlignBoxGradientBatchColumn(t *testing.T) {
	checkBoxGradientBatchColumn(t, roiAlignOp(gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2}), rangeTensor(2, 2, 6, 7), smoothBoxes)
}

// TestRoIAlignBoxGradientEmpty: checkBoxGradientEmpty.
func TestRoIAlignBoxGradientEmpty(t *testing.T) {
	checkBoxGradientEmpty(t, roiAlignOp(gops.RoIAlignOpts{OutputSize: [2]int{2, 2}}), rangeTensor(2, 2, 6, 7))
}

// checkBoxGradientBatchColumn: the input gradient alone builds no
// box-derivative member; the batch-index column gets a zero gradient, the
// coordinates do not.
func checkBoxGradientBatchColumn(t *testing.T, op poolOp, x, boxes *tensor.Dense) {
	t.Helper()
	g, in := graphtest.Inputs([]*tensor.Dense{x, boxes})
	cost := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(gorgonia.Must(op(in[0], in[1]))))))
	if _, err := ad.Grad(cost, in[0]); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.AllNodes() {
		if n.Op() != nil && strings.Contains(n.Op().String(), "BoxDeriv") {
			t.Fatalf("node %v built for an input gradient", n.Op())
		}
	}
	gs, err := ad.Grad(cost, in[1])
	if err != nil {
		t.Fatal(err)
	}
	out, err := graphtest.Eval(g, gs[0])
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < boxes.Shape()[0]; k++ {
		row := out[0][5*k : 5*k+5]
		if row[0] != 0 {
			t.Errorf("box %d: batch column gradient %v", k, row[0])
		}
		if row[2] == 0 && row[4] == 0 || row[1] == 0 && row[3] == 0 {
			t.Errorf("box %d: zero coordinate gradient %v", k, row)
		}
	}
}

// checkBoxGradientEmpty: K = 0 gives an empty box gradient and a zero
// input gradient.
func checkBoxGradientEmpty(t *testing.T, op poolOp, x *tensor.Dense) {
	t.Helper()
	empty := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 5))
	g, in := graphtest.Inputs([]*tensor.Dense{x, empty})
	gs, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(op(in[0], in[1])))), in[0], in[1])
	if err != nil {
		t.Fatal(err)
	}
	out, err := graphtest.Eval(g, gs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(out[1]) != 0 {
		t.Fatalf("box gradient %v", out[1])
	}
	for _, v := range out[0] {
		if v != 0 || math.IsNaN(v) {
			t.Fatalf("input gradient %v", out[0])
		}
	}
}
