package ad

// Grad's workarounds for defects of Gorgonia v0.9.18's derivative rules, one
// function per defect. Each names the test in gorgonia_facts_test.go that
// pins the defect: when an upgrade makes that test report the defect gone,
// delete the function and its call. Two more defects have public
// replacements instead: Constant (constant.go) for ExprGraph.Constant, and
// Reshape (reshape.go) for Gorgonia's aliasing Reshape; their pinning tests
// say when those could become plain calls of Gorgonia's. Elsewhere, values
// are read with care for empty tensors (whose Data() panics), and Grad sends
// no gradient through a zero-size node (it is zero, and Gorgonia's ops panic
// on them).

import (
	"fmt"
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
	da, err := elementwise(gorgonia.Mul, grad, bc)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	gt, err := gorgonia.Transpose(grad)
	if err != nil {
		return nil, true, wrapDiff(n, err)
	}
	db, err := elementwise(gorgonia.Mul, gt, ac)
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
	return fmt.Errorf("ad: Grad: op %v of node %v (the backward of Gorgonia's Conv2d) cannot be differentiated: gorgonia.Conv2d is first-order only; use nn.Conv2d (github.com/gops-dev/gops/nn, torch's conv2d, every order)", n.Op(), nodeName(n))
}

// inheritedDiffWRT fills out from sd.DiffWRT, reporting false for the
// derivative ops of SoftMax, LogSoftMax and Dropout (softmaxDiffOp,
// dropoutDiffOp): they inherit their forward op's DiffWRT, which panics
// for their own arity. Grad then treats every input as differentiable,
// and SymDiff's own error names the op. Pinned by
// TestGorgoniaFactsUpstreamRules/inheritedDiffWRT (the panic is still
// there) and TestGorgoniaFactsOrder2ErrorNamesOp (SoftMax, LogSoftMax,
// Dropout).
func inheritedDiffWRT(sd gorgonia.SDOp, out []bool) bool {
	if isOp(sd, "softmaxDiffOp") || isOp(sd, "dropoutDiffOp") {
		return false
	}
	copy(out, sd.DiffWRT(len(out)))
	return true
}
