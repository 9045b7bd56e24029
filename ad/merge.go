package ad

import (
	"fmt"
	"slices"
	"sync/atomic"

	"gorgonia.org/gorgonia"
)

// Gorgonia's ExprGraph.AddNode returns an existing node instead of the new
// one when their 32-bit tree hashes are equal and so are their op hashes,
// types, shapes and numbers of inputs; it does not compare the inputs
// themselves (docs/GORGONIA.md, "Pooled types and node merging"). Two
// different computations whose hashes collide are merged, and the second
// silently computes the first: in a third-order graph of tens of thousands
// of nodes, a few in a thousand builds. Apply, and the element-wise
// Gorgonia ops that Grad builds most of (sums of gradient terms, products
// by the upstream gradient), check the node they get back and build it
// again so that its hash differs when it is another computation's.

// mergeRetries is how often a node is built again after a merge into
// another computation's node: each retry changes its hash, so a second
// collision has a chance of 2^-32 or so.
const mergeRetries = 4

// mergedWrongly reports whether n, the node Gorgonia returned for an op
// applied to kids, has other inputs than kids: another computation's node
// that n was merged into.
func mergedWrongly(n *gorgonia.Node, kids gorgonia.Nodes) bool {
	return !slices.Equal(children(n.Graph(), n), kids)
}

// applyChecked applies o to inputs, with o's salt changed until the node
// Gorgonia returns is o on inputs (new, or an equal node merged on purpose).
func applyChecked(o *op, inputs gorgonia.Nodes) (*gorgonia.Node, error) {
	for salt := 0; salt <= mergeRetries; salt++ {
		o.salt = salt
		n, err := gorgonia.ApplyOp(gorgoniaOp(o), inputs...)
		if err != nil {
			return nil, err
		}
		if u := unwrap(n.Op()); !mergedWrongly(n, inputs) && u != nil &&
			(u == o || u.spec.Name == o.spec.Name && u.spec.Params == o.spec.Params && u.salt == o.salt) {
			return n, nil
		}
	}
	return nil, fmt.Errorf("Gorgonia merged the node into another computation's %d times", mergeRetries+1)
}

// elementwise is build(a, b) for one of Gorgonia's element-wise binary ops
// (Add, Sub, HadamardProd, HadamardDiv, Mul by a scalar), whose node has
// the inputs a and b: built again on a fresh copy of a (fresh) when
// Gorgonia merged it into another computation's node.
func elementwise(build func(a, b *gorgonia.Node) (*gorgonia.Node, error), a, b *gorgonia.Node) (*gorgonia.Node, error) {
	n, err := build(a, b)
	for try := 0; err == nil && mergedWrongly(n, gorgonia.Nodes{a, b}); try++ {
		if try == mergeRetries {
			return nil, fmt.Errorf("ad: Gorgonia merged an element-wise node into another computation's %d times", try+1)
		}
		if a, err = fresh(a); err != nil {
			return nil, err
		}
		n, err = build(a, b)
	}
	return n, err
}

// freshCopies numbers Fresh's ops.
var freshCopies atomic.Uint64

// fresh is a copy of x as a node that no other node can be merged with
// (its op's hash takes a new number on every call): the value of x, the
// gradient of the upstream's.
func fresh(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ad: fresh: nil node")
	}
	spec := ReshapeSpec(x.Shape(), x.Shape())
	spec.Name = "Fresh"
	spec.Params = fmt.Sprintf("%v copy %d", x.Shape(), freshCopies.Add(1))
	spec.Backward = func(_ gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
		return gorgonia.Nodes{u}, nil
	}
	return Apply(spec, x)
}
