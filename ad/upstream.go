package ad

// Workarounds for defects of Gorgonia v0.9.18, one function per defect.
// Each names the test in gorgonia_facts_test.go that pins the defect: when
// an upgrade makes that test report the defect gone, delete the function and
// its call. Nothing else in this package works around Gorgonia's derivative
// rules, its constants or its Reshape; elsewhere, values are read with care
// for empty tensors (whose Data() panics), and Grad sends no gradient
// through a zero-size node (it is zero, and Gorgonia's ops panic on them).

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"reflect"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// isOp reports whether op is the unexported Gorgonia op type called name.
func isOp(op gorgonia.Op, name string) bool {
	if op == nil {
		return false
	}
	t := reflect.TypeOf(op)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name() == name && t.PkgPath() == "gorgonia.org/gorgonia"
}

// Constant returns a node of g holding the value v, a scalar
// (gorgonia.NewF64, NewF32, ...) or a tensor, that no gradient passes
// through. Use it instead of ExprGraph.Constant, which returns an existing
// constant whose printed value equals v's, whatever its shape, dtype or
// elements: Gorgonia abbreviates large tensors when it prints them, so zero
// tensors of shapes [40, 50] and [30, 30] are "equal", two [40, 50] images
// that differ only inside are too, and so are float32 and float64 scalars of
// one value; the second constant silently becomes the first. Constant's
// node is identified by v's dtype, shape and a hash of all its elements:
// equal values share one node, different ones never do. Each run of the
// graph gives the node a fresh copy of v, so no op can alter the constant
// by writing into it. Errors: v is nil. Pinned by
// TestGorgoniaFactsConstantsMergeByPrintedValue.
func Constant(g *gorgonia.ExprGraph, v gorgonia.Value) (*gorgonia.Node, error) {
	if g == nil || v == nil {
		return nil, fmt.Errorf("ad: Constant: nil graph or value")
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%v|%v|", v.Dtype(), v.Shape())
	var buf []byte
	var data any
	if v.Shape().IsScalar() || v.Shape().TotalSize() > 0 {
		data = v.Data() // Data of an empty tensor panics
	}
	switch d := data.(type) {
	case []float64:
		for _, x := range d {
			buf = binary.LittleEndian.AppendUint64(buf[:0], math.Float64bits(x))
			h.Write(buf)
		}
	case []float32:
		for _, x := range d {
			buf = binary.LittleEndian.AppendUint32(buf[:0], math.Float32bits(x))
			h.Write(buf)
		}
	case nil:
	default:
		fmt.Fprintf(h, "%v", d)
	}
	op := constantOp{v: v, name: fmt.Sprintf("const %v%v #%016x", v.Dtype(), v.Shape(), h.Sum64())}
	return gorgonia.NewUniqueNode(gorgonia.WithType(op.Type()), gorgonia.WithOp(op), gorgonia.In(g),
		gorgonia.WithShape(v.Shape()...), gorgonia.WithName(op.name)), nil
}

// constantOp is Constant's op: no inputs, its value a copy of v. A node of
// Gorgonia's own constant op would be identified by its printed value.
type constantOp struct {
	v    gorgonia.Value
	name string
}

// The methods of gorgonia.Op and gorgonia.SDOp: no inputs, no gradient.

func (o constantOp) Arity() int { return 0 }
func (o constantOp) Type() hm.Type {
	if o.v.Shape().IsScalar() {
		return o.v.Dtype()
	}
	return gorgonia.TensorType{Dims: o.v.Shape().Dims(), Of: o.v.Dtype()}
}
func (o constantOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return o.v.Shape().Clone(), nil
}
func (o constantOp) Do(...gorgonia.Value) (gorgonia.Value, error) { return gorgonia.CloneValue(o.v) }
func (o constantOp) ReturnsPtr() bool                             { return false }
func (o constantOp) CallsExtern() bool                            { return false }
func (o constantOp) OverwritesInput() int                         { return -1 }
func (o constantOp) WriteHash(h hash.Hash)                        { fmt.Fprint(h, o.name) }
func (o constantOp) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}
func (o constantOp) String() string       { return o.name }
func (o constantOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (o constantOp) SymDiff(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
	return make(gorgonia.Nodes, len(in)), nil
}

// Reshape returns x with another shape of the same size, as a copy.
// Gorgonia's Reshape returns a view of its input, and its TapeMachine may
// then write into that memory while the input is still needed: the
// gradient of Square(Reshape(x)) overwrites x in place, and where the
// reshaped node feeds more than one op, Tanh's or Exp's first-order
// gradients come out wrong. The copy costs one pass over the data; the
// reshape and the reshape back are a linear pair (ReshapeSpec), so Reshape
// is differentiable to every order. Errors: x nil, a shape of another size,
// x not float32 or float64. Pinned by
// TestGorgoniaFactsReshapeOfInputOverwritten.
func Reshape(x *gorgonia.Node, shape ...int) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ad: Reshape: x is nil")
	}
	there, _ := LinearPair(ReshapeSpec(x.Shape(), shape), ReshapeSpec(shape, x.Shape()))
	return Apply(there, x)
}

// ReshapeSpec is the op of Reshape from one shape to another of the same
// size, without a Backward, for a program that gives it a CUDA twin and
// pairs it with the reshape back (LinearPair).
func ReshapeSpec(from, to tensor.Shape) OpSpec {
	from, to = from.Clone(), to.Clone()
	return OpSpec{
		Name:       "CopyReshape",
		Params:     fmt.Sprintf("%v→%v", from, to),
		InputDims:  []int{from.Dims()},
		OutputDims: to.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !sameShape(in[0], from) || from.TotalSize() != to.TotalSize() {
				return nil, fmt.Errorf("ad: Reshape: input %v, want %v of %d elements", in[0], from, to.TotalSize())
			}
			return to.Clone(), nil
		},
		Kernel: Floats(copyData[float32], copyData[float64]),
	}
}

func copyData[T Float](out Tensor[T], in []Tensor[T]) error {
	copy(out.Data, in[0].Data)
	return nil
}

// zerosLike is a constant zero node of n's type and shape.
func zerosLike(n *gorgonia.Node) (*gorgonia.Node, error) {
	dt := n.Dtype()
	switch {
	case dt != tensor.Float64 && dt != tensor.Float32:
		return nil, fmt.Errorf("ad: Grad: dtype %v of %v is not float32 or float64", dt, nodeName(n))
	case n.IsScalar() && dt == tensor.Float64:
		return Constant(n.Graph(), gorgonia.NewF64(0))
	case n.IsScalar():
		return Constant(n.Graph(), gorgonia.NewF32(0))
	}
	return Constant(n.Graph(), tensor.New(tensor.Of(dt), tensor.WithShape(n.Shape()...)))
}

// sliceDerivativeDiffWRT corrects the DiffWRT of Slice's derivative op
// (sliceIncrOp(x, G): zeros shaped like x with G added at the slice). Its
// value does not depend on x and is linear in G, yet Gorgonia declares
// {x: true, G: false}; it is {false, true}. ok says whether op is that op.
// With sliceDerivativeGrads: Slice wrong at order 2 and Concat at order 3
// otherwise. Pinned by TestGorgoniaFactsUpstreamRules/sliceDerivativeDiffWRT
// and TestGorgoniaFactsRightThanksToGrad (Slice, Concat).
func sliceDerivativeDiffWRT(op gorgonia.Op, out []bool) (ok bool) {
	if !isOp(op, "sliceIncrOp") || len(out) != 2 {
		return false
	}
	out[0], out[1] = false, true
	return true
}

// sliceDerivativeGrads keeps, of sliceIncrOp's SymDiff result, only the
// gradient w.r.t. G (the slice of the upstream gradient); Gorgonia's rule
// hands the upstream gradient to x. Pinned as sliceDerivativeDiffWRT.
func sliceDerivativeGrads(op gorgonia.Op, grads gorgonia.Nodes) gorgonia.Nodes {
	if isOp(op, "sliceIncrOp") && len(grads) == 2 {
		return gorgonia.Nodes{nil, grads[1]}
	}
	return grads
}

// outerProdGrads differentiates z = a ⊗ b as {G·b, Gᵀ·a}, with a and b as
// column matrices, which are right at every order. Gorgonia's rule returns
// {Mul(a, G), Mul(b, G)}: a shape error for non-square inputs, silently
// wrong for square ones, and Mul matrix·vector uses it in its own SymDiff.
// ok says whether n is an OuterProd node. Pinned by
// TestGorgoniaFactsUpstreamRules/outerProdGrads and
// TestGorgoniaFactsRightThanksToGrad (OuterProd, Mul_matrix_vector,
// Mul_vector_matrix).
func outerProdGrads(n *gorgonia.Node, kids gorgonia.Nodes, grad *gorgonia.Node) (gorgonia.Nodes, bool, error) {
	if !isOp(n.Op(), "linAlgBinOp") || fmt.Sprint(n.Op()) != "a ⊗ b" {
		return nil, false, nil
	}
	a, b := kids[0], kids[1]
	column := func(v *gorgonia.Node) (*gorgonia.Node, error) {
		return gorgonia.Reshape(v, tensor.Shape{v.Shape().TotalSize(), 1})
	}
	bc, err := column(b)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	ac, err := column(a)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	da, err := gorgonia.Mul(grad, bc)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	gt, err := gorgonia.Transpose(grad)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	db, err := gorgonia.Mul(gt, ac)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	if da, err = gorgonia.Reshape(da, a.Shape()); err != nil {
		return nil, true, wrapDiff(n, err)
	}
	if db, err = gorgonia.Reshape(db, b.Shape()); err != nil {
		return nil, true, wrapDiff(n, err)
	}
	return gorgonia.Nodes{da, db}, true, nil
}

// scalarGradient turns a gradient term that Gorgonia types as a scalar but
// computes as a 0-d tensor back into a true scalar. Sum(all)'s SymDiff makes
// Reshape(g, ()) one order later, and Gorgonia's scalar ops reject its value
// at run time ("Unhandled Scalar Type"); Sum of the reshaped node is a
// scalar. ok says whether t was such a term. Sum(all), Mean(all), Max(all)
// and vector Norm fail at order 2 otherwise. Pinned by
// TestGorgoniaFactsUpstreamRules/scalarGradient and
// TestGorgoniaFactsRightThanksToGrad (Sum_all, Mean_all, Max_all,
// Norm_vector).
func scalarGradient(t *gorgonia.Node) (*gorgonia.Node, bool, error) {
	if !t.IsScalar() || !isOp(t.Op(), "reshapeOp") {
		return nil, false, nil
	}
	s, err := gorgonia.Sum(children(t.Graph(), t)[0])
	return s, true, err
}

// conv2dOrder2 refuses to differentiate col2imOp, the backward of
// Gorgonia's Conv2d: its SymDiff builds nodes that kill the process at run
// time (index out of range in a TapeMachine goroutine, which recover cannot
// catch). Pinned by TestGorgoniaFactsOrder2ErrorNamesOp/Conv2d.
func conv2dOrder2(n *gorgonia.Node) error {
	if !isOp(n.Op(), "col2imOp") {
		return nil
	}
	return fmt.Errorf("ad: Grad: op %v of node %v (the backward of Gorgonia's Conv2d) cannot be differentiated: Gorgonia's Conv2d is first-order only; use gops.DeformConv2d with zero offsets", n.Op(), nodeName(n))
}

// inheritedDiffWRT fills out from sd.DiffWRT, reporting false where that
// panics: the derivative ops of SoftMax, LogSoftMax and Dropout inherit
// their forward op's DiffWRT, which panics for their own arity. Grad then
// treats every input as differentiable, and SymDiff's own error names the
// op. Pinned by TestGorgoniaFactsUpstreamRules/inheritedDiffWRT and
// TestGorgoniaFactsOrder2ErrorNamesOp (SoftMax, LogSoftMax, Dropout).
func inheritedDiffWRT(sd gorgonia.SDOp, out []bool) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	copy(out, sd.DiffWRT(len(out)))
	return true
}
