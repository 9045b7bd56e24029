package gops_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func roiPoolOp(opts gops.RoIPoolOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIPool(x, b, opts) }
}

// minSinGap is the smallest distance between two values of sin(x). When it
// is well above graphtest's step (1e-6), no finite difference moves a
// maximum of RoIPool(sin(x)) to another pixel, so RoIPool is smooth there
// and the numeric derivatives are valid.
func minSinGap(x *tensor.Dense) float64 {
	var s []float64
	for _, v := range x.Data().([]float64) {
		s = append(s, math.Sin(v))
	}
	slices.Sort(s)
	gap := math.Inf(1)
	for i := 1; i < len(s); i++ {
		gap = min(gap, s[i]-s[i-1])
	}
	return gap
}

// TestRoIPoolConformanceInputSeparated guards the conformance table's
// RoIPool rows, which check cube(RoIPool(sin(x))) against finite
// differences: no two values of sin(x) may be closer than the steps.
func TestRoIPoolConformanceInputSeparated(t *testing.T) {
	for _, c := range conformanceCases() {
		if c.Op != "RoIPool" {
			continue
		}
		if gap := minSinGap(c.In[0]); gap < 1e-4 {
			t.Fatalf("%s: sin(x) has two values %.3g apart: finite differences could switch a maximum", c.Name, gap)
		}
	}
}

var roiPoolOptGrid = []struct {
	name string
	opts gops.RoIPoolOpts
}{
	{"out=2x3/scale=1", gops.RoIPoolOpts{OutputSize: [2]int{2, 3}}},
	{"out=3x2/scale=0.5", gops.RoIPoolOpts{OutputSize: [2]int{3, 2}, SpatialScale: 0.5}},
	{"out=1x1/scale=1", gops.RoIPoolOpts{OutputSize: [2]int{1, 1}}},
}

// One 1×1×4×4 plane, pooled by a box of the whole plane into 2×2 bins.
func runRoIPoolPlane(t *testing.T, plane []float64, boxes *tensor.Dense, size [2]int) (y, dx []float64) {
	t.Helper()
	x := tensor.New(tensor.WithShape(1, 1, 4, 4), tensor.WithBacking(plane))
	y, dx, err := runPool(roiPoolOp(gops.RoIPoolOpts{OutputSize: size}), x, boxes)
	if err != nil {
		t.Fatal(err)
	}
	return y, dx
}

func TestRoIPoolTiesFirstMaximumWins(t *testing.T) {
	plane := []float64{
		1, 3, 3, 2,
		3, 0, 2, 2,
		0, 5, 5, 1,
		5, 5, 4, 1,
	}
	y, dx := runRoIPoolPlane(t, plane, boxesTensor([5]float64{0, 0, 0, 3, 3}), [2]int{2, 2})
	if !slices.Equal(y, []float64{3, 3, 5, 5}) {
		t.Fatalf("output %v", y)
	}
	// runPool's upstream gradient is rangeTensor(1, 1, 2, 2); each bin's goes
	// to its first maximum in row-major order.
	gy := values(rangeTensor(1, 1, 2, 2))
	want := make([]float64, 16)
	want[1], want[2], want[9], want[10] = gy[0], gy[1], gy[2], gy[3]
	if !slices.Equal(dx, want) {
		t.Fatalf("gradient %v, want %v", dx, want)
	}
}

// Bins that lie outside the input give 0 and no gradient.
func TestRoIPoolEmptyBins(t *testing.T) {
	plane := make([]float64, 16)
	for i := range plane {
		plane[i] = float64(i) - 20 // all negative: an empty bin's 0 is not a maximum
	}
	// Columns 2..7 after rounding: the right bin covers columns 5..7, all
	// outside the 4-wide plane.
	y, dx := runRoIPoolPlane(t, plane, boxesTensor([5]float64{0, 2, 0, 7, 3}), [2]int{1, 2})
	if !slices.Equal(y, []float64{-5, 0}) {
		t.Fatalf("output %v, want [-5 0]", y)
	}
	gy := values(rangeTensor(1, 1, 1, 2))
	for i, v := range dx {
		if want := map[bool]float64{true: gy[0], false: 0}[i == 15]; v != want {
			t.Fatalf("grad[%d] = %v, want %v", i, v, want)
		}
	}
}

// A NaN in a bin propagates (the first NaN wins); torchvision skips it.
func TestRoIPoolNaNPropagates(t *testing.T) {
	plane := []float64{
		1, math.NaN(), 7, 2,
		3, 0, math.NaN(), 2,
		0, 5, 5, 1,
		5, 5, 4, 1,
	}
	checkPlaneBin(t, plane, math.IsNaN, "NaN", 1)
}

// checkPlaneBin pools the 4×4 plane into one bin over all of it and fails
// unless the output is want (is tells) with the gradient on element at
// only.
func checkPlaneBin(t *testing.T, plane []float64, is func(float64) bool, want string, at int) {
	t.Helper()
	y, dx := runRoIPoolPlane(t, plane, boxesTensor([5]float64{0, 0, 0, 3, 3}), [2]int{1, 1})
	if !is(y[0]) {
		t.Fatalf("output %v, want %s", y, want)
	}
	for i, v := range dx {
		if (v != 0) != (i == at) {
			t.Fatalf("gradient %v: want it on element %d only", dx, at)
		}
	}
}

// A bin of -Inf gives -Inf, with the gradient on its first element;
// torchvision gives -FLT_MAX and no gradient.
func TestRoIPoolAllNegativeInfinity(t *testing.T) {
	plane := make([]float64, 16)
	for i := range plane {
		plane[i] = math.Inf(-1)
	}
	checkPlaneBin(t, plane, func(v float64) bool { return math.IsInf(v, -1) }, "-Inf", 0)
}

// C's round, half away from zero: at scale 0.5 the box (0.5·2, 2.5·2, ...)
// has feature coordinates 0.5 and 2.5, which round to 1 and 3 (Go's
// math.RoundToEven and Python's round give 0 and 2).
func TestRoIPoolRoundsHalfAwayFromZero(t *testing.T) {
	plane := make([]float64, 16)
	for i := range plane {
		plane[i] = float64(i)
	}
	x := tensor.New(tensor.WithShape(1, 1, 4, 4), tensor.WithBacking(plane))
	// Rows and columns 1..3 (size 3 - 1 + 1), one pixel a bin; rounding
	// half to even would give rows and columns 0..2.
	y, _, err := runPool(roiPoolOp(gops.RoIPoolOpts{OutputSize: [2]int{3, 3}, SpatialScale: 0.5}),
		x, boxesTensor([5]float64{0, 1, 1, 5, 5}))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{5, 6, 7, 9, 10, 11, 13, 14, 15}
	if !slices.Equal(y, want) {
		t.Fatalf("output %v, want %v", y, want)
	}
	// Negative halves round away from zero too: -0.5 -> -1.
	y, _, err = runPool(roiPoolOp(gops.RoIPoolOpts{OutputSize: [2]int{1, 1}, SpatialScale: 0.5}),
		x, boxesTensor([5]float64{0, -1, -1, -1, -1}))
	if err != nil {
		t.Fatal(err)
	}
	// roi = [-1, -1] (size 1): the bin [-1, 0) is clipped to nothing.
	if !slices.Equal(y, []float64{0}) {
		t.Fatalf("box at -0.5: output %v, want [0] (an empty bin)", y)
	}
}

// RoIPool and PSRoIPool round box coordinates: piecewise constant in
// boxes, whose gradient is therefore zero. PSRoIAlign is not constant in
// boxes: its box gradient is not zero (TestPSRoIAlignBoxGradients checks it).
func TestPoolBoxesGradient(t *testing.T) {
	ops := []struct {
		name string
		op   poolOp
		zero bool
	}{
		{"RoIPool", roiPoolOp(gops.RoIPoolOpts{OutputSize: [2]int{2, 2}}), true},
		{"PSRoIPool", func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}})
		}, true},
		{"PSRoIAlign", func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}})
		}, false},
	}
	for _, c := range ops {
		t.Run(c.name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 4, 4, 4), gorgonia.WithInit(gorgonia.RangedFrom(0)))
			b := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithValue(boxesTensor([5]float64{0, 0.3, 0.2, 2.6, 2.7})))
			y := gorgonia.Must(c.op(x, b))
			gb, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y)))), b)
			if err != nil {
				t.Fatal(err)
			}
			vals, err := graphtest.Eval(g, gb[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := vals[0]; slices.Equal(got, make([]float64, 5)) != c.zero {
				t.Fatalf("boxes gradient %v, want zeros: %t", got, c.zero)
			}
		})
	}
}

func TestRoIPoolBadInput(t *testing.T) {
	runBadInput(t, func(x, b *gorgonia.Node, size [2]int, scale float64) (*gorgonia.Node, error) {
		return gops.RoIPool(x, b, gops.RoIPoolOpts{OutputSize: size, SpatialScale: scale})
	}, commonBadInput("RoIPool"))
}

// Huge but finite boxes are clamped, not overflowed: the whole plane.
func TestRoIPoolHugeBox(t *testing.T) {
	plane := make([]float64, 16)
	for i := range plane {
		plane[i] = float64(i)
	}
	y, _ := runRoIPoolPlane(t, plane, boxesTensor([5]float64{0, -1e300, -1e300, 1e300, 1e300}), [2]int{1, 1})
	if !slices.Equal(y, []float64{15}) {
		t.Fatalf("output %v, want [15]", y)
	}
}

func TestRoIPoolGolden(t *testing.T) {
	checkPoolGolden(t, "roipool_golden.json.gz", goldenRoIPool, nil)
}
