package ad_test

// Pinned facts about Gorgonia v0.9.18 at derivative orders 1-3
// (docs/GORGONIA.md; README.md summarizes it): which Gorgonia ops can be combined with gops'
// ops at higher orders when gradients come from ad.Grad, which upstream
// defects ad.Grad works around, and which upstream ops users must avoid.
// A test here that fails after a Gorgonia upgrade means a fact changed: read
// its message, then update docs/GORGONIA.md and this file.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// factsTensor is a float64 tensor of the given shape holding data.
func factsTensor(shape []int, data ...float64) *tensor.Dense {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

// factsWrap selects what is applied to an op's output before the check:
// the cube makes linear, bilinear and piecewise-linear ops have non-zero
// derivatives of order 2 and 3, as in docs/GORGONIA.md's method.
type factsWrap int

const (
	wrapNone factsWrap = iota
	wrapCube
)

type factsCase struct {
	name   string
	inputs []*tensor.Dense
	op     func(in gorgonia.Nodes) (*gorgonia.Node, error)
	wrap   factsWrap
}

func (c factsCase) f(in gorgonia.Nodes) (*gorgonia.Node, error) {
	y, err := c.op(in)
	if err != nil {
		return nil, err
	}
	if c.wrap == wrapCube {
		return gorgonia.Cube(y)
	}
	return y, nil
}

func runFactsCases(t *testing.T, cases []factsCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := graphtest.Check(c.f, c.inputs, graphtest.Options{Order: 3, Seed: 7}); err != nil {
				t.Fatalf("ad.Grad should be right at orders 1-3 for %s (docs/GORGONIA.md): %v", c.name, err)
			}
		})
	}
}

// Shared inputs: small, away from 0 where an op has a kink or a pole.
var (
	fA23  = []int{2, 3}
	fVecA = func() *tensor.Dense { return factsTensor(nil, 0.3, -0.7, 1.1) }
	fVecB = func() *tensor.Dense { return factsTensor(nil, 0.5, 0.2, -0.4) }
	fPosA = func() *tensor.Dense { return factsTensor(nil, 0.6, 1.3, 2.1) }
	fPosB = func() *tensor.Dense { return factsTensor(nil, 1.4, 0.8, 1.7) }
	fMatA = func() *tensor.Dense { return factsTensor(fA23, 0.3, -0.7, 1.1, 0.5, -0.2, 0.9) }
	fMatB = func() *tensor.Dense { return factsTensor(fA23, -0.4, 0.8, 0.6, 1.2, 0.1, -0.5) }
	// fKinked has entries of both signs, each at least 0.3 away from 0, and
	// rows whose largest entry is 0.6 or more above the others: Abs,
	// Rectify, LeakyRelu and Max stay away from their kinks.
	fKinked = func() *tensor.Dense { return factsTensor(fA23, 0.9, -0.6, 0.3, -1.2, 1.5, -0.3) }
)

func unary(op func(*gorgonia.Node) (*gorgonia.Node, error)) func(gorgonia.Nodes) (*gorgonia.Node, error) {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0]) }
}

func binary(op func(a, b *gorgonia.Node) (*gorgonia.Node, error)) func(gorgonia.Nodes) (*gorgonia.Node, error) {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0], in[1]) }
}

// TestGorgoniaFactsRightAtOrder3 pins docs/GORGONIA.md's list "Right at orders
// 1, 2, 3 (with a correct gradient function)".
func TestGorgoniaFactsRightAtOrder3(t *testing.T) {
	cases := []factsCase{
		{name: "Add", inputs: []*tensor.Dense{fMatA(), fMatB()}, op: binary(gorgonia.Add), wrap: wrapCube},
		{name: "Sub", inputs: []*tensor.Dense{fMatA(), fMatB()}, op: binary(gorgonia.Sub), wrap: wrapCube},
		{name: "HadamardProd", inputs: []*tensor.Dense{fMatA(), fMatB()}, op: binary(gorgonia.HadamardProd), wrap: wrapCube},
		{name: "HadamardProd_x_x", inputs: []*tensor.Dense{fVecA()}, op: func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.HadamardProd(in[0], in[0])
		}, wrap: wrapCube},
		{name: "HadamardDiv", inputs: []*tensor.Dense{fVecA(), fPosB()}, op: binary(gorgonia.HadamardDiv)},
		{name: "Mul_matrix_matrix", inputs: []*tensor.Dense{fMatA(), factsTensor([]int{3, 2}, 0.2, -0.9, 0.7, 0.4, -0.3, 1.0)}, op: binary(gorgonia.Mul), wrap: wrapCube},
		{name: "BatchedMatMul", inputs: []*tensor.Dense{
			factsTensor([]int{2, 2, 3}, 0.3, -0.7, 1.1, 0.5, -0.2, 0.9, -0.4, 0.8, 0.6, 1.2, 0.1, -0.5),
			factsTensor([]int{2, 3, 2}, 0.2, -0.9, 0.7, 0.4, -0.3, 1.0, 0.6, 0.1, -0.8, 0.5, 0.9, -0.2),
		}, op: binary(func(a, b *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.BatchedMatMul(a, b) }), wrap: wrapCube},
		{name: "BatchedMatMul_transposed", inputs: []*tensor.Dense{
			factsTensor([]int{2, 3, 2}, 0.3, -0.7, 1.1, 0.5, -0.2, 0.9, -0.4, 0.8, 0.6, 1.2, 0.1, -0.5),
			factsTensor([]int{2, 2, 3}, 0.2, -0.9, 0.7, 0.4, -0.3, 1.0, 0.6, 0.1, -0.8, 0.5, 0.9, -0.2),
		}, op: binary(func(a, b *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.BatchedMatMul(a, b, true, true) }), wrap: wrapCube},
		{name: "Mul_vector_vector", inputs: []*tensor.Dense{fVecA(), fVecB()}, op: binary(gorgonia.Mul), wrap: wrapCube},
		{name: "Mul_scalar_constant", inputs: []*tensor.Dense{fVecA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Mul(x, gorgonia.Must(ad.Constant(x.Graph(), gorgonia.NewF64(1.7))))
		}), wrap: wrapCube},
		{name: "Square", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Square), wrap: wrapCube},
		{name: "Cube", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Cube)},
		{name: "Sqrt", inputs: []*tensor.Dense{fPosA()}, op: unary(gorgonia.Sqrt)},
		{name: "Exp", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Exp)},
		{name: "Log", inputs: []*tensor.Dense{fPosA()}, op: unary(gorgonia.Log)},
		{name: "Sin", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Sin)},
		{name: "Cos", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Cos)},
		{name: "Tanh", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Tanh)},
		{name: "Sigmoid", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Sigmoid)},
		{name: "Neg", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Neg), wrap: wrapCube},
		{name: "Sum_axis1", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Sum(x, 1) }), wrap: wrapCube},
		{name: "Norm_axis1", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Norm(x, 1, 2) })},
		// Sin, not the cube: Cube(Reshape(x)) of an input x overwrites x on
		// the TapeMachine (TestGorgoniaFactsReshapeOfInputOverwritten).
		{name: "Reshape", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			r, err := gorgonia.Reshape(x, tensor.Shape{3, 2})
			if err != nil {
				return nil, err
			}
			return gorgonia.Sin(r)
		})},
		{name: "Transpose_2D", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Transpose(x) }), wrap: wrapCube},
		{name: "Transpose_3D", inputs: []*tensor.Dense{factsTensor([]int{2, 1, 3}, 0.3, -0.7, 1.1, 0.5, -0.2, 0.9)}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Transpose(x, 2, 0, 1)
		}), wrap: wrapCube},
		{name: "BroadcastAdd", inputs: []*tensor.Dense{factsTensor(nil, 0.5, -0.8), fMatA()}, op: binary(func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.BroadcastAdd(a, b, []byte{1}, nil)
		}), wrap: wrapCube},
		{name: "BroadcastHadamardProd", inputs: []*tensor.Dense{fMatA(), fVecB()}, op: binary(func(a, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.BroadcastHadamardProd(a, b, nil, []byte{0})
		}), wrap: wrapCube},
		{name: "Softplus", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Softplus)},
		{name: "Log1p", inputs: []*tensor.Dense{fVecB()}, op: unary(gorgonia.Log1p)},
		{name: "Expm1", inputs: []*tensor.Dense{fVecA()}, op: unary(gorgonia.Expm1)},
		{name: "Inverse", inputs: []*tensor.Dense{fPosA()}, op: unary(gorgonia.Inverse)},
		{name: "Pow_variable_exponent", inputs: []*tensor.Dense{fPosA(), fVecB()}, op: binary(gorgonia.Pow)},
		{name: "Pow_constant_exponent", inputs: []*tensor.Dense{fPosA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Pow(x, gorgonia.Must(ad.Constant(x.Graph(), gorgonia.NewF64(2.5))))
		})},
	}
	runFactsCases(t, cases)
}

// TestGorgoniaFactsRightThanksToGrad pins the ops that are right at
// orders 1-3 only because ad.Grad fixes upstream defects (docs/GORGONIA.md,
// "The gradient function itself"): DiffWRT-respecting edges (Rectify,
// LeakyRelu, Abs, Max, Mean), scalar gradients kept scalar (Sum, Mean and
// vector Norm over all axes), Slice's derivative rule (Slice, Concat) and
// OuterProd's rule (OuterProd, Mul matrix·vector).
func TestGorgoniaFactsRightThanksToGrad(t *testing.T) {
	cases := []factsCase{
		{name: "Slice", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Slice(x, nil, gorgonia.S(1, 3))
		}), wrap: wrapCube},
		{name: "Slice_row", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Slice(x, gorgonia.S(1))
		}), wrap: wrapCube},
		{name: "Concat_axis0", inputs: []*tensor.Dense{fMatA(), fMatB()}, op: func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Concat(0, in[0], in[1])
		}, wrap: wrapCube},
		{name: "Concat_axis1", inputs: []*tensor.Dense{fMatA(), fMatB()}, op: func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.Concat(1, in[0], in[1])
		}, wrap: wrapCube},
		{name: "Mul_matrix_vector", inputs: []*tensor.Dense{fMatA(), fVecB()}, op: binary(gorgonia.Mul), wrap: wrapCube},
		{name: "Mul_square_matrix_vector", inputs: []*tensor.Dense{
			factsTensor([]int{3, 3}, 0.3, -0.7, 1.1, 0.5, -0.2, 0.9, -0.4, 0.8, 0.6), fVecB(),
		}, op: binary(gorgonia.Mul), wrap: wrapCube},
		{name: "Mul_vector_matrix", inputs: []*tensor.Dense{factsTensor(nil, 0.4, -0.9), fMatA()}, op: binary(gorgonia.Mul), wrap: wrapCube},
		{name: "OuterProd", inputs: []*tensor.Dense{factsTensor(nil, 0.4, -0.9), fVecB()}, op: binary(gorgonia.OuterProd), wrap: wrapCube},
		{name: "OuterProd_square", inputs: []*tensor.Dense{fVecA(), fVecB()}, op: binary(gorgonia.OuterProd), wrap: wrapCube},
		{name: "Rectify", inputs: []*tensor.Dense{fKinked()}, op: unary(gorgonia.Rectify), wrap: wrapCube},
		{name: "LeakyRelu", inputs: []*tensor.Dense{fKinked()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.LeakyRelu(x, 0.1)
		}), wrap: wrapCube},
		{name: "Abs", inputs: []*tensor.Dense{fKinked()}, op: unary(gorgonia.Abs), wrap: wrapCube},
		{name: "Max_axis1", inputs: []*tensor.Dense{fKinked()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Max(x, 1)
		}), wrap: wrapCube},
		{name: "Max_all", inputs: []*tensor.Dense{fKinked()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Max(x)
		}), wrap: wrapCube},
		{name: "MaxBetween", inputs: []*tensor.Dense{fKinked(), fMatA()}, op: binary(gorgonia.MaxBetween), wrap: wrapCube},
		{name: "Mean_axis0", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Mean(x, 0)
		}), wrap: wrapCube},
		{name: "Mean_all", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Mean(x)
		}), wrap: wrapCube},
		{name: "Sum_all", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Sum(x)
		}), wrap: wrapCube},
		{name: "Norm_axis0", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Norm(x, 0, 2)
		})},
		{name: "Norm_vector", inputs: []*tensor.Dense{fVecA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Norm(x, 0, 2)
		})},
	}
	runFactsCases(t, cases)
}

// secondDerivativeSinX builds x = [0.3, 0.7, 1.1], f = sum(sin(x) ⊙ x),
// g = grad(f, x) and h = grad(sum(g ⊙ ones), x) with the given gradient
// function, runs the graph and returns g and h. h is the diagonal of the
// Hessian, 2cos(x) - x·sin(x).
func secondDerivativeSinX(t *testing.T, grad func(*gorgonia.Node, ...*gorgonia.Node) (gorgonia.Nodes, error)) (g1, g2 []float64) {
	t.Helper()
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(factsTensor(nil, 0.3, 0.7, 1.1)))
	sin, err := gorgonia.Sin(x)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gorgonia.HadamardProd(sin, x)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gorgonia.Sum(p)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := grad(f, x)
	if err != nil {
		t.Fatalf("first gradient: %v", err)
	}
	ones := gorgonia.Must(ad.Constant(g, factsTensor(nil, 1, 1, 1)))
	gv, err := gorgonia.HadamardProd(d1[0], ones)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gorgonia.Sum(gv)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := grad(s, x)
	if err != nil {
		t.Fatalf("second gradient: %v", err)
	}
	got, err := graphtest.Eval(g, d1[0], d2[0])
	if err != nil {
		t.Fatal(err)
	}
	return got[0], got[1]
}

func factsClose(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= tol) {
			return false
		}
	}
	return true
}

// sinXTruth returns the first and second derivatives of sin(x)·x at
// 0.3, 0.7, 1.1.
func sinXTruth() (d1, d2 []float64) {
	for _, x := range []float64{0.3, 0.7, 1.1} {
		d1 = append(d1, math.Sin(x)+x*math.Cos(x))
		d2 = append(d2, 2*math.Cos(x)-x*math.Sin(x))
	}
	return d1, d2
}

// TestGorgoniaFactsGradOfGradWrong pins gorgonia.Grad's wrong second
// derivative (docs/GORGONIA.md, "The gradient function itself"): the second call reuses derivatives the
// first call cached on the nodes and keeps only the -x·sin(x) path.
func TestGorgoniaFactsGradOfGradWrong(t *testing.T) {
	want1, truth := sinXTruth()
	if !factsClose(truth, []float64{1.8220, 1.0787, -0.0731}, 1e-4) {
		t.Fatalf("the reference second derivative is %v, want [1.8220 1.0787 -0.0731]", truth)
	}
	g1, g2 := secondDerivativeSinX(t, gorgonia.Grad)
	if !factsClose(g1, want1, 1e-12) {
		t.Errorf("gorgonia.Grad's first derivative is %v, want %v", g1, want1)
	}
	if factsClose(g2, truth, 1e-4) {
		t.Fatalf("gorgonia.Grad's second derivative is now right (%v): upstream was fixed, "+
			"ad.Grad's workaround can be revisited; update docs/GORGONIA.md and this test", g2)
	}
	wrong := []float64{-0.0887, -0.4510, -0.9803}
	if !factsClose(g2, wrong, 1e-4) {
		t.Errorf("gorgonia.Grad's second derivative is %v: neither the known wrong %v nor the truth %v; "+
			"upstream changed, update docs/GORGONIA.md and this test", g2, wrong, truth)
	}
	// The wrong value is exactly the path through x alone: -x·sin(x).
	for i, x := range []float64{0.3, 0.7, 1.1} {
		if math.Abs(g2[i]-(-x*math.Sin(x))) > 1e-12 {
			t.Errorf("gorgonia.Grad's second derivative [%d] = %v, want -x·sin(x) = %v", i, g2[i], -x*math.Sin(x))
		}
	}
}

// TestGorgoniaFactsAdGradOfGradRight is the same graph with ad.Grad.
func TestGorgoniaFactsAdGradOfGradRight(t *testing.T) {
	want1, truth := sinXTruth()
	g1, g2 := secondDerivativeSinX(t, ad.Grad)
	if !factsClose(g1, want1, 1e-10) {
		t.Errorf("ad.Grad's first derivative is %v, want %v", g1, want1)
	}
	if !factsClose(g2, truth, 1e-10) {
		t.Errorf("ad.Grad's second derivative is %v, want %v", g2, truth)
	}
}

// TestGorgoniaFactsOrder2ErrorNamesOp: a gradient of order 2 that must pass
// through a Gorgonia backward op without a usable SymDiff (docs/GORGONIA.md, "No
// second derivative") makes ad.Grad return an error that names the op,
// at graph-build time: no panic, nothing run.
//
// Conv2d's order-2 gradient, if built, kills the process when run (col2imOp:
// index out of range in a worker goroutine), so ad.Grad refuses col2im.
func TestGorgoniaFactsOrder2ErrorNamesOp(t *testing.T) {
	vector := func(g *gorgonia.ExprGraph) *gorgonia.Node {
		return gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
			gorgonia.WithValue(factsTensor(nil, 0.3, -0.7, 1.1)))
	}
	image := func(g *gorgonia.ExprGraph) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 4, 4), gorgonia.WithName("x"),
			gorgonia.WithValue(factsTensor([]int{1, 1, 4, 4}, 0.1, 0.9, 0.4, 0.3, 0.8, 0.2, 0.7, 0.5, 0.6, 1.2, 0.15, 1.1, 0.35, 0.05, 1.0, 0.45)))
	}
	cases := []struct {
		name  string
		input func(*gorgonia.ExprGraph) *gorgonia.Node
		op    func(*gorgonia.Node) (*gorgonia.Node, error)
		named string // lower-case text the error must contain
	}{
		{"SoftMax", vector, func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.SoftMax(x) }, "softmax"},
		{"LogSoftMax", vector, func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.LogSoftMax(x) }, "softmax"},
		{"Dropout", vector, func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Dropout(x, 0.5) }, "dropout"},
		{"MaxPool2D", image, func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.MaxPool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
		}, "maxpool"},
		{"AveragePool2D", image, func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.AveragePool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
		}, "avgpool"},
		{"Upsample2D", image, func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Upsample2D(x, 1) }, "upsample"},
		{"Conv2d", image, func(x *gorgonia.Node) (*gorgonia.Node, error) {
			w := gorgonia.NewTensor(x.Graph(), tensor.Float64, 4, gorgonia.WithShape(1, 1, 2, 2), gorgonia.WithName("w"),
				gorgonia.WithValue(factsTensor([]int{1, 1, 2, 2}, 0.5, -0.3, 0.2, 0.9)))
			return gorgonia.Conv2d(x, w, tensor.Shape{2, 2}, []int{0, 0}, []int{1, 1}, []int{1, 1})
		}, "conv2d"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gorgonia.NewGraph()
			x := c.input(g)
			y, err := c.op(x)
			if err != nil {
				t.Fatal(err)
			}
			cube, err := gorgonia.Cube(y)
			if err != nil {
				t.Fatal(err)
			}
			s, err := gorgonia.Sum(cube)
			if err != nil {
				t.Fatal(err)
			}
			g1, err := ad.Grad(s, x)
			if err != nil {
				t.Fatalf("order 1 should build through %s: %v", c.name, err)
			}
			sq, err := gorgonia.Square(g1[0])
			if err != nil {
				t.Fatal(err)
			}
			s2, err := gorgonia.Sum(sq)
			if err != nil {
				t.Fatal(err)
			}
			var panicked any
			err = func() error {
				defer func() { panicked = recover() }()
				_, err := ad.Grad(s2, x)
				return err
			}()
			if panicked != nil {
				// ad.Grad asks every op for DiffWRT(arity); the derivative
				// ops of SoftMax, LogSoftMax and Dropout inherit the forward
				// op's DiffWRT, which panics for 3 inputs.
				t.Fatalf("ad.Grad panicked at order 2 through %s instead of returning an error: %v", c.name, panicked)
			}
			if err == nil {
				t.Fatalf("ad.Grad built an order-2 gradient through %s: Gorgonia's backward op now has a second derivative? "+
					"Check it with graphtest at order 3 and update docs/GORGONIA.md and this test", c.name)
			}
			t.Logf("order-2 error: %v", err)
			if !strings.Contains(strings.ToLower(err.Error()), c.named) {
				t.Errorf("the error does not name the op (%q): %v", c.named, err)
			}
		})
	}
}

// wrongAtOrder1 runs graphtest.Check at order 1 on an upstream op known to
// have a wrong first derivative and returns the *graphtest.Mismatch.
func wrongAtOrder1(t *testing.T, what string, f graphtest.Func, inputs ...*tensor.Dense) *graphtest.Mismatch {
	t.Helper()
	err := graphtest.Check(f, inputs, graphtest.Options{Order: 1, Seed: 3})
	if err == nil {
		t.Fatalf("%s now has a right first derivative: upstream was fixed; update docs/GORGONIA.md's "+
			"\"Wrong already at first order\" table and this test", what)
	}
	var m *graphtest.Mismatch
	if !errors.As(err, &m) {
		t.Fatalf("%s: graphtest.Check failed without a *graphtest.Mismatch: %v", what, err)
	}
	if m.Order != 1 {
		t.Errorf("%s: mismatch at order %d, want 1: %v", what, m.Order, m)
	}
	return m
}

// TestGorgoniaFactsWrongAtFirstOrder pins upstream ops whose first
// derivative is wrong (docs/GORGONIA.md, "Wrong already at first order"). Users
// must not differentiate through them.
func TestGorgoniaFactsWrongAtFirstOrder(t *testing.T) {
	t.Run("Log2", func(t *testing.T) {
		// Upstream: G·ln2/x; right: G/(x·ln2). The ratio is ln²2.
		m := wrongAtOrder1(t, "Log2", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Log2(in[0]) }, fPosA())
		if r, want := m.Analytic/m.Numeric, math.Ln2*math.Ln2; math.Abs(r-want) > 1e-6 {
			t.Errorf("Log2: analytic/numeric = %.8g, want ln²2 = %.8g: the defect changed (%v)", r, want, m)
		}
	})
	t.Run("InverseSqrt", func(t *testing.T) {
		// Upstream: -G/(2y³) with y = x^(-1/2); right: -G·y³/2. The ratio is x³.
		x := fPosA()
		m := wrongAtOrder1(t, "InverseSqrt", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.InverseSqrt(in[0]) }, x)
		xe := x.Data().([]float64)[m.Index[0]]
		if r, want := m.Analytic/m.Numeric, xe*xe*xe; math.Abs(r-want) > 1e-6*want {
			t.Errorf("InverseSqrt: analytic/numeric = %.8g, want x³ = %.8g: the defect changed (%v)", r, want, m)
		}
	})
	t.Run("Dropout_p0", func(t *testing.T) {
		// p = 0 is the identity forward, but the backward returns 0.
		m := wrongAtOrder1(t, "Dropout(p=0)", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Dropout(in[0], 0) }, fVecA())
		if m.Analytic != 0 || m.Numeric == 0 {
			t.Errorf("Dropout(p=0): want a zero analytic and a non-zero numeric derivative: %v", m)
		}
	})
	t.Run("Dropout_p1e-9", func(t *testing.T) {
		// Keeps every element (a drop has probability 1e-9 per draw); the
		// forward divides by 1-p, the backward by p.
		const p = 1e-9
		m := wrongAtOrder1(t, "Dropout(p=1e-9)", func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Dropout(in[0], p) }, fVecA())
		if r, want := m.Analytic/m.Numeric, (1-p)/p; math.Abs(r-want) > 1e-4*want {
			t.Errorf("Dropout(p=%g): analytic/numeric = %.8g, want (1-p)/p = %.8g: the defect changed (%v)", p, r, want, m)
		}
	})
	t.Run("AveragePool2D", func(t *testing.T) {
		x := factsTensor([]int{1, 1, 4, 4}, 0.1, 0.9, 0.4, 0.3, 0.8, 0.2, 0.7, 0.5, 0.6, 1.2, 0.15, 1.1, 0.35, 0.05, 1.0, 0.45)
		wrongAtOrder1(t, "AveragePool2D", func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return gorgonia.AveragePool2D(in[0], tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
		}, x)
	})
}

// TestGorgoniaFactsReshapeOfInputOverwritten pins a TapeMachine aliasing
// defect (docs/GORGONIA.md, "TapeMachine aliasing", a case that page does not
// list): for an input x, the gradient of Square(Reshape(x)) or
// Cube(Reshape(x)) is computed in place in Reshape's output, which is a view
// of x's value, so running the graph once overwrites x (with 2x, or 3x²),
// with ad.Grad and gorgonia.Grad alike. The first run's gradient is right;
// every later run computes from the corrupted x.
func TestGorgoniaFactsReshapeOfInputOverwritten(t *testing.T) {
	x0 := []float64{0.3, -0.7, 1.1, 0.5, -0.2, 0.9}
	cases := []struct {
		op     string
		apply  func(*gorgonia.Node) (*gorgonia.Node, error)
		gradFn string
		grad   func(*gorgonia.Node, ...*gorgonia.Node) (gorgonia.Nodes, error)
		d      func(float64) float64 // the op's derivative: x is overwritten with it
	}{
		{"Square", gorgonia.Square, "ad.Grad", ad.Grad, func(x float64) float64 { return 2 * x }},
		{"Cube", gorgonia.Cube, "ad.Grad", ad.Grad, func(x float64) float64 { return 3 * x * x }},
		{"Cube", gorgonia.Cube, "gorgonia.Grad", gorgonia.Grad, func(x float64) float64 { return 3 * x * x }},
	}
	for _, c := range cases {
		t.Run(c.op+"_"+c.gradFn, func(t *testing.T) {
			g := gorgonia.NewGraph()
			xv := factsTensor([]int{2, 3}, append([]float64(nil), x0...)...)
			x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("x"), gorgonia.WithValue(xv))
			r, err := gorgonia.Reshape(x, tensor.Shape{6})
			if err != nil {
				t.Fatal(err)
			}
			y, err := c.apply(r)
			if err != nil {
				t.Fatal(err)
			}
			s, err := gorgonia.Sum(y)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := c.grad(s, x)
			if err != nil {
				t.Fatal(err)
			}
			vals, err := graphtest.Eval(g, gs[0])
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, len(x0))
			for i, v := range x0 {
				want[i] = c.d(v)
			}
			if got := vals[0]; !factsClose(got, want, 1e-12) {
				t.Errorf("first run's gradient is %v, want %v", got, want)
			}
			got := xv.Data().([]float64)
			if factsClose(got, x0, 0) {
				t.Fatalf("x is no longer overwritten by the gradient (%s) of %s(Reshape(x)): upstream was fixed; "+
					"update docs/GORGONIA.md and this test (and the Reshape case may use the cube again)", c.gradFn, c.op)
			}
			if !factsClose(got, want, 1e-12) {
				t.Errorf("x after one run is %v, want it overwritten with the derivative %v (the defect changed)", got, want)
			}
		})
	}
	// ad.Reshape copies: the same graphs leave x as it was, run after run.
	t.Run("ad.Reshape", func(t *testing.T) {
		g := gorgonia.NewGraph()
		xv := factsTensor([]int{2, 3}, append([]float64(nil), x0...)...)
		x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("x"), gorgonia.WithValue(xv))
		r, err := ad.Reshape(x, 6)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(r)))), x)
		if err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 2; run++ {
			vals, err := graphtest.Eval(g, gs[0])
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range x0 {
				if vals[0][i] != 2*v || xv.Data().([]float64)[i] != v {
					t.Fatalf("run %d: gradient %v and x %v, want 2·x0 and x0 = %v", run, vals[0], xv.Data(), x0)
				}
			}
		}
	})
}

// TestGorgoniaFactsConstantsMergeByPrintedValue pins a defect of
// ExprGraph.Constant (and of AddNode for constants): a constant whose
// printed value, its name, equals an existing constant's is that constant,
// whatever its shape or dtype. Large zero tensors print alike (abbreviated),
// and so do float32 and float64 scalars of one value. ad.Constant names
// constants by dtype, shape and a hash of the elements instead.
func TestGorgoniaFactsConstantsMergeByPrintedValue(t *testing.T) {
	g := gorgonia.NewGraph()
	a := g.Constant(tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(40, 50)))
	b := g.Constant(tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(30, 30)))
	one64 := g.Constant(gorgonia.NewF64(1))
	one32 := g.Constant(gorgonia.NewF32(1))
	if a != b || one64 != one32 {
		t.Fatalf("ExprGraph.Constant no longer merges constants by printed value (zeros %v and %v: same node %t; "+
			"float64 and float32 ones: same node %t): upstream was fixed, ad.Constant can go (upstream.go)",
			a.Shape(), b.Shape(), a == b, one64 == one32)
	}
	if !b.Shape().Eq(tensor.Shape{40, 50}) || one32.Dtype() != tensor.Float64 {
		t.Errorf("the merged constants are %v and %v, want the first one's shape and dtype", b.Shape(), one32.Dtype())
	}
	c := gorgonia.Must(ad.Constant(g, tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(40, 50))))
	d := gorgonia.Must(ad.Constant(g, tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(30, 30))))
	c32 := gorgonia.Must(ad.Constant(g, gorgonia.NewF32(1)))
	again := gorgonia.Must(ad.Constant(g, tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(30, 30))))
	if c == d || !c.Shape().Eq(tensor.Shape{40, 50}) || !d.Shape().Eq(tensor.Shape{30, 30}) || c32.Dtype() != tensor.Float32 || again != d {
		t.Errorf("ad.Constant: shapes %v, %v (same node %t), float32 one has dtype %v, equal values share a node: %t",
			c.Shape(), d.Shape(), c == d, c32.Dtype(), again == d)
	}

	// Two [40, 50] tensors that differ only inside (their printouts agree):
	// ExprGraph.Constant gives one node, ad.Constant two, and their sums
	// are 0 and 7.
	inside := make([]float64, 2000)
	inside[1000] = 7
	zeros := tensor.New(tensor.WithShape(40, 50), tensor.WithBacking(make([]float64, 2000)))
	seven := tensor.New(tensor.WithShape(40, 50), tensor.WithBacking(inside))
	if g.Constant(zeros) != g.Constant(seven) {
		t.Errorf("ExprGraph.Constant now tells apart tensors whose printouts agree: upstream was fixed")
	}
	z, s := gorgonia.Must(ad.Constant(g, zeros)), gorgonia.Must(ad.Constant(g, seven))
	gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("x"), gorgonia.WithValue(1.0)) // a graph needs an input to compile
	got, err := graphtest.Eval(g, gorgonia.Must(gorgonia.Sum(z)), gorgonia.Must(gorgonia.Sum(s)))
	if err != nil {
		t.Fatal(err)
	}
	if z == s || got[0][0] != 0 || got[1][0] != 7 {
		t.Errorf("ad.Constant: same node %t, sums %v and %v, want 0 and 7", z == s, got[0], got[1])
	}
}

// findOp returns the first node of g whose op's Go type name contains name.
func findOp(g *gorgonia.ExprGraph, name string) *gorgonia.Node {
	for _, n := range g.AllNodes() {
		if n.Op() != nil && strings.Contains(fmt.Sprintf("%T", n.Op()), name) {
			return n
		}
	}
	return nil
}

// TestGorgoniaFactsUpstreamRules pins Gorgonia's own derivative rules that
// ad/upstream.go works around, one subtest per workaround: when one fails,
// upstream changed that rule; check the workaround it names and delete it
// if the rule is now right. (col2imOp's SymDiff, which conv2dOrder2
// refuses, builds nodes that kill the process when run, so it is pinned
// only through TestGorgoniaFactsOrder2ErrorNamesOp/Conv2d.)
func TestGorgoniaFactsUpstreamRules(t *testing.T) {
	matrix := func(g *gorgonia.ExprGraph, name string, rows, cols int) *gorgonia.Node {
		return gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(rows, cols), gorgonia.WithName(name), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	}
	t.Run("sliceDerivativeDiffWRT", func(t *testing.T) {
		g := gorgonia.NewGraph()
		x := matrix(g, "x", 2, 3)
		s := gorgonia.Must(gorgonia.Slice(x, nil, gorgonia.S(1, 3)))
		if _, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Cube(s)))), x); err != nil {
			t.Fatal(err)
		}
		n := findOp(g, "sliceIncrOp")
		if n == nil {
			t.Fatal("Slice's gradient has no sliceIncrOp node any more")
		}
		if d := n.Op().(gorgonia.SDOp).DiffWRT(2); len(d) != 2 || !d[0] || d[1] {
			t.Errorf("sliceIncrOp's DiffWRT is now %v, not [true false]: see sliceDerivativeDiffWRT and sliceDerivativeGrads", d)
		}
	})
	t.Run("outerProdGrads", func(t *testing.T) {
		g := gorgonia.NewGraph()
		a := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("a"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
		b := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("b"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
		z := gorgonia.Must(gorgonia.OuterProd(a, b))
		// Gorgonia's rule gives a a gradient of b's shape and the other way
		// round (and fails when run).
		gs, err := z.Op().(gorgonia.SDOp).SymDiff(gorgonia.Nodes{a, b}, z, matrix(g, "G", 2, 3))
		if err == nil && gs[0].Shape().Eq(a.Shape()) && gs[1].Shape().Eq(b.Shape()) {
			t.Errorf("OuterProd's SymDiff now gives gradients of the inputs' shapes for a 2-vector ⊗ 3-vector: see outerProdGrads")
		}
	})
	t.Run("scalarGradient", func(t *testing.T) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
		s := gorgonia.Must(gorgonia.Reshape(gorgonia.Must(gorgonia.Sum(x)), tensor.Shape{}))
		if _, err := graphtest.Eval(g, gorgonia.Must(gorgonia.Add(s, s))); err == nil {
			t.Errorf("a 0-d tensor (Reshape of a scalar to ()) now works in scalar ops: see scalarGradient")
		}
	})
	t.Run("inheritedDiffWRT", func(t *testing.T) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
		y := gorgonia.Must(gorgonia.SoftMax(x))
		if _, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Cube(y)))), x); err != nil {
			t.Fatal(err)
		}
		n := findOp(g, "softmaxDiffOp")
		if n == nil {
			t.Fatal("SoftMax's gradient has no softmaxDiffOp node any more")
		}
		arity := n.Op().Arity()
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			n.Op().(gorgonia.SDOp).DiffWRT(arity)
			return false
		}()
		if !panicked {
			t.Errorf("softmaxDiffOp's DiffWRT(%d) no longer panics: see inheritedDiffWRT", arity)
		}
	})
}

// TestGorgoniaFactsMixedDtypesInOneGraph pins a consequence of Gorgonia's
// merging of constants by printout inside its own ops: a float32 and a
// float64 computation in one graph can share a constant that an op made
// (Cube's derivative 3, say; ad.Grad's own rule for Square
// makes its 2 with ad.Constant), and the graph then fails to run
// ("Dtype mismatch"). Build float32 and float64 graphs separately.
func TestGorgoniaFactsMixedDtypesInOneGraph(t *testing.T) {
	g := gorgonia.NewGraph()
	x64 := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x64"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	x32 := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3), gorgonia.WithName("x32"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	g64, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Cube(x64)))), x64)
	if err != nil {
		t.Fatal(err)
	}
	g32, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Cube(x32)))), x32)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graphtest.Eval(g, g64[0], g32[0]); err == nil {
		t.Errorf("Cube's gradients in float64 and float32 now run in one graph: upstream was fixed; update docs/GORGONIA.md and the README's pitfalls")
	}
}
