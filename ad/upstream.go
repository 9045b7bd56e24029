package ad

// Workarounds for defects of Gorgonia v0.9.18, one function per defect.
// Each names the test in gorgonia_facts_test.go that pins the defect: when
// an upgrade makes that test report the defect gone, delete the function and
// its call. Nothing else in this package knows about Gorgonia's defects.

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"reflect"

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

// Constant returns a constant node holding v in g. Use it instead of
// ExprGraph.Constant, which returns an existing constant whose printed value
// (its name) equals v's, whatever its shape or dtype: zero tensors of shapes
// [40, 50] and [30, 30] print alike (Gorgonia abbreviates large tensors), and
// so do float32 and float64 constants of equal values, so the second one
// silently becomes the first. Constant names the node after v's dtype, shape
// and a hash of its elements, so equal values still share one node and
// different ones never do. v is a scalar (gorgonia.NewF64, NewF32, ...) or a
// tensor. Pinned by TestGorgoniaFactsConstantsMergeByPrintedValue.
func Constant(g *gorgonia.ExprGraph, v gorgonia.Value) *gorgonia.Node {
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
	name := fmt.Sprintf("const %v%v #%016x", v.Dtype(), v.Shape(), h.Sum64())
	return g.AddNode(gorgonia.NewConstant(v, gorgonia.WithName(name)))
}

// zerosLike is a constant zero node of n's type and shape.
func zerosLike(n *gorgonia.Node) (*gorgonia.Node, error) {
	dt := n.Dtype()
	switch {
	case dt != tensor.Float64 && dt != tensor.Float32:
		return nil, fmt.Errorf("ad: Grad: dtype %v of %v is not float32 or float64", dt, nodeName(n))
	case n.IsScalar() && dt == tensor.Float64:
		return Constant(n.Graph(), gorgonia.NewF64(0)), nil
	case n.IsScalar():
		return Constant(n.Graph(), gorgonia.NewF32(0)), nil
	}
	return Constant(n.Graph(), tensor.New(tensor.Of(dt), tensor.WithShape(n.Shape()...))), nil
}

// sliceDerivativeDiffWRT corrects the DiffWRT of Slice's derivative op
// (sliceIncrOp(x, G): zeros shaped like x with G added at the slice). Its
// value does not depend on x and is linear in G, yet Gorgonia declares
// {x: true, G: false}; it is {false, true}. ok says whether op is that op.
// With sliceDerivativeGrads: Slice wrong at order 2 and Concat at order 3
// otherwise. Pinned by TestGorgoniaFactsRightThanksToGrad (Slice, Concat).
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
// op. Pinned by TestGorgoniaFactsOrder2ErrorNamesOp (SoftMax, LogSoftMax,
// Dropout).
func inheritedDiffWRT(sd gorgonia.SDOp, out []bool) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	copy(out, sd.DiffWRT(len(out)))
	return true
}
