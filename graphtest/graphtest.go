// Package graphtest checks the derivatives of any function that builds a
// Gorgonia graph, at every order, against central finite differences, and
// checks that Gorgonia's two VMs agree on it.
//
// Check compares derivatives of orders 1..k with finite differences,
// element by element; Directional compares a whole model's directional
// derivatives of orders 1..k along one random direction, in three runs of
// its graph whatever the parameter count, and returns a DirectionalReport
// (its pitfalls, kinks and float32, are documented there). CheckVMs
// compares the TapeMachine with the LispMachine, CheckDeterministic the
// results under several GOMAXPROCS, and CheckEmpty a function's result and
// gradients on inputs without elements; a failed finite-difference
// comparison is a *Mismatch. Inputs, Float32, Eval and Floats are the
// helpers they share: input nodes from tensors, float32 copies, running a
// graph and reading a value. Package conformance (graphtest/conformance)
// runs all of them over a table of ops.
//
// Gradients come from ad.Grad. Order 1 compares the gradient of <R, f(x)>
// (R a random tensor shaped like f's output) with finite differences of
// <R, f(x)>; order k compares the gradient of s_k = Σ_i <g_i, v_i>, where g
// is the order-(k-1) gradient and v random, with finite differences of s_k
// evaluated through the graph. Each order is therefore checked against the
// one below it, one finite difference at a time.
package graphtest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Func builds the graph under test from its input nodes (one per input, in
// order, with the inputs' dtypes and shapes) and returns the output node, of
// any shape.
type Func func(in gorgonia.Nodes) (*gorgonia.Node, error)

// Options tune a check. The zero value checks order 1 w.r.t. every input.
type Options struct {
	// Order is the highest derivative order checked (orders 1..Order); 0
	// means 1.
	Order int
	// Wrt lists the indices of the inputs to differentiate; nil means all.
	// The others are fed to f as constants of the check (boxes, say).
	Wrt []int
	// Eps is the finite-difference step; 0 means 1e-6.
	Eps float64
	// RTol and ATol bound |analytic - numeric| <= ATol + RTol·max(|a|, |n|);
	// 0 means 1e-5 and 1e-7.
	RTol, ATol float64
	// Seed seeds the random contraction tensors.
	Seed uint64
}

// rowMajorCopy copies x's elements in row-major order (a view or a
// transposed tensor's Data() is its storage, not its elements).
func rowMajorCopy(x *tensor.Dense) *tensor.Dense {
	if x.IsMaterializable() || x.IsView() || !x.DataOrder().IsRowMajor() {
		return x.Materialize().(*tensor.Dense)
	}
	return x.Clone().(*tensor.Dense)
}

// validate checks the function, the options and the inputs before a check
// starts.
func (o Options) validate(f Func, inputs []*tensor.Dense) error {
	if f == nil {
		return fmt.Errorf("graphtest: f is nil")
	}
	for i, x := range inputs {
		switch {
		case x == nil:
			return fmt.Errorf("graphtest: input %d is nil", i)
		case x.Dtype() != tensor.Float64 && x.Dtype() != tensor.Float32:
			return fmt.Errorf("graphtest: input %d is %v; want float32 or float64", i, x.Dtype())
		case x.Shape().TotalSize() == 0:
			// Gorgonia's ops crash on empty tensors, in goroutines that
			// recover cannot reach.
			return fmt.Errorf("graphtest: input %d %v is empty", i, x.Shape())
		}
	}
	for _, i := range o.Wrt {
		if i < 0 || i >= len(inputs) {
			return fmt.Errorf("graphtest: Wrt index %d out of range for %d inputs", i, len(inputs))
		}
	}
	if o.Eps < 0 || o.RTol < 0 || o.ATol < 0 || math.IsNaN(o.Eps+o.RTol+o.ATol) {
		return fmt.Errorf("graphtest: Eps, RTol and ATol must be >= 0, got %v, %v, %v", o.Eps, o.RTol, o.ATol)
	}
	return nil
}

func (o Options) withDefaults(n int) Options {
	if o.Order <= 0 {
		o.Order = 1
	}
	if o.Wrt == nil {
		for i := 0; i < n; i++ {
			o.Wrt = append(o.Wrt, i)
		}
	}
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
	if o.RTol == 0 {
		o.RTol = 1e-5
	}
	if o.ATol == 0 {
		o.ATol = 1e-7
	}
	return o
}

// Mismatch is the error a failed numeric check returns.
type Mismatch struct {
	Order    int     // derivative order
	Input    int     // input index
	Name     string  // input node name
	Index    []int   // element coordinates
	Analytic float64 // ad.Grad's value
	Numeric  float64 // central finite difference
}

// Error names the order, the input, the element and both values.
func (m *Mismatch) Error() string {
	return fmt.Sprintf("graphtest: order %d derivative w.r.t. input %d (%s) element %v: analytic %.10g, numeric %.10g",
		m.Order, m.Input, m.Name, m.Index, m.Analytic, m.Numeric)
}

// harness is one graph: the inputs, the scalar s_k of each order and the
// gradient nodes of each order, with a TapeMachine to evaluate them.
type harness struct {
	g       *gorgonia.ExprGraph
	in      gorgonia.Nodes
	vals    []*tensor.Dense // the inputs' values, bound to in
	want    [][]float64     // what vals must hold (float64 inputs)
	out     *gorgonia.Node
	outVal  gorgonia.Value
	scalars []gorgonia.Value   // s_0 .. s_{Order-1}
	grads   [][]gorgonia.Value // grads[k][j]: order k+1 gradient w.r.t. Wrt[j]
	m       gorgonia.VM
}

func names(i int) string { return fmt.Sprintf("in%d", i) }

// newHarness builds f over copies of inputs with the scalars and gradients of
// orders 1..order.
func newHarness(f Func, inputs []*tensor.Dense, o Options, order int) (*harness, error) {
	h := &harness{g: gorgonia.NewGraph()}
	for i, x := range inputs {
		v := rowMajorCopy(x)
		h.vals = append(h.vals, v)
		h.want = append(h.want, floats(v))
		var n *gorgonia.Node
		if v.Shape().Dims() == 0 || v.IsScalar() {
			return nil, fmt.Errorf("graphtest: input %d is a scalar; pass a 1-element tensor", i)
		}
		n = gorgonia.NewTensor(h.g, v.Dtype(), v.Shape().Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(names(i)))
		h.in = append(h.in, n)
	}
	out, err := f(h.in)
	if err != nil {
		return nil, fmt.Errorf("graphtest: building f: %w", err)
	}
	if out == nil {
		return nil, fmt.Errorf("graphtest: f returned a nil node")
	}
	h.out = out
	gorgonia.Read(out, &h.outVal)
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	wrt := make(gorgonia.Nodes, len(o.Wrt))
	for j, i := range o.Wrt {
		wrt[j] = h.in[i]
	}
	// s_0 = <R, f(x)>
	s, err := contract(h.g, gorgonia.Nodes{out}, rng)
	if err != nil {
		return nil, err
	}
	h.scalars = make([]gorgonia.Value, order)
	h.grads = make([][]gorgonia.Value, order)
	for k := 0; k < order; k++ {
		gorgonia.Read(s, &h.scalars[k])
		gs, err := ad.Grad(s, wrt...)
		if err != nil {
			return nil, fmt.Errorf("graphtest: order %d gradient: %w", k+1, err)
		}
		h.grads[k] = make([]gorgonia.Value, len(gs))
		for j, gn := range gs {
			gorgonia.Read(gn, &h.grads[k][j])
		}
		if k+1 < order {
			if s, err = contract(h.g, gs, rng); err != nil {
				return nil, err
			}
		}
	}
	vm, err := ad.NewTapeMachine(h.g)
	if err != nil {
		return nil, err
	}
	h.m = vm
	return h, nil
}

// contract returns Σ_j <ns[j], r_j> with r_j random normal tensors.
func contract(g *gorgonia.ExprGraph, ns gorgonia.Nodes, rng *rand.Rand) (*gorgonia.Node, error) {
	rs := make([]gorgonia.Value, len(ns))
	for j, n := range ns {
		if n.IsScalar() {
			rs[j] = randomValue(n.Dtype(), nil, rng)
		} else {
			rs[j] = randomValue(n.Dtype(), n.Shape(), rng)
		}
	}
	return dot(g, ns, rs)
}

// dot returns Σ_j <ns[j], rs[j]>, each rs[j] a constant of ns[j]'s shape
// (a scalar for a scalar node); empty nodes add nothing.
func dot(g *gorgonia.ExprGraph, ns gorgonia.Nodes, rs []gorgonia.Value) (*gorgonia.Node, error) {
	var total *gorgonia.Node
	for j, n := range ns {
		var term *gorgonia.Node
		var err error
		if n.IsScalar() {
			var c *gorgonia.Node
			if c, err = ad.Constant(g, rs[j]); err == nil {
				term, err = gorgonia.Mul(n, c)
			}
		} else {
			if n.Shape().TotalSize() == 0 {
				continue
			}
			var c, p *gorgonia.Node
			if c, err = ad.Constant(g, rs[j]); err == nil {
				if p, err = gorgonia.HadamardProd(n, c); err == nil {
					term, err = gorgonia.Sum(p)
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("graphtest: contracting %v: %w", n.Name(), err)
		}
		if total == nil {
			total = term
		} else if total, err = gorgonia.Add(total, term); err != nil {
			return nil, fmt.Errorf("graphtest: contracting: %w", err)
		}
	}
	if total == nil {
		return nil, fmt.Errorf("graphtest: nothing to contract (all outputs empty)")
	}
	return total, nil
}

func randomValue(dt tensor.Dtype, shape tensor.Shape, rng *rand.Rand) gorgonia.Value {
	if shape == nil {
		if dt == tensor.Float32 {
			return gorgonia.NewF32(float32(rng.NormFloat64()))
		}
		return gorgonia.NewF64(rng.NormFloat64())
	}
	n := shape.TotalSize()
	if dt == tensor.Float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(rng.NormFloat64())
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))
}

// run evaluates the graph and checks that it left its inputs as they were:
// Gorgonia's TapeMachine can write into an input's memory (for example
// through Reshape of an input followed by Square), which would corrupt every
// later evaluation.
func (h *harness) run() error {
	h.m.Reset()
	if err := h.m.RunAll(); err != nil {
		return fmt.Errorf("graphtest: running the graph: %w", err)
	}
	for i, v := range h.vals {
		got := floats(v)
		for e := range got {
			if math.Float64bits(got[e]) != math.Float64bits(h.want[i][e]) {
				return fmt.Errorf("graphtest: running the graph overwrote input %d (%s) element %v: %v, was %v (TapeMachine memory aliasing)",
					i, names(i), unravel(e, v.Shape()), got[e], h.want[i][e])
			}
		}
	}
	return nil
}

// set changes element e of input i, in its bound value and in what the graph
// must leave there.
func (h *harness) set(i, e int, v float64) {
	h.vals[i].Data().([]float64)[e] = v
	h.want[i][e] = v
}

func (h *harness) close() { h.m.Close() }

func scalarValue(v gorgonia.Value) float64 {
	switch x := v.(type) {
	case *gorgonia.F64:
		return float64(*x)
	case *gorgonia.F32:
		return float64(*x)
	case tensor.Tensor:
		switch d := x.Data().(type) {
		case []float64:
			return d[0]
		case []float32:
			return float64(d[0])
		case float64:
			return d
		case float32:
			return float64(d)
		}
	}
	return math.NaN()
}

// Floats returns the elements of v (a float32, float64 or int tensor, or a
// float scalar) as new float64s, for comparing values of either dtype;
// nil for a nil or empty v or other data.
func Floats(v gorgonia.Value) []float64 { return floats(v) }

// floats returns v's elements as float64s (a copy for float32).
func floats(v gorgonia.Value) []float64 {
	if v == nil {
		return nil
	}
	switch x := v.(type) {
	case *gorgonia.F64, *gorgonia.F32:
		return []float64{scalarValue(x)}
	case tensor.Tensor:
		if x.Shape().TotalSize() == 0 {
			return nil
		}
		switch d := x.Data().(type) {
		case []int:
			out := make([]float64, len(d))
			for i, v := range d {
				out[i] = float64(v)
			}
			return out
		case []float64:
			return append([]float64(nil), d...)
		case []float32:
			out := make([]float64, len(d))
			for i, f := range d {
				out[i] = float64(f)
			}
			return out
		case float64:
			return []float64{d}
		case float32:
			return []float64{float64(d)}
		}
	}
	return nil
}

// Check verifies the derivatives of f at inputs, orders 1..o.Order, w.r.t.
// the inputs o.Wrt, against central finite differences. Inputs must be
// float64 tensors (they are copied). It returns a *Mismatch naming the first
// element that disagrees, or another error if the graph cannot be built or
// run.
func Check(f Func, inputs []*tensor.Dense, o Options) error {
	if err := o.validate(f, inputs); err != nil {
		return err
	}
	o = o.withDefaults(len(inputs))
	for i, x := range inputs {
		if x.Dtype() != tensor.Float64 {
			return fmt.Errorf("graphtest: input %d is %v; numeric checks need float64", i, x.Dtype())
		}
	}
	h, err := newHarness(f, inputs, o, o.Order)
	if err != nil {
		return err
	}
	defer h.close()
	if err := h.run(); err != nil {
		return err
	}
	analytic := make([][][]float64, o.Order)
	for k := range analytic {
		analytic[k] = make([][]float64, len(o.Wrt))
		for j := range o.Wrt {
			analytic[k][j] = floats(h.grads[k][j])
		}
	}
	for j, i := range o.Wrt {
		for e := range h.want[i] {
			orig := h.want[i][e]
			h.set(i, e, orig+o.Eps)
			if err := h.run(); err != nil {
				return err
			}
			plus := make([]float64, o.Order)
			for k := range plus {
				plus[k] = scalarValue(h.scalars[k])
			}
			h.set(i, e, orig-o.Eps)
			if err := h.run(); err != nil {
				return err
			}
			h.set(i, e, orig)
			for k := 0; k < o.Order; k++ {
				num := (plus[k] - scalarValue(h.scalars[k])) / (2 * o.Eps)
				var ana float64
				if a := analytic[k][j]; len(a) > 0 {
					ana = a[e]
				}
				if !(math.Abs(ana-num) <= o.ATol+o.RTol*math.Max(math.Abs(ana), math.Abs(num))) {
					return &Mismatch{Order: k + 1, Input: i, Name: names(i), Index: unravel(e, h.vals[i].Shape()), Analytic: ana, Numeric: num}
				}
			}
		}
	}
	return nil
}

func unravel(e int, s tensor.Shape) []int {
	idx := make([]int, len(s))
	for d := len(s) - 1; d >= 0; d-- {
		if s[d] > 0 {
			idx[d] = e % s[d]
			e /= s[d]
		}
	}
	return idx
}

// CheckVMs builds f twice and checks that the TapeMachine (with ad.Grad)
// and the LispMachine (with its own backward pass, through each op's
// DoDiff) agree on the output and on the first-order gradients of <R, f(x)>
// w.r.t. the inputs o.Wrt, within o.RTol and o.ATol. Inputs may be float32
// or float64.
func CheckVMs(f Func, inputs []*tensor.Dense, o Options) error {
	if err := o.validate(f, inputs); err != nil {
		return err
	}
	o = o.withDefaults(len(inputs))
	h, err := newHarness(f, inputs, o, 1)
	if err != nil {
		return err
	}
	defer h.close()
	if err := h.run(); err != nil {
		return err
	}

	// The same function on the LispMachine.
	g := gorgonia.NewGraph()
	var in gorgonia.Nodes
	for i, x := range inputs {
		v := rowMajorCopy(x)
		in = append(in, gorgonia.NewTensor(g, v.Dtype(), v.Shape().Dims(), gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v), gorgonia.WithName(names(i))))
	}
	out, err := f(in)
	if err != nil {
		return fmt.Errorf("graphtest: building f: %w", err)
	}
	if out == nil {
		return fmt.Errorf("graphtest: f returned a nil node")
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	if _, err := contract(g, gorgonia.Nodes{out}, rng); err != nil {
		return err
	}
	lm := gorgonia.NewLispMachine(g)
	defer lm.Close()
	if err := lm.RunAll(); err != nil {
		return fmt.Errorf("graphtest: LispMachine: %w", err)
	}
	if err := compare("output", floats(h.outVal), floats(out.Value()), o); err != nil {
		return err
	}
	for j, i := range o.Wrt {
		lg, err := in[i].Grad()
		if err != nil {
			return fmt.Errorf("graphtest: LispMachine gradient of input %d: %w", i, err)
		}
		if err := compare(fmt.Sprintf("gradient w.r.t. input %d", i), floats(h.grads[0][j]), floats(lg), o); err != nil {
			return err
		}
	}
	return nil
}

func compare(what string, tape, lisp []float64, o Options) error {
	if len(tape) != len(lisp) {
		return fmt.Errorf("graphtest: %s: TapeMachine has %d values, LispMachine %d", what, len(tape), len(lisp))
	}
	for e := range tape {
		if !(math.Abs(tape[e]-lisp[e]) <= o.ATol+o.RTol*math.Max(math.Abs(tape[e]), math.Abs(lisp[e]))) {
			return fmt.Errorf("graphtest: %s element %d: TapeMachine %.10g, LispMachine %.10g", what, e, tape[e], lisp[e])
		}
	}
	return nil
}

// Eval runs g once on a TapeMachine and returns the values of nodes, as
// float64 (float32 values converted, int indices too, a scalar as one
// element). The values are read while the graph runs (gorgonia.Read),
// because after the run an intermediate node's Value may already hold
// memory a later op reused. Errors: a nil node, a node of another graph, a
// graph Gorgonia cannot compile (one without input nodes, say) or run.
func Eval(g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) (out [][]float64, err error) {
	if g == nil {
		return nil, fmt.Errorf("graphtest: Eval: the graph is nil")
	}
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		if n == nil || n.Graph() != g {
			return nil, fmt.Errorf("graphtest: Eval: node %d is nil or in another graph", i)
		}
		if !n.IsScalar() && n.Shape().TotalSize() == 0 {
			continue // nothing to read (and a Read of an empty node breaks a second Eval)
		}
		gorgonia.Read(n, &vals[i])
	}
	defer func() {
		if r := recover(); r != nil { // a kernel's panic while running
			out, err = nil, fmt.Errorf("graphtest: Eval: %v", r)
		}
	}()
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, fmt.Errorf("graphtest: Eval: %w", err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, fmt.Errorf("graphtest: Eval: %w", err)
	}
	out = make([][]float64, len(vals))
	for i, v := range vals {
		if !nodes[i].IsScalar() && nodes[i].Shape().TotalSize() == 0 {
			out[i] = []float64{}
			continue
		}
		if v == nil {
			return nil, fmt.Errorf("graphtest: Eval: node %d was not evaluated", i)
		}
		out[i] = floats(v)
	}
	return out, nil
}
