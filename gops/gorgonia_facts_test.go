package gops_test

// Pinned facts about Gorgonia v0.9.18 at derivative orders 1-3
// (/work/shared/GORGONIA.md): which Gorgonia ops can be combined with gops'
// ops at higher orders when gradients come from gops.Grad, which upstream
// defects gops.Grad works around, and which upstream ops users must avoid.
// A test here that fails after a Gorgonia upgrade means a fact changed: read
// its message, then update GORGONIA.md and this file.

import (
	"testing"

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
// derivatives of order 2 and 3, as in GORGONIA.md's method.
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
	slow   bool // skipped with -short
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
			if c.slow && testing.Short() {
				t.Skip("slow case skipped with -short")
			}
			if err := graphtest.Check(c.f, c.inputs, graphtest.Options{Order: 3, Seed: 7}); err != nil {
				t.Fatalf("gops.Grad should be right at orders 1-3 for %s (GORGONIA.md): %v", c.name, err)
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
	// fKinked has entries of both signs, each at least 0.3 away from 0 and
	// from each other, for Abs, Rectify, LeakyRelu and Max.
	fKinked = func() *tensor.Dense { return factsTensor(fA23, 0.9, -0.6, 0.3, -1.2, 1.5, -0.3) }
)

func unary(op func(*gorgonia.Node) (*gorgonia.Node, error)) func(gorgonia.Nodes) (*gorgonia.Node, error) {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0]) }
}

func binary(op func(a, b *gorgonia.Node) (*gorgonia.Node, error)) func(gorgonia.Nodes) (*gorgonia.Node, error) {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0], in[1]) }
}

// TestGorgoniaFactsRightAtOrder3 pins GORGONIA.md's list "Right at orders
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
		{name: "Reshape", inputs: []*tensor.Dense{fMatA()}, op: unary(func(x *gorgonia.Node) (*gorgonia.Node, error) {
			return gorgonia.Reshape(x, tensor.Shape{3, 2})
		}), wrap: wrapCube},
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
			return gorgonia.Pow(x, x.Graph().Constant(gorgonia.NewF64(2.5)))
		})},
	}
	runFactsCases(t, cases)
}
