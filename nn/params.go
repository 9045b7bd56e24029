package nn

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Params is an ordered set of named parameter tensors, a model's weights:
// torch's Module.named_parameters() and state_dict(), keyed by the same
// names ("conv1.weight", "fc.bias"). Each value is a dense float32 or
// float64 tensor of at least one dimension and one element, owned by the
// set: Add stores a copy, Values hands out the owned tensors themselves
// (an optimizer updates them in place, as torch's optimizers update
// param.data).
//
// Node binds a parameter into a Gorgonia graph as an input node whose
// value is the owned tensor, with no copy: a training graph and a
// forward-only evaluation graph built from the same set see every in-place
// update on their next run. Grad differentiates a cost with respect to the
// parameters and hands the gradients back as tensors after a run, without
// gorgonia.Read wiring.
//
// A Params is not safe for concurrent use; nor is running a machine while
// the values are being updated.
type Params struct {
	names  []string
	values []*tensor.Dense
	index  map[string]int
}

// metadataKey is the safetensors header's reserved key for string
// metadata, never a tensor's name.
const metadataKey = "__metadata__"

// NewParams returns an empty parameter set.
func NewParams() *Params {
	return &Params{index: make(map[string]int)}
}

// Add appends a parameter named name holding a copy of value, as torch's
// Module.register_parameter(name, nn.Parameter(value)).
//
// Errors: p is nil; name is empty, "__metadata__" (reserved by the
// safetensors format of Save) or already in the set; value is nil, not a
// *tensor.Dense, not float32 or float64, 0-d (use shape [1]: Gorgonia's
// scalar ops reject 0-d tensors) or without elements.
func (p *Params) Add(name string, value tensor.Tensor) error {
	if p == nil || p.index == nil {
		return fmt.Errorf("nn: Params.Add: the parameter set is nil or not made by NewParams")
	}
	switch {
	case name == "":
		return fmt.Errorf("nn: Params.Add: a parameter's name must not be empty")
	case name == metadataKey:
		return fmt.Errorf("nn: Params.Add: the name %q is reserved by the safetensors format", name)
	case !utf8.ValidString(name):
		return fmt.Errorf("nn: Params.Add: the name %q is not valid UTF-8 (a safetensors header is JSON)", name)
	}
	if _, dup := p.index[name]; dup {
		return fmt.Errorf("nn: Params.Add: parameter %q is already in the set", name)
	}
	d, err := paramDense(value)
	if err != nil {
		return fmt.Errorf("nn: Params.Add: parameter %q: %w", name, err)
	}
	p.index[name] = len(p.names)
	p.names = append(p.names, name)
	p.values = append(p.values, cloneDense(d))
	return nil
}

// paramDense checks that t can be a parameter's value: a dense float32 or
// float64 tensor of at least one dimension and one element.
func paramDense(t tensor.Tensor) (*tensor.Dense, error) {
	d, ok := t.(*tensor.Dense)
	switch {
	case t == nil || (ok && d == nil):
		return nil, fmt.Errorf("the value is nil")
	case !ok:
		return nil, fmt.Errorf("the value must be a *tensor.Dense, got %T", t)
	case d.Dtype() != tensor.Float32 && d.Dtype() != tensor.Float64:
		return nil, fmt.Errorf("dtype %v is not float32 or float64", d.Dtype())
	case d.Dims() == 0:
		return nil, fmt.Errorf("a 0-d (scalar) parameter is not supported, use shape [1]")
	case d.Shape().TotalSize() == 0:
		return nil, fmt.Errorf("shape %v has no elements", d.Shape())
	case d.IsMasked():
		return nil, fmt.Errorf("a masked tensor is not supported")
	case flatData(d) == nil:
		return nil, fmt.Errorf("its backing array is shorter than shape %v", d.Shape())
	}
	return d, nil
}

// cloneDense returns a fresh contiguous copy of d (a view materialised).
func cloneDense(d *tensor.Dense) *tensor.Dense {
	shape := slices.Clone([]int(d.Shape()))
	var data any
	switch src := flatData(d).(type) {
	case []float32:
		data = slices.Clone(src)
	case []float64:
		data = slices.Clone(src)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

// flatData returns d's elements in row-major order ([]float32 or
// []float64): its own backing slice when d is contiguous and not a view, a
// copy otherwise; nil if d is of another dtype or holds fewer elements than
// its shape says.
func flatData(d *tensor.Dense) any {
	if d.IsView() || d.RequiresIterator() {
		if m, ok := d.Materialize().(*tensor.Dense); ok {
			d = m
		}
	}
	n := d.Shape().TotalSize()
	switch src := d.Data().(type) {
	case []float32:
		if len(src) >= n {
			return src[:n]
		}
	case []float64:
		if len(src) >= n {
			return src[:n]
		}
	}
	return nil
}

// Len returns the number of parameters, as len(list(module.parameters())).
func (p *Params) Len() int {
	if p == nil {
		return 0
	}
	return len(p.names)
}

// Names returns the parameters' names in insertion order (a new slice), as
// the keys of torch's named_parameters().
func (p *Params) Names() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.names)
}

// Values returns the owned parameter tensors themselves, in insertion
// order (a new slice of the same tensors), as torch's module.parameters():
// writing into them (an optimizer's in-place step) changes the parameters
// and every graph bound to them by Node.
func (p *Params) Values() []tensor.Tensor {
	if p == nil {
		return nil
	}
	out := make([]tensor.Tensor, len(p.values))
	for i, v := range p.values {
		out[i] = v
	}
	return out
}

// Value returns the owned tensor of the parameter called name (not a
// copy), as torch's dict(module.named_parameters())[name].
//
// Errors: p is nil or has no parameter called name.
func (p *Params) Value(name string) (tensor.Tensor, error) {
	i, err := p.lookup("Value", name)
	if err != nil {
		return nil, err
	}
	return p.values[i], nil
}

// SetValue copies v into the parameter called name, as torch's
// `with torch.no_grad(): param.copy_(v)` (torch would also convert the
// dtype; here it must match). Graphs bound to the parameter see the new
// values on their next run.
//
// Errors: p is nil or has no parameter called name; v is nil or not a
// *tensor.Dense; v's dtype or shape differs from the parameter's.
func (p *Params) SetValue(name string, v tensor.Tensor) error {
	i, err := p.lookup("SetValue", name)
	if err != nil {
		return err
	}
	if err := copyInto(p.values[i], v); err != nil {
		return fmt.Errorf("nn: Params.SetValue: parameter %q: %w", name, err)
	}
	return nil
}

// copyInto copies src's elements into dst after checking that src is a
// dense tensor of dst's dtype and shape.
func copyInto(dst *tensor.Dense, src tensor.Tensor) error {
	d, ok := src.(*tensor.Dense)
	switch {
	case src == nil || (ok && d == nil):
		return fmt.Errorf("the value is nil")
	case !ok:
		return fmt.Errorf("the value must be a *tensor.Dense, got %T", src)
	case d.Dtype() != dst.Dtype():
		return fmt.Errorf("dtype %v, the parameter's is %v", d.Dtype(), dst.Dtype())
	case !slices.Equal([]int(d.Shape()), []int(dst.Shape())):
		return fmt.Errorf("shape %v, the parameter's is %v", d.Shape(), dst.Shape())
	case d.IsMasked():
		return fmt.Errorf("a masked tensor is not supported")
	}
	switch s := flatData(d).(type) {
	case []float32:
		copy(dst.Data().([]float32), s)
	case []float64:
		copy(dst.Data().([]float64), s)
	default:
		return fmt.Errorf("its backing array is shorter than shape %v", d.Shape())
	}
	return nil
}

// lookup returns the index of the parameter called name.
func (p *Params) lookup(fn, name string) (int, error) {
	if p == nil {
		return 0, fmt.Errorf("nn: Params.%s: the parameter set is nil", fn)
	}
	i, ok := p.index[name]
	if !ok {
		return 0, fmt.Errorf("nn: Params.%s: no parameter %q in the set", fn, name)
	}
	return i, nil
}

// Node returns the input node of the parameter called name in graph g,
// creating it on the first call for g: a node named name, of the
// parameter's dtype and shape, whose value is the owned tensor itself.
// Later calls for g return the same node. Gorgonia's TapeMachine loads an
// input node's value into its registers without a copy on every run and
// never writes into it (inputs stay live for the whole program), and the
// LispMachine computes on the value itself too, so after an in-place update
// of the owned tensor (an optimizer's step) or SetValue, the next run sees
// the new values, ad.ReuseResults on or off: re-run a TapeMachine with
// Reset and RunAll; make a new LispMachine for each run (Gorgonia's
// LispMachine.Reset rewinds to the last node only, so Reset and RunAll
// recompute that node alone, from stale values), with
// gorgonia.ExecuteFwdOnly() when the graph holds Grad's nodes (the default
// LispMachine also back-propagates by itself from the last node, which
// fails or wastes a pass). Do not gorgonia.Let a
// parameter's node: that detaches it from the set (use SetValue).
//
// Errors: p is nil, g is nil, no parameter called name; g already holds a
// different input node named name of the parameter's shape and dtype
// (another set's parameter of the same name, a user's input, or this
// parameter's node after gorgonia.Let), which Gorgonia would merge with
// it: names must be unique among a graph's inputs.
func (p *Params) Node(g *gorgonia.ExprGraph, name string) (*gorgonia.Node, error) {
	i, err := p.lookup("Node", name)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("nn: Params.Node: parameter %q: the graph is nil", name)
	}
	for _, n := range g.ByName(name) {
		if p.owns(n, i) {
			return n, nil
		}
	}
	return p.newNode(g, i)
}

// Nodes returns every parameter's input node in g, in the set's order,
// creating those not yet in g, as Node does for each.
//
// Errors: as Node's.
func (p *Params) Nodes(g *gorgonia.ExprGraph) (gorgonia.Nodes, error) {
	if p == nil {
		return nil, fmt.Errorf("nn: Params.Nodes: the parameter set is nil")
	}
	if g == nil {
		return nil, fmt.Errorf("nn: Params.Nodes: the graph is nil")
	}
	nodes := p.existing(g)
	for i, n := range nodes {
		if n != nil {
			continue
		}
		var err error
		if nodes[i], err = p.newNode(g, i); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// existing returns the parameters' nodes already in g (nil where none),
// in one pass over g's nodes.
func (p *Params) existing(g *gorgonia.ExprGraph) gorgonia.Nodes {
	nodes := make(gorgonia.Nodes, len(p.names))
	for _, n := range g.AllNodes() {
		if n.Op() != nil {
			continue
		}
		if i, ok := p.index[n.Name()]; ok && nodes[i] == nil && p.owns(n, i) {
			nodes[i] = n
		}
	}
	return nodes
}

// owns reports whether n is parameter i's input node: named after it and
// holding its owned tensor.
func (p *Params) owns(n *gorgonia.Node, i int) bool {
	if n.Op() != nil || n.Name() != p.names[i] {
		return false
	}
	v, ok := n.Value().(*tensor.Dense)
	return ok && v == p.values[i]
}

// newNode adds parameter i's input node to g.
func (p *Params) newNode(g *gorgonia.ExprGraph, i int) (*gorgonia.Node, error) {
	name, v := p.names[i], p.values[i]
	n := gorgonia.NewTensor(g, v.Dtype(), v.Dims(), gorgonia.WithShape(v.Shape()...),
		gorgonia.WithName(name), gorgonia.WithValue(v))
	// Gorgonia's AddNode returns an existing input node of the same name,
	// type and shape instead of the new one.
	if !p.owns(n, i) {
		return nil, fmt.Errorf("nn: Params.Node: parameter %q: the graph already has an input node %q of shape %v "+
			"whose value is not the parameter's (another set's parameter or a user's input of that name, "+
			"or the parameter's node after gorgonia.Let); names must be unique among a graph's inputs",
			name, name, v.Shape())
	}
	return n, nil
}

// Grads are the gradients of a cost with respect to a parameter set, as
// Params.Grad builds them: torch's param.grad after loss.backward(), or
// torch.autograd.grad(loss, params, create_graph=True) as nodes.
type Grads struct {
	params *Params
	wrt    gorgonia.Nodes // each parameter's node in the graph (nil: none)
	nodes  gorgonia.Nodes
	read   []gorgonia.Value // filled by the Read nodes on each run
	own    []*tensor.Dense  // copies of read values that alias a parameter
}

// Grad returns the gradients of the scalar node cost with respect to every
// parameter that has a node in cost's graph (made by Node or Nodes), as
// ad.Grad(cost, nodes...) does, and wires their reads: after a machine
// over cost's graph ran, Grads.Values holds each gradient's value. Call it
// before making the machine (a machine runs the graph it was made with).
//
// A parameter without a node in the graph, or one that cost does not
// depend on at all (no path from cost to its node), gets no gradient: nil
// in Values and Nodes, as torch leaves param.grad None. A parameter that
// cost reaches only through edges without a derivative (comparisons,
// Sign, an argmax's indices) gets ad.Grad's constant zeros, as torch gives
// zeros there.
//
// Errors: p or cost is nil; cost is not a scalar; cost depends on no
// parameter of the set; ad.Grad's errors (an op on a path from a
// parameter to cost without a usable derivative, named).
func (p *Params) Grad(cost *gorgonia.Node) (*Grads, error) {
	if p == nil {
		return nil, fmt.Errorf("nn: Params.Grad: the parameter set is nil")
	}
	if cost == nil {
		return nil, fmt.Errorf("nn: Params.Grad: cost is nil")
	}
	if !cost.IsScalar() {
		return nil, fmt.Errorf("nn: Params.Grad: cost %q must be a scalar, got shape %v", cost.Name(), cost.Shape())
	}
	g := cost.Graph()
	nodes := p.existing(g)
	reach := reachable(g, cost)
	for n := range reach {
		if i, ok := p.index[n.Name()]; ok && n.Op() == nil && nodes[i] != n {
			return nil, fmt.Errorf("nn: Params.Grad: cost %q depends on an input node named %q that does not hold the "+
				"parameter's tensor (the parameter's node after gorgonia.Let, or another input of that name): "+
				"set a parameter with Params.SetValue, never gorgonia.Let", cost.Name(), n.Name())
		}
	}
	var wrt gorgonia.Nodes
	for i, n := range nodes {
		if n == nil || !reach[n] {
			nodes[i] = nil
			continue
		}
		wrt = append(wrt, n)
	}
	if len(wrt) == 0 {
		return nil, fmt.Errorf("nn: Params.Grad: cost %q depends on none of the %d parameters' nodes in its graph "+
			"(build the model from Params.Node or Params.Nodes of that graph)", cost.Name(), len(nodes))
	}
	grads, err := ad.Grad(cost, wrt...)
	if err != nil {
		return nil, fmt.Errorf("nn: Params.Grad: %w", err)
	}
	gs := &Grads{params: p, wrt: nodes, nodes: make(gorgonia.Nodes, len(nodes)),
		read: make([]gorgonia.Value, len(nodes)), own: make([]*tensor.Dense, len(nodes))}
	k := 0
	for i, n := range nodes {
		if n == nil {
			continue
		}
		gs.nodes[i] = grads[k]
		k++
		gorgonia.Read(gs.nodes[i], &gs.read[i])
	}
	return gs, nil
}

// reachable returns the nodes that root depends on, root included.
func reachable(g *gorgonia.ExprGraph, root *gorgonia.Node) map[*gorgonia.Node]bool {
	seen := map[*gorgonia.Node]bool{root: true}
	stack := gorgonia.Nodes{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		it := g.From(n.ID())
		for it.Next() {
			c := it.Node().(*gorgonia.Node)
			if !seen[c] {
				seen[c] = true
				stack = append(stack, c)
			}
		}
	}
	return seen
}

// Nodes returns the gradient nodes in the parameter set's order, nil for a
// parameter without a gradient (see Params.Grad): nodes of cost's graph
// that may be differentiated again (an R1 gradient penalty, MAML's inner
// step), as torch.autograd.grad(..., create_graph=True).
func (gs *Grads) Nodes() gorgonia.Nodes {
	if gs == nil {
		return nil
	}
	return slices.Clone(gs.nodes)
}

// Detached returns the names of the parameters whose node in the graph no
// longer holds the parameter's tensor: re-bound with gorgonia.Let after
// Grad. The graph then computes with the Let value and their gradients in
// Values are at that value, not at the parameter an optimizer updates. Use
// Params.SetValue instead; an empty result means every gradient is the
// parameters' own.
func (gs *Grads) Detached() []string {
	if gs == nil {
		return nil
	}
	var names []string
	for i, n := range gs.wrt {
		if n != nil && !gs.params.owns(n, i) {
			names = append(names, gs.params.names[i])
		}
	}
	return names
}

// Values returns each gradient's value from the last run of a machine over
// the graph, in the parameter set's order, with its parameter's dtype and
// shape: torch's [p.grad for p in module.parameters()]. An entry is nil
// for a parameter without a gradient, and every entry is nil before the
// first run.
//
// A value is valid until the next run of a machine over the graph, which
// may overwrite it in place (the TapeMachine copies each gradient into the
// same tensor on every run; on the LispMachine with ad.ReuseResults on,
// an op's result memory is rewritten two runs later): clone it to keep it.
// It never shares memory with a parameter (on the LispMachine a gradient
// that is a parameter's own value, such as ∂Σ(a⊙b)/∂a = b, is copied), so
// an optimizer may update the parameters in place while reading the
// gradients. Do not write into the values.
func (gs *Grads) Values() []tensor.Tensor {
	if gs == nil {
		return nil
	}
	out := make([]tensor.Tensor, len(gs.read))
	for i, v := range gs.read {
		d, ok := v.(*tensor.Dense)
		if !ok || d == nil {
			continue
		}
		if gs.params.aliases(d) {
			if gs.own[i] == nil || !slices.Equal([]int(gs.own[i].Shape()), []int(d.Shape())) {
				gs.own[i] = cloneDense(d)
			} else {
				_ = copyInto(gs.own[i], d) // same dtype and shape: cannot fail
			}
			d = gs.own[i]
		}
		out[i] = d
	}
	return out
}

// aliases reports whether d's memory overlaps a parameter's.
func (p *Params) aliases(d *tensor.Dense) bool {
	lo, hi := memRange(d)
	for _, v := range p.values {
		vlo, vhi := memRange(v)
		if lo < vhi && vlo < hi {
			return true
		}
	}
	return false
}

// memRange is the address range of d's backing array.
func memRange(d *tensor.Dense) (lo, hi uintptr) {
	lo = d.Uintptr()
	return lo, lo + d.MemSize()
}
