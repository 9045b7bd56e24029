package gops_test

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// poolOp builds one of the pooling ops on (input, boxes).
type poolOp func(x, boxes *gorgonia.Node) (*gorgonia.Node, error)

func roiPoolOp(opts gops.RoIPoolOpts) poolOp {
	return func(x, b *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIPool(x, b, opts) }
}

// cubeOfSinPool is (op(sin(x), boxes))³: nonlinear before and after the
// op, so derivatives of every order w.r.t. x are non-zero and pass through
// every kernel of the op's family.
func cubeOfSinPool(op poolOp) graphtest.Func {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		s, err := gorgonia.Sin(in[0])
		if err != nil {
			return nil, err
		}
		y, err := op(s, in[1])
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(y)
	}
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

var roiPoolOptGrid = []struct {
	name string
	opts gops.RoIPoolOpts
}{
	{"out=2x3/scale=1", gops.RoIPoolOpts{OutputSize: [2]int{2, 3}}},
	{"out=3x2/scale=0.5", gops.RoIPoolOpts{OutputSize: [2]int{3, 2}, SpatialScale: 0.5}},
	{"out=1x1/scale=1", gops.RoIPoolOpts{OutputSize: [2]int{1, 1}}},
}

func TestRoIPoolDerivativesOrder3(t *testing.T) {
	x := rangeTensor(2, 2, 5, 6)
	if gap := minSinGap(x); gap < 1e-4 {
		t.Fatalf("sin(x) has two values %.3g apart: finite differences could switch a maximum", gap)
	}
	for _, c := range roiPoolOptGrid {
		t.Run(c.name, func(t *testing.T) {
			in := []*tensor.Dense{x, testBoxes}
			err := graphtest.Check(cubeOfSinPool(roiPoolOp(c.opts)), in, graphtest.Options{Order: 3, Wrt: []int{0}, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRoIPoolTapeEqualsLisp(t *testing.T) {
	for _, c := range roiPoolOptGrid {
		for _, dt := range []string{"float64", "float32"} {
			t.Run(c.name+"/"+dt, func(t *testing.T) {
				checkVMs(t, cubeOfSinPool(roiPoolOp(c.opts)), rangeTensor(2, 2, 5, 6), testBoxes, dt)
			})
		}
	}
}

// checkVMs runs graphtest.CheckVMs on f(x, boxes) in dtype dt.
func checkVMs(t *testing.T, f graphtest.Func, x, boxes *tensor.Dense, dt string) {
	t.Helper()
	in := []*tensor.Dense{x, boxes}
	o := graphtest.Options{Wrt: []int{0}, RTol: 1e-12, ATol: 1e-12}
	if dt == "float32" {
		in = []*tensor.Dense{toFloat32(x), toFloat32(boxes)}
		o.RTol, o.ATol = 1e-6, 1e-6
	}
	if err := graphtest.CheckVMs(f, in, o); err != nil {
		t.Fatal(err)
	}
}

// runPool evaluates op and the input gradient of sum(y ⊙ gy) on a
// TapeMachine (Sum(y) alone when y is empty: Gorgonia's elementwise ops
// panic on empty tensors, and its LispMachine panics even in Sum's backward).
func runPool(op poolOp, x, boxes *tensor.Dense) (y, dx []float64, err error) {
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, x.Dtype(), 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x), gorgonia.WithName("x"))
	bn := gorgonia.NewTensor(g, boxes.Dtype(), 2, gorgonia.WithShape(boxes.Shape()...), gorgonia.WithValue(boxes), gorgonia.WithName("boxes"))
	yn, err := op(xn, bn)
	if err != nil {
		return nil, nil, err
	}
	var cost *gorgonia.Node
	if yn.Shape().TotalSize() == 0 {
		cost, err = gorgonia.Sum(yn)
	} else {
		gy := rangeTensor(yn.Shape()...)
		if x.Dtype() == tensor.Float32 {
			gy = toFloat32(gy)
		}
		cost, err = gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(yn, g.Constant(gy))))
	}
	if err != nil {
		return nil, nil, err
	}
	grads, err := gops.Grad(cost, xn)
	if err != nil {
		return nil, nil, err
	}
	got, err := evalNodes(g, yn, grads[0])
	if err != nil {
		return nil, nil, err
	}
	return got[0], got[1], nil
}

// evalNodes runs g on a TapeMachine and returns the values of nodes.
func evalNodes(g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) ([][]float64, error) {
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, err
	}
	out := make([][]float64, len(vals))
	for i, v := range vals {
		out[i] = values(v)
	}
	return out, nil
}

// checkDeterministic runs op in float32 at several GOMAXPROCS and requires
// bitwise equal outputs and gradients.
func checkDeterministic(t *testing.T, op poolOp, x, boxes *tensor.Dense) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var refY, refDX []float64
	for i, procs := range []int{1, 2, 3, 8, 1} {
		runtime.GOMAXPROCS(procs)
		y, dx, err := runPool(op, toFloat32(x), toFloat32(boxes))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			refY, refDX = y, dx
			continue
		}
		for j := range y {
			if math.Float64bits(y[j]) != math.Float64bits(refY[j]) {
				t.Fatalf("GOMAXPROCS=%d: output[%d] %v != %v", procs, j, y[j], refY[j])
			}
		}
		for j := range dx {
			if math.Float64bits(dx[j]) != math.Float64bits(refDX[j]) {
				t.Fatalf("GOMAXPROCS=%d: grad[%d] %v != %v", procs, j, dx[j], refDX[j])
			}
		}
	}
}

// manyBoxes overlap on both images of a [2, C, 5, 6] input, so that
// several boxes scatter into the same pixels.
var manyBoxes = boxesTensor(
	[5]float64{0, 0.5, 0.5, 4.2, 3.7},
	[5]float64{1, -1.5, 1.0, 3.0, 6.5},
	[5]float64{0, 0, 0, 5, 4},
	[5]float64{1, 1, 1, 4, 3},
	[5]float64{0, 2, 1, 6, 5},
	[5]float64{1, 0, 0, 2.5, 2.5},
	[5]float64{0, 1.5, 0.5, 3.5, 4.5},
)

func TestRoIPoolDeterministic(t *testing.T) {
	checkDeterministic(t, roiPoolOp(gops.RoIPoolOpts{OutputSize: [2]int{2, 2}}), rangeTensor(2, 8, 5, 6), manyBoxes)
}

// K = 0 boxes: an empty result and a zero gradient, for every RoI op.
func TestPoolNoBoxes(t *testing.T) {
	ops := map[string]poolOp{
		"RoIAlign":   roiAlignOp(gops.RoIAlignOpts{OutputSize: [2]int{2, 2}}),
		"RoIPool":    roiPoolOp(gops.RoIPoolOpts{OutputSize: [2]int{2, 2}}),
		"PSRoIAlign": psRoIAlignOp(gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}}),
		"PSRoIPool":  psRoIPoolOp(gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}}),
	}
	for name, op := range ops {
		for _, dt := range []string{"float64", "float32"} {
			t.Run(name+"/"+dt, func(t *testing.T) {
				x, b := rangeTensor(2, 8, 5, 6), tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0, 5))
				if dt == "float32" {
					x, b = toFloat32(x), tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(0, 5))
				}
				y, dx, err := runPool(op, x, b)
				if err != nil {
					t.Fatal(err)
				}
				if len(y) != 0 {
					t.Fatalf("%d outputs, want 0", len(y))
				}
				if len(dx) != 2*8*5*6 {
					t.Fatalf("gradient has %d values", len(dx))
				}
				expectZeros(t, dx)
			})
		}
	}
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
	y, dx := runRoIPoolPlane(t, plane, boxesTensor([5]float64{0, 0, 0, 3, 3}), [2]int{1, 1})
	if !math.IsNaN(y[0]) {
		t.Fatalf("output %v, want NaN", y)
	}
	for i, v := range dx {
		if (v != 0) != (i == 1) {
			t.Fatalf("gradient %v: want it on element 1 only", dx)
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
	y, dx := runRoIPoolPlane(t, plane, boxesTensor([5]float64{0, 0, 0, 3, 3}), [2]int{1, 1})
	if !math.IsInf(y[0], -1) {
		t.Fatalf("output %v, want -Inf", y)
	}
	for i, v := range dx {
		if (v != 0) != (i == 0) {
			t.Fatalf("gradient %v: want it on element 0 only", dx)
		}
	}
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
// boxes, and Grad reports the missing gradient, as for RoIAlign.
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
			gb, err := gops.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y)))), b)
			if !c.zero {
				if err == nil || !strings.Contains(err.Error(), "no gradient w.r.t. its input 1") {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			vals, err := evalNodes(g, gb[0])
			if err != nil {
				t.Fatal(err)
			}
			if got := vals[0]; !slices.Equal(got, make([]float64, 5)) {
				t.Fatalf("boxes gradient %v, want zeros", got)
			}
		})
	}
}

// poolBuild builds a pooling op with the given output size and scale.
type poolBuild func(x, b *gorgonia.Node, size [2]int, scale float64) (*gorgonia.Node, error)

type badInputCase struct {
	name  string
	x, b  *tensor.Dense
	size  [2]int
	scale float64
	build bool // error when the node is built (else when it runs)
	want  string
}

// commonBadInput are the bad inputs every RoI op rejects, input [2, 8, 5, 6].
func commonBadInput(opName string) []badInputCase {
	ok := [2]int{2, 2}
	x4 := rangeTensor(2, 8, 5, 6)
	return []badInputCase{
		{"input rank", rangeTensor(8, 5, 6), testBoxes, ok, 0, true, "input must have rank 4"},
		{"boxes rank", x4, rangeTensor(30), ok, 0, true, "boxes must have rank 2"},
		{"boxes columns", x4, rangeTensor(3, 4), ok, 0, true, "boxes must be [K, 5]"},
		{"dtype mismatch", x4, toFloat32(testBoxes), ok, 0, true, "boxes dtype float32 differs from input dtype float64"},
		{"int input", tensor.New(tensor.WithShape(1, 4, 2, 2), tensor.WithBacking(make([]int, 16))), testBoxes, ok, 0, true, "input dtype int"},
		{"no rows", rangeTensor(2, 8, 0, 6), testBoxes, ok, 0, true, "has no pixels"},
		{"no columns", rangeTensor(2, 8, 5, 0), testBoxes, ok, 0, true, "has no pixels"},
		{"output size zero", x4, testBoxes, [2]int{0, 2}, 0, true, "OutputSize [0 2] must be positive"},
		{"output size negative", x4, testBoxes, [2]int{2, -1}, 0, true, "OutputSize [2 -1] must be positive"},
		{"output size huge", x4, testBoxes, [2]int{5000, 5000}, 0, true, "OutputSize [5000 5000] has more than 2^24 bins"},
		{"negative scale", x4, testBoxes, ok, -0.5, true, "SpatialScale -0.5"},
		{"NaN scale", x4, testBoxes, ok, math.NaN(), true, "SpatialScale NaN"},
		{"infinite scale", x4, testBoxes, ok, math.Inf(1), true, "SpatialScale +Inf"},
		{"batch index too large", x4, boxesTensor([5]float64{0, 0, 0, 1, 1}, [5]float64{2, 0, 0, 1, 1}), ok, 0, false, opName + ": box 1: batch index 2 is not an integer in [0, 2)"},
		{"negative batch index", x4, boxesTensor([5]float64{-1, 0, 0, 1, 1}), ok, 0, false, "box 0: batch index -1"},
		{"fractional batch index", x4, boxesTensor([5]float64{0.5, 0, 0, 1, 1}), ok, 0, false, "box 0: batch index 0.5"},
		{"NaN batch index", x4, boxesTensor([5]float64{math.NaN(), 0, 0, 1, 1}), ok, 0, false, "box 0: batch index NaN"},
		{"NaN coordinate", x4, boxesTensor([5]float64{0, 0, math.NaN(), 1, 1}), ok, 0, false, "box 0: coordinate 2 is NaN"},
		{"infinite coordinate", x4, boxesTensor([5]float64{1, 0, 0, math.Inf(1), 1}), ok, 0, false, "box 0: coordinate 3 is +Inf"},
	}
}

func runBadInput(t *testing.T, build poolBuild, cases []badInputCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectOpError(t, c.x, c.b, c.build, c.want, func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
				return build(x, b, c.size, c.scale)
			})
		})
	}
}

// expectOpError builds op(x, boxes) and requires an error containing want:
// when the node is built (atBuild) or when it runs.
func expectOpError(t *testing.T, x, boxes *tensor.Dense, atBuild bool, want string, op poolOp) {
	t.Helper()
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, x.Dtype(), x.Dims(), gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x))
	bn := gorgonia.NewTensor(g, boxes.Dtype(), boxes.Dims(), gorgonia.WithShape(boxes.Shape()...), gorgonia.WithValue(boxes))
	y, err := op(xn, bn)
	if !atBuild {
		if err != nil {
			t.Fatalf("build: %v", err)
		}
		m := gorgonia.NewTapeMachine(g)
		defer m.Close()
		err = m.RunAll()
	} else if y != nil {
		t.Fatalf("got a node where a build error was expected")
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to contain %q", err, want)
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
