package ad

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
)

// Gorgonia's ExprGraph.AddNode returns an existing node instead of the new
// one when their 32-bit tree hashes are equal and so are their op hashes,
// types, shapes and numbers of inputs; it does not compare the inputs
// themselves (docs/GORGONIA.md, "Pooled types and node merging"). Two
// different computations whose hashes collide are merged, and the second
// silently computes the first: in a third-order graph of tens of thousands
// of nodes, a few in a thousand builds. Apply, Builder's binary and unary
// ops (which most Backward functions of nn and gops are written with), and
// the Gorgonia ops of Grad's own rules (sums of gradient terms, products
// with the upstream gradient) check the node they get back and build it
// again so that its hash differs when it is another computation's. Not
// checked: Gorgonia's ops called directly (Sum, Reshape, and the gradient
// sums some Backward functions make with gorgonia.Add), and the nodes of
// Gorgonia's own derivative rules.

// mergeRetries is how often a node is built again after a merge into
// another computation's node: each retry changes its hash, so a second
// collision has a chance of 2^-32 or so.
const mergeRetries = 4

// lastID is the largest node ID in g, -1 if it has none: Gorgonia numbers
// nodes in the order it adds them and keeps g.AllNodes in that order.
func lastID(g *gorgonia.ExprGraph) int64 {
	all := g.AllNodes()
	if len(all) == 0 {
		return -1
	}
	return all[len(all)-1].ID()
}

// mergedWrongly reports whether n, the node Gorgonia returned for an op
// applied to kids when the graph's largest ID was before, is another
// computation's node: an older node (so a merge) with other inputs than
// kids. A new node is never one, whatever its inputs (Gorgonia gives a new
// node the graph's clone of a constant input, and Mul of a vector and a
// matrix its inputs swapped); a constant input equal to a constant kid in
// its hash counts as that kid (a constant's clone again), other inputs
// only if they are the kid.
func mergedWrongly(n *gorgonia.Node, before int64, kids gorgonia.Nodes) bool {
	if n.ID() > before || slices.Contains(kids, n) { // new, or an input returned as it is (Sum of a scalar)
		return false
	}
	got := children(n.Graph(), n)
	if len(got) != len(kids) {
		return true
	}
	for i, c := range got {
		if c != kids[i] && !(c.Hashcode() == kids[i].Hashcode() && isConstant(c) && isConstant(kids[i])) {
			return true
		}
	}
	return false
}

// isConstant says whether n is one of Gorgonia's constants: a node with an
// op and no inputs.
func isConstant(n *gorgonia.Node) bool {
	return n.Op() != nil && (n.Graph() == nil || len(children(n.Graph(), n)) == 0)
}

// applyChecked applies o to inputs, with o's salt changed until the node
// Gorgonia returns is o on inputs (new, or an equal node merged on purpose).
func applyChecked(o *op, inputs gorgonia.Nodes) (*gorgonia.Node, error) {
	g := inputs[0].Graph()
	for _, in := range inputs {
		ownHash(in)
	}
	for salt := 0; salt <= mergeRetries; salt++ {
		o.salt = salt
		before := lastID(g)
		n, err := gorgonia.ApplyOp(gorgoniaOp(o), inputs...)
		if err != nil {
			return nil, err
		}
		if u := unwrap(n.Op()); !mergedWrongly(n, before, inputs) && u != nil &&
			(u == o || u.spec.Name == o.spec.Name && u.spec.Params == o.spec.Params && u.salt == o.salt) {
			return n, nil
		}
	}
	return nil, fmt.Errorf("Gorgonia merged the node into another computation's %d times", mergeRetries+1)
}

// elementwise is build(a, b) for one of Gorgonia's binary ops (Add, Sub,
// HadamardProd, HadamardDiv, Mul), whose node has the inputs a and b:
// built again on a fresh copy of a (fresh) when Gorgonia merged it into
// another computation's node.
func elementwise(build func(a, b *gorgonia.Node) (*gorgonia.Node, error), a, b *gorgonia.Node) (*gorgonia.Node, error) {
	return checked(func(kids gorgonia.Nodes) (*gorgonia.Node, error) { return build(kids[0], kids[1]) }, a, b)
}

// unaryChecked is elementwise for one of Gorgonia's unary ops (Neg, Exp,
// Square, ...).
func unaryChecked(build func(x *gorgonia.Node) (*gorgonia.Node, error), x *gorgonia.Node) (*gorgonia.Node, error) {
	return checked(func(kids gorgonia.Nodes) (*gorgonia.Node, error) { return build(kids[0]) }, x)
}

// checked is build(kids), built again with kids[0] replaced by a fresh copy
// of it when Gorgonia merged the node into another computation's.
func checked(build func(gorgonia.Nodes) (*gorgonia.Node, error), kids ...*gorgonia.Node) (*gorgonia.Node, error) {
	g := kids[0].Graph()
	if g == nil {
		return build(kids)
	}
	for _, k := range kids {
		ownHash(k)
	}
	first := kids[0]
	for try := 0; ; try++ {
		before := lastID(g)
		n, err := build(kids)
		if err != nil || !mergedWrongly(n, before, kids) {
			return n, err
		}
		if try == mergeRetries {
			return nil, fmt.Errorf("ad: Gorgonia merged a node into another computation's %d times", try+1)
		}
		c, err := fresh(first, try)
		if err != nil {
			return nil, err
		}
		kids = append(gorgonia.Nodes{c}, kids[1:]...)
	}
}

// fresh is a copy of x as a node that no other computation's node can be
// merged with (its op's hash names x's ID and the try): the value of x,
// the gradient of the upstream's. The same retry asked again gives the
// same node, so equal computations still merge.
func fresh(x *gorgonia.Node, try int) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ad: fresh: nil node")
	}
	spec := ReshapeSpec(x.Shape(), x.Shape())
	spec.Name = "Fresh"
	spec.Params = fmt.Sprintf("%v of node %d, try %d", x.Shape(), x.ID(), try)
	spec.Backward = func(_ gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
		return gorgonia.Nodes{u}, nil
	}
	return Apply(spec, x)
}
