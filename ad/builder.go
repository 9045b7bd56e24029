package ad

import (
	"errors"
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Builder writes a formula on the nodes of one graph as a sequence of
// steps and keeps the first error, so that a formula reads as one
// expression and is checked once, at the end:
//
//	b := ad.NewBuilder(x)
//	y := b.HadamardProd(u, b.RSub(1, b.Square(x))) // u ⊙ (1 − x²)
//	return b.Node(y)
//
// After a step fails, every later step returns nil without doing anything,
// so a nil node from a failed step never reaches Gorgonia (whose
// functions panic on one). Its arithmetic is Gorgonia's own elementwise
// ops that are right at every order of differentiation
// (docs/GORGONIA.md); other ops join through Apply or Do. A Builder is
// not safe for concurrent use.
type Builder struct {
	g   *gorgonia.ExprGraph
	dt  tensor.Dtype
	err error
}

// NewBuilder returns a Builder for the graph of like whose constants have
// like's dtype (float32 or float64). A nil like gives a Builder whose
// first error says so.
func NewBuilder(like *gorgonia.Node) *Builder {
	if like == nil {
		return &Builder{err: errors.New("ad: NewBuilder: nil node")}
	}
	return &Builder{g: like.Graph(), dt: like.Dtype()}
}

// Err is the first error of the builder's steps, nil if none failed.
func (b *Builder) Err() error { return b.err }

// Node returns n and nil, or nil and the first error if a step failed:
// the usual end of a formula, return b.Node(y).
func (b *Builder) Node(n *gorgonia.Node) (*gorgonia.Node, error) {
	if b.err != nil {
		return nil, b.err
	}
	return n, nil
}

// Nodes is Node for several results (a Backward's gradients, some of them
// nil for inputs without one).
func (b *Builder) Nodes(ns ...*gorgonia.Node) (gorgonia.Nodes, error) {
	if b.err != nil {
		return nil, b.err
	}
	return gorgonia.Nodes(ns), nil
}

// Do runs the step f, unless an earlier step failed, and returns its node;
// an error it returns becomes the builder's first error (and its result
// nil). The escape hatch for any op without a method here; f may use the
// builder's own steps, and the first of all failures is kept.
func (b *Builder) Do(f func() (*gorgonia.Node, error)) *gorgonia.Node {
	if b.err != nil {
		return nil
	}
	n, err := f()
	switch {
	case b.err != nil: // a step of the builder inside f failed first
		return nil
	case err != nil:
		b.err = err
		return nil
	case n == nil:
		b.err = errors.New("ad: Builder: a step returned neither a node nor an error")
	}
	return n
}

// step is Do for op, an operation named name on the nodes in, none of
// which may be nil.
func (b *Builder) step(name string, op func() (*gorgonia.Node, error), in ...*gorgonia.Node) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) {
		for i, n := range in {
			if n == nil {
				return nil, fmt.Errorf("ad: Builder.%s: input %d is nil", name, i)
			}
		}
		return op()
	})
}

// unary and binary are step for a Gorgonia function of one or two nodes.
func (b *Builder) unary(name string, f func(x *gorgonia.Node) (*gorgonia.Node, error), x *gorgonia.Node) *gorgonia.Node {
	return b.step(name, func() (*gorgonia.Node, error) { return unaryChecked(f, x) }, x)
}

func (b *Builder) binary(name string, f func(x, y *gorgonia.Node) (*gorgonia.Node, error), x, y *gorgonia.Node) *gorgonia.Node {
	return b.step(name, func() (*gorgonia.Node, error) { return elementwise(f, x, y) }, x, y)
}

// Const is a scalar constant k of the builder's dtype (a float32 builder
// rounds k to float32), made with Constant.
func (b *Builder) Const(k float64) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return scalarConstant(b.g, b.dt, k) })
}

// Apply is Apply(spec, in...): an op built from an OpSpec.
func (b *Builder) Apply(spec OpSpec, in ...*gorgonia.Node) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return Apply(spec, in...) })
}

// Add is gorgonia.Add: x + y (same shapes, or one a scalar).
func (b *Builder) Add(x, y *gorgonia.Node) *gorgonia.Node { return b.binary("Add", gorgonia.Add, x, y) }

// Sub is gorgonia.Sub: x − y (same shapes, or one a scalar).
func (b *Builder) Sub(x, y *gorgonia.Node) *gorgonia.Node { return b.binary("Sub", gorgonia.Sub, x, y) }

// HadamardProd is gorgonia.HadamardProd: x ⊙ y, elementwise on one shape.
func (b *Builder) HadamardProd(x, y *gorgonia.Node) *gorgonia.Node {
	return b.binary("HadamardProd", gorgonia.HadamardProd, x, y)
}

// Square is gorgonia.Square: x².
func (b *Builder) Square(x *gorgonia.Node) *gorgonia.Node {
	return b.unary("Square", gorgonia.Square, x)
}

// Cube is gorgonia.Cube: x³.
func (b *Builder) Cube(x *gorgonia.Node) *gorgonia.Node { return b.unary("Cube", gorgonia.Cube, x) }

// Neg is gorgonia.Neg: −x.
func (b *Builder) Neg(x *gorgonia.Node) *gorgonia.Node { return b.unary("Neg", gorgonia.Neg, x) }

// Exp is gorgonia.Exp: eˣ.
func (b *Builder) Exp(x *gorgonia.Node) *gorgonia.Node { return b.unary("Exp", gorgonia.Exp, x) }

// Sqrt is gorgonia.Sqrt: √x.
func (b *Builder) Sqrt(x *gorgonia.Node) *gorgonia.Node { return b.unary("Sqrt", gorgonia.Sqrt, x) }

// Inverse is gorgonia.Inverse: 1/x.
func (b *Builder) Inverse(x *gorgonia.Node) *gorgonia.Node {
	return b.unary("Inverse", gorgonia.Inverse, x)
}

// Sum is gorgonia.Sum: the sum of x along the axes given, of all its
// elements (a scalar) if none. The axes must be distinct and in
// [0, x.Dims()) (torch.sum's negative dims are not taken: Gorgonia
// panics on them, and sums a repeated axis into a node whose gradient
// has the wrong shape); others are the builder's error.
func (b *Builder) Sum(x *gorgonia.Node, along ...int) *gorgonia.Node {
	return b.step("Sum", func() (*gorgonia.Node, error) {
		for i, a := range along {
			if a < 0 || a >= x.Dims() || slices.Contains(along[:i], a) {
				return nil, fmt.Errorf("ad: Builder.Sum: axes %v, want distinct axes of x %v", along, x.Shape())
			}
		}
		return unaryChecked(func(x *gorgonia.Node) (*gorgonia.Node, error) { return gorgonia.Sum(x, along...) }, x)
	}, x)
}

// Scale is k·x for a constant k (Const(k), gorgonia.Mul with a scalar).
func (b *Builder) Scale(x *gorgonia.Node, k float64) *gorgonia.Node {
	c := b.Const(k)
	return b.step("Scale", func() (*gorgonia.Node, error) { return elementwise(gorgonia.Mul, x, c) }, x)
}

// AddConst is x + k for a constant k.
func (b *Builder) AddConst(x *gorgonia.Node, k float64) *gorgonia.Node {
	c := b.Const(k)
	return b.step("AddConst", func() (*gorgonia.Node, error) { return elementwise(gorgonia.Add, x, c) }, x)
}

// RSub is k − x for a constant k.
func (b *Builder) RSub(k float64, x *gorgonia.Node) *gorgonia.Node {
	c := b.Const(k)
	return b.step("RSub", func() (*gorgonia.Node, error) { return elementwise(gorgonia.Sub, c, x) }, x)
}
