package gops_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Helpers shared by the tests of every op: inputs, boxes, and running an op
// with its gradient.

// poolOp builds one of the pooling ops on (input, boxes).
type poolOp func(x, boxes *gorgonia.Node) (*gorgonia.Node, error)

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

// expectZeros fails the test unless every value is 0.
func expectZeros(t *testing.T, vals []float64) {
	t.Helper()
	for i, v := range vals {
		if v != 0 {
			t.Fatalf("value %d = %v, want 0", i, v)
		}
	}
}

// values copies the elements of a tensor or scalar value (float32,
// float64, or int indices) as float64; an empty tensor gives none.
func values(v gorgonia.Value) []float64 {
	if out := graphtest.Floats(v); out != nil {
		return out
	}
	return []float64{}
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
		cost, err = gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(yn, gorgonia.Must(ad.Constant(g, gy)))))
	}
	if err != nil {
		return nil, nil, err
	}
	grads, err := ad.Grad(cost, xn)
	if err != nil {
		return nil, nil, err
	}
	got, err := graphtest.Eval(g, yn, grads[0])
	if err != nil {
		return nil, nil, err
	}
	return got[0], got[1], nil
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
		{"NaN coordinate", x4, boxesTensor([5]float64{0, 0, math.NaN(), 1, 1}), ok, 0, false, "box 0: coordinate 2 (y1) is NaN"},
		{"infinite coordinate", x4, boxesTensor([5]float64{1, 0, 0, math.Inf(1), 1}), ok, 0, false, "box 0: coordinate 3 (x2) is +Inf"},
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

// graphError is the error that a test of bad input expects from a graph g
// whose node y was built with error err: err itself where the error is
// expected at build (then y must be nil), else, where the build succeeded,
// the error of running g.
func graphError(t *testing.T, g *gorgonia.ExprGraph, y *gorgonia.Node, err error, atRun bool) error {
	t.Helper()
	if !atRun {
		if y != nil {
			t.Fatalf("got a node where a build error was expected")
		}
		return err
	}
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	return m.RunAll()
}

// expectOpError builds op(x, boxes) and requires an error containing want:
// when the node is built (atBuild) or when it runs.
func expectOpError(t *testing.T, x, boxes *tensor.Dense, atBuild bool, want string, op poolOp) {
	t.Helper()
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, x.Dtype(), x.Dims(), gorgonia.WithShape(x.Shape()...), gorgonia.WithValue(x))
	bn := gorgonia.NewTensor(g, boxes.Dtype(), boxes.Dims(), gorgonia.WithShape(boxes.Shape()...), gorgonia.WithValue(boxes))
	y, err := op(xn, bn)
	err = graphError(t, g, y, err, !atBuild)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to contain %q", err, want)
	}
}

// runRead evaluates nodes of g on a TapeMachine (graphtest.Eval), failing
// the test on an error.
func runRead(t *testing.T, g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) [][]float64 {
	t.Helper()
	out, err := graphtest.Eval(g, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// allFloat32 converts float64 tensors (empty ones included) to float32.
func allFloat32(in []*tensor.Dense) []*tensor.Dense { return graphtest.Float32(in) }

// inputNodes puts the values in into a new graph, named in0, in1, ...
func inputNodes(in []*tensor.Dense) (*gorgonia.ExprGraph, gorgonia.Nodes) {
	return graphtest.Inputs(in)
}

// checkDeterministic requires f's value and first-order gradients on in to
// be bitwise the same under each GOMAXPROCS of procs.
func checkDeterministic(t *testing.T, f graphtest.Func, in []*tensor.Dense, wrt []int, procs ...int) {
	t.Helper()
	if err := graphtest.CheckDeterministic(f, in, wrt, procs...); err != nil {
		t.Fatal(err)
	}
}

// checkEmpty requires the op on empty inputs (no boxes, or batch 0) to give
// an empty result and zero gradients of Sum(result) w.r.t. the inputs wrt.
func checkEmpty(t *testing.T, op graphtest.Func, in []*tensor.Dense, wrt []int) {
	t.Helper()
	if err := graphtest.CheckEmpty(op, in, wrt); err != nil {
		t.Fatal(err)
	}
}
