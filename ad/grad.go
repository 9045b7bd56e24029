package ad

import (
	"fmt"
	"slices"
	"strings"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Grad returns the symbolic gradients of the scalar node cost with respect
// to each node of wrt, as new nodes of cost's graph. It is a reverse-mode
// pass that keeps its own table of accumulated gradients, so it may be called
// again on its own results to any order: Grad(Sum(g ⊙ v), x) with
// g = Grad(f, x)[0] is the Hessian-vector product of f.
//
// It replaces gorgonia.Grad (v0.9.18), which caches each node's derivative
// from an earlier call and silently sums only some paths of a gradient of a
// gradient. Grad never reads or writes that cache.
//
// Beyond plain reverse mode, only edges that an op's DiffWRT marks are
// followed (comparison and sign nodes act as constants), zero-size nodes
// carry no gradient, and the defects of Gorgonia's own derivative rules
// listed in upstream.go are worked around: Slice's derivative op,
// OuterProd's rule (Mul matrix·vector uses it), scalar gradients that arrive
// as 0-d tensors, the derivative ops of SoftMax, LogSoftMax and Dropout, and
// the backward of Conv2d, which is refused. Gorgonia's Sum, HadamardProd
// (and Mul by a scalar), Add, Sub, division by a scalar and Square are
// differentiated by this package's own rules, which keep a scalar gradient
// spread over a shape until an op needs it as a tensor and build only the
// wanted gradients: the gradient of Sum(y ⊙ R) w.r.t. y is R itself.
//
// Grad ends with DistinctHashes on the graph, so that a machine from
// gorgonia.NewTapeMachine computes every node built so far; nodes built
// after it are covered by this package's NewTapeMachine.
//
// The seed is a constant 1 in cost's dtype. A wrt node that cost does not
// depend on gets a constant zero gradient of its shape, so that higher
// orders of linear functions come out as zeros rather than errors.
//
// Errors: cost is not a scalar; no wrt given; wrt nodes in another graph; an
// op on a path from wrt to cost that is not symbolically differentiable (the
// error names the op and its node, for example the backward of Gorgonia's
// Conv2d, SoftMax or MaxPool2D at order 2),
// or that has no gradient for an input on that path (its Backward returned
// nil there, as gops.PSRoIAlign does for its boxes).
func Grad(cost *gorgonia.Node, wrt ...*gorgonia.Node) (gorgonia.Nodes, error) {
	if cost == nil {
		return nil, fmt.Errorf("ad: Grad: cost is nil")
	}
	if !cost.IsScalar() {
		return nil, fmt.Errorf("ad: Grad: cost must be a scalar, got %v with shape %v", cost.Type(), cost.Shape())
	}
	seed, err := onesScalar(cost.Dtype())
	if err != nil {
		return nil, err
	}
	s, err := Constant(cost.Graph(), seed)
	if err != nil {
		return nil, err
	}
	return backprop(cost, s, wrt)
}

// VJP returns the vector-Jacobian products <gradOutput, ∂output/∂w> for each
// node w of wrt: the gradients of Sum(output ⊙ gradOutput) without building
// that sum, as torch.autograd.grad(output, wrt, grad_outputs) or
// output.backward(gradOutput). gradOutput has output's shape and dtype and
// may itself depend on wrt. Everything said of Grad holds; Grad(cost, wrt...)
// is VJP with a gradOutput of 1.
//
// Errors: as Grad, and gradOutput nil, in another graph, or of another
// shape or dtype than output.
func VJP(output, gradOutput *gorgonia.Node, wrt ...*gorgonia.Node) (gorgonia.Nodes, error) {
	if output == nil || gradOutput == nil {
		return nil, fmt.Errorf("ad: VJP: output or gradOutput is nil")
	}
	if dt := output.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("ad: VJP: output dtype %v is not float32 or float64", dt)
	}
	if gradOutput.Graph() != output.Graph() || !slices.Equal(gradOutput.Shape(), output.Shape()) ||
		gradOutput.Dtype() != output.Dtype() || gradOutput.IsScalar() != output.IsScalar() {
		return nil, fmt.Errorf("ad: VJP: gradOutput %v %v must be output's shape %v and dtype %v, in its graph",
			gradOutput.Shape(), gradOutput.Dtype(), output.Shape(), output.Dtype())
	}
	return backprop(output, gradOutput, wrt)
}

// backprop is the reverse pass from cost, whose gradient is seed.
func backprop(cost, seed *gorgonia.Node, wrt gorgonia.Nodes) (gorgonia.Nodes, error) {
	if len(wrt) == 0 {
		return nil, fmt.Errorf("ad: Grad: no wrt nodes given")
	}
	g := cost.Graph()
	for i, w := range wrt {
		if w == nil || w.Graph() != g {
			return nil, fmt.Errorf("ad: Grad: wrt[%d] is nil or in another graph", i)
		}
	}

	// order: every node cost depends on, children before parents.
	order := topoOrder(g, cost)

	// reaches[n]: n depends on some wrt node through differentiable edges.
	wrtSet := make(map[*gorgonia.Node]bool, len(wrt))
	for _, w := range wrt {
		wrtSet[w] = true
	}
	reaches := make(map[*gorgonia.Node]bool, len(order))
	for _, n := range order {
		if wrtSet[n] {
			reaches[n] = true
			continue
		}
		if isEmpty(n) {
			// A zero-size node carries no gradient: every backward is linear
			// in its upstream gradient. Stopping here also keeps empty
			// tensors out of Gorgonia's ops, which panic on them.
			continue
		}
		diff := diffWRT(n)
		for i, c := range children(g, n) {
			if diff[i] && reaches[c] {
				reaches[n] = true
				break
			}
		}
	}

	pending := map[*gorgonia.Node][]gradTerm{cost: {{n: seed}}}
	total := make(map[*gorgonia.Node]gradTerm)

	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		if !reaches[n] || len(pending[n]) == 0 {
			continue
		}
		gn, err := sumTerms(n, pending[n])
		if err != nil {
			return nil, err
		}
		delete(pending, n)
		total[n] = gn
		kids := children(g, n)
		if len(kids) == 0 || n.Op() == nil {
			continue
		}
		diff := diffWRT(n)
		want := make([]bool, len(kids))
		need := false
		for j, c := range kids {
			want[j] = diff[j] && reaches[c]
			need = need || want[j]
		}
		if !need {
			continue
		}
		grads, err := diffNode(n, kids, gn, want)
		if err != nil {
			return nil, err
		}
		for j, c := range kids {
			if !want[j] {
				continue
			}
			gj := grads[j].n
			if gj == nil {
				return nil, fmt.Errorf("ad: Grad: op %v has no gradient w.r.t. its input %d (%s), which depends on a wrt node", n.Op(), j, nodeName(c))
			}
			if grads[j].spread {
				if !gj.IsScalar() {
					return nil, fmt.Errorf("ad: Grad: op %v: a spread gradient of shape %v for its input %d (%s)", n.Op(), gj.Shape(), j, nodeName(c))
				}
			} else if gs, cs := gj.Shape(), c.Shape(); !gradShapeFits(n.Op(), gs, cs) {
				return nil, fmt.Errorf("ad: Grad: op %v returned a gradient of shape %v for its input %d (%s) of shape %v", n.Op(), gs, j, nodeName(c), cs)
			}
			if gd, cd := gj.Dtype(), c.Dtype(); gd != cd {
				return nil, fmt.Errorf("ad: Grad: op %v returned a gradient of dtype %v for its input %d (%s) of dtype %v", n.Op(), gd, j, nodeName(c), cd)
			}
			pending[c] = append(pending[c], grads[j])
		}
	}

	out := make(gorgonia.Nodes, len(wrt))
	for i, w := range wrt {
		if tt, ok := total[w]; ok {
			t, err := tt.dense(w)
			if err != nil {
				return nil, err
			}
			if !w.IsScalar() && !slices.Equal(t.Shape(), w.Shape()) {
				// A Gorgonia rule gave the gradient another shape of the same
				// size, (3, 1) for (3) say: hand it out in w's.
				var err error
				if t, err = Reshape(t, w.Shape()...); err != nil {
					return nil, err
				}
			}
			out[i] = t
			continue
		}
		z, err := zerosLike(w)
		if err != nil {
			return nil, err
		}
		out[i] = z
	}
	// Gorgonia's TapeMachine would compute one of two nodes whose hashes
	// collide for both (hashes.go); the only error, a Gorgonia without
	// the fields, is NewTapeMachine's to report.
	_, _ = DistinctHashes(g)
	return out, nil
}

// topoOrder lists the nodes root depends on, each after all of its children.
func topoOrder(g *gorgonia.ExprGraph, root *gorgonia.Node) gorgonia.Nodes {
	var order gorgonia.Nodes
	state := make(map[*gorgonia.Node]uint8) // 1 visiting, 2 done
	type frame struct {
		n    *gorgonia.Node
		kids gorgonia.Nodes
		next int
	}
	stack := []frame{{n: root, kids: children(g, root)}}
	state[root] = 1
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next < len(top.kids) {
			c := top.kids[top.next]
			top.next++
			if state[c] == 0 {
				state[c] = 1
				stack = append(stack, frame{n: c, kids: children(g, c)})
			}
			continue
		}
		state[top.n] = 2
		order = append(order, top.n)
		stack = stack[:len(stack)-1]
	}
	return order
}

// children returns n's arguments in order.
func children(g *gorgonia.ExprGraph, n *gorgonia.Node) gorgonia.Nodes {
	it := g.From(n.ID())
	if it == nil {
		return nil
	}
	kids := make(gorgonia.Nodes, 0, it.Len())
	for it.Next() {
		kids = append(kids, it.Node().(*gorgonia.Node))
	}
	return kids
}

// diffWRT says which of n's arguments a gradient flows to. An op that is not
// symbolically differentiable is reported as differentiable in every argument
// here, so that symDiff names it if a gradient ever needs to pass through.
func diffWRT(n *gorgonia.Node) []bool {
	k := len(children(n.Graph(), n))
	out := make([]bool, k)
	op := n.Op()
	if op == nil || k == 0 {
		return out
	}
	if sliceDerivativeDiffWRT(op, out) {
		return out
	}
	sd, ok := op.(gorgonia.SDOp)
	if !ok || !inheritedDiffWRT(sd, out) {
		for i := range out {
			out[i] = true
		}
	}
	return out
}

// diffNode differentiates one node for the upstream gradient gn: by
// rules.go's rules where one applies, otherwise by symDiff with gn made a
// tensor.
func diffNode(n *gorgonia.Node, kids gorgonia.Nodes, gn gradTerm, want []bool) ([]gradTerm, error) {
	if out, ok, err := ownRule(n, kids, gn, want); ok || err != nil {
		return out, err
	}
	d, err := gn.dense(n)
	if err != nil {
		return nil, wrapDiff(n, err)
	}
	grads, err := symDiff(n, kids, d, want)
	if err != nil {
		return nil, err
	}
	out := make([]gradTerm, len(grads))
	for j, gj := range grads {
		out[j] = gradTerm{n: gj}
	}
	return out, nil
}

// symDiff differentiates one node, applying the fixes for upstream rules
// listed on Grad.
func symDiff(n *gorgonia.Node, kids gorgonia.Nodes, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	op := n.Op()
	if wd, ok := op.(wantDiffer); ok { // ours: build the wanted gradients only
		grads, err := wd.symDiffWant(kids, n, grad, want)
		if err != nil {
			return nil, wrapDiff(n, err)
		}
		return grads, nil
	}
	if grads, ok, err := outerProdGrads(n, kids, grad); ok {
		return grads, err
	}
	if err := conv2dOrder2(n); err != nil {
		return nil, err
	}
	sd, ok := op.(gorgonia.SDOp)
	if !ok {
		return nil, fmt.Errorf("ad: Grad: op %v (%T) of node %s is not symbolically differentiable", op, op, nodeName(n))
	}
	grads, err := sd.SymDiff(kids, n, grad)
	if err != nil {
		return nil, wrapDiff(n, err)
	}
	if len(grads) != len(kids) {
		return nil, fmt.Errorf("ad: Grad: op %v returned %d gradients for %d inputs", op, len(grads), len(kids))
	}
	return sliceDerivativeGrads(op, grads), nil
}

func wrapDiff(n *gorgonia.Node, err error) error {
	return fmt.Errorf("ad: Grad: differentiating op %v of node %v: %w", n.Op(), nodeName(n), err)
}

// sumGrads adds up the gradient terms that reached n and gives the sum the
// scalar-ness of n (a 0-d tensor that reaches a scalar node becomes a scalar).
func sumGrads(n *gorgonia.Node, terms gorgonia.Nodes) (*gorgonia.Node, error) {
	for i, t := range terms {
		if s, ok, err := scalarGradient(t); ok {
			if err != nil {
				return nil, fmt.Errorf("ad: Grad: gradient of scalar node %v: %w", nodeName(n), err)
			}
			terms[i] = s
			continue
		}
		if n.IsScalar() && !t.IsScalar() {
			s, err := toScalar(t)
			if err != nil {
				return nil, fmt.Errorf("ad: Grad: gradient of scalar node %v: %w", nodeName(n), err)
			}
			terms[i] = s
		}
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	s := terms[0]
	for _, t := range terms[1:] {
		var err error
		if s, err = elementwise(gorgonia.Add, s, t); err != nil {
			return nil, fmt.Errorf("ad: Grad: summing gradients of node %v: %w", nodeName(n), err)
		}
	}
	return s, nil
}

// toScalar turns a one-element tensor node into a scalar node.
func toScalar(t *gorgonia.Node) (*gorgonia.Node, error) {
	if sz := t.Shape().TotalSize(); sz != 1 && t.Dims() != 0 {
		return nil, fmt.Errorf("gradient has shape %v, want one element", t.Shape())
	}
	v, err := gorgonia.Reshape(t, tensor.Shape{1})
	if err != nil {
		return nil, err
	}
	return gorgonia.Sum(v)
}

func onesScalar(dt tensor.Dtype) (gorgonia.Value, error) {
	switch dt {
	case tensor.Float64:
		return gorgonia.NewF64(1), nil
	case tensor.Float32:
		return gorgonia.NewF32(1), nil
	}
	return nil, fmt.Errorf("ad: Grad: cost dtype %v is not float32 or float64", dt)
}

// isEmpty reports whether n is a tensor with no elements (K = 0 boxes).
func isEmpty(n *gorgonia.Node) bool {
	s := n.Shape()
	return !n.IsScalar() && s.Dims() > 0 && s.TotalSize() == 0
}

// nodeName names n in errors: its name, or its id when it has none (the
// name of an unnamed node prints badly).
func nodeName(n *gorgonia.Node) string {
	if name := n.Name(); name != "" && !strings.Contains(name, "%!") {
		return name
	}
	return fmt.Sprintf("node %d", n.ID())
}

// gradShapeFits says whether a gradient of shape gs fits an input of shape
// cs: exactly for the ops of this package; for Gorgonia's, up to axes of
// size 1 (its rules give (3, 1) for (3), say), which Grad's result for a
// wrt node then drops.
func gradShapeFits(op gorgonia.Op, gs, cs tensor.Shape) bool {
	if ours(op) {
		return slices.Equal(gs, cs) || gs.IsScalarEquiv() && cs.IsScalarEquiv()
	}
	return slices.Equal(squeeze(gs), squeeze(cs))
}

// squeeze drops the axes of size 1.
func squeeze(s tensor.Shape) tensor.Shape {
	out := tensor.Shape{}
	for _, d := range s {
		if d != 1 {
			out = append(out, d)
		}
	}
	return out
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
