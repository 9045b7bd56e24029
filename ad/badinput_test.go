package ad_test

import (
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Constant copies views (whose Data() is the parent's elements) and turns a
// 0-d tensor into a scalar that Gorgonia's scalar ops take.
func TestConstantViewsAndScalars(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("x"), gorgonia.WithValue(1.0))
	a := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4}))
	at := a.Clone().(*tensor.Dense)
	if err := at.T(); err != nil {
		t.Fatal(err)
	}
	col, err := a.Slice(nil, gorgonia.S(1))
	if err != nil {
		t.Fatal(err)
	}
	na, nat := gorgonia.Must(ad.Constant(g, a)), gorgonia.Must(ad.Constant(g, at))
	ncol := gorgonia.Must(ad.Constant(g, col))
	zeroD := gorgonia.Must(ad.Constant(g, tensor.New(tensor.FromScalar(2.0))))
	if na == nat {
		t.Fatal("a matrix and its transpose share a constant node")
	}
	got, err := graphtest.Eval(g, nat, ncol, gorgonia.Must(gorgonia.Add(zeroD, x)))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]float64{{1, 3, 2, 4}, {2, 4}, {3}} {
		if !equal(got[i], want) {
			t.Errorf("constant %d evaluates to %v, want %v", i, got[i], want)
		}
	}
	if _, err := ad.Constant(g, nil); err == nil {
		t.Error("Constant(g, nil) gave no error")
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Odd specs and inputs give errors that name the op and the problem.
func TestBadSpecsAndInputs(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(6), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	iv := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3), gorgonia.WithName("iv"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	if _, err := ad.Reshape(x, -2, -3); err == nil || !strings.Contains(err.Error(), "cannot reshape (6) (6 elements) to (-2, -3)") {
		t.Errorf("Reshape to negative sizes: %v", err)
	}
	if _, err := ad.Reshape(x, 4); err == nil || !strings.Contains(err.Error(), "cannot reshape (6) (6 elements) to (4)") {
		t.Errorf("Reshape to another size: %v", err)
	}
	if _, err := ad.Reshape(nil, 4); err == nil {
		t.Error("Reshape(nil) gave no error")
	}
	if _, err := ad.VJP(iv, iv, iv); err == nil || !strings.Contains(err.Error(), "output dtype int is not float32 or float64") {
		t.Errorf("VJP of an int node: %v", err)
	}
	negative := ad.OpSpec{
		Name: "Negative", InputDims: []int{1}, OutputDims: 1,
		Shape:   func([]tensor.Shape) (tensor.Shape, error) { return tensor.Shape{-3}, nil },
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) { return in[0], nil },
	}
	if _, err := ad.Apply(negative, x); err == nil || !strings.Contains(err.Error(), "Negative: Shape returned (-3), a negative size") {
		t.Errorf("negative Shape: %v", err)
	}
	tensorForScalar := ad.OpSpec{
		Name: "TensorForScalar", InputDims: []int{1}, OutputDims: 0,
		Shape: func([]tensor.Shape) (tensor.Shape, error) { return tensor.ScalarShape(), nil },
		Forward: func([]gorgonia.Value) (gorgonia.Value, error) {
			return tensor.New(tensor.WithShape(1, 1), tensor.WithBacking([]float64{3})), nil
		},
	}
	y := gorgonia.Must(ad.Apply(tensorForScalar, x))
	if _, err := graphtest.Eval(g, y); err == nil || !strings.Contains(err.Error(), "TensorForScalar: Forward returned a tensor of shape (1, 1), Shape says a scalar") {
		t.Errorf("a tensor for a scalar: %v", err)
	}
}

func firstInt[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	out.Ints[0] = int(in[0].Data[0]) + 6
	return nil
}

// A Kernel with a scalar Int result.
func TestKernelIntScalar(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	y, err := ad.Apply(ad.OpSpec{
		Name: "IntScalar", InputDims: []int{1}, OutputDims: 0, OutputDtype: tensor.Int,
		Shape:  func([]tensor.Shape) (tensor.Shape, error) { return tensor.ScalarShape(), nil },
		Kernel: ad.Floats(firstInt[float32], firstInt[float64]),
	}, x)
	if err != nil {
		t.Fatal(err)
	}
	var v gorgonia.Value
	gorgonia.Read(y, &v)
	if _, err := graphtest.Eval(g, x); err != nil {
		t.Fatal(err)
	}
	if got, ok := v.Data().(int); !ok || got != 7 {
		t.Fatalf("IntScalar = %v (%T), want 7", v.Data(), v.Data())
	}
}

// LinearPair refuses a pair whose first input is declared not
// differentiable, and a kept Backward that returns too few gradients.
func TestLinearPairMisuse(t *testing.T) {
	f, ft := gatherPair(4, 6)
	f.DiffWRT = []bool{false, false}
	pf, _ := ad.LinearPair(f, ft)
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(4), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	ix := gorgonia.Must(ad.Constant(g, tensor.New(tensor.WithShape(6), tensor.WithBacking([]int{0, 1, 2, 3, 0, 1}))))
	// DiffWRT false for x: Grad treats the op as constant; its Backward,
	// asked directly, says why the pair is wrong.
	y := gorgonia.Must(ad.Apply(pf, x, ix))
	if _, err := pf.Backward(gorgonia.Nodes{x, ix}, y, y); err == nil || !strings.Contains(err.Error(), "DiffWRT excludes the first input") {
		t.Errorf("DiffWRT excluding x: %v", err)
	}
	f, ft = gatherPair(4, 6)
	f.Backward = func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
		return gorgonia.Nodes{nil}, nil
	}
	pf, _ = ad.LinearPair(f, ft)
	g = gorgonia.NewGraph() // an op of the same Name and Params must compute the same: a new graph
	x = gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(4), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	ix = gorgonia.Must(ad.Constant(g, tensor.New(tensor.WithShape(6), tensor.WithBacking([]int{0, 1, 2, 3, 0, 1}))))
	y = gorgonia.Must(ad.Apply(pf, x, ix))
	if _, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), x); err == nil || !strings.Contains(err.Error(), "Backward returned 1 gradients for 2 inputs") {
		t.Errorf("short Backward: %v", err)
	}
}
