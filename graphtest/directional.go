package graphtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DirectionalOpts tune Directional. The zero value checks order 1.
type DirectionalOpts struct {
	// Order is the highest directional derivative checked (orders
	// 1..Order); 0 means 1.
	Order int
	// Eps is the step h along the unit direction v; 0 means 1e-5.
	Eps float64
	// RTol and ATol bound |AD − FD| <= ATol + RTol·max(|AD|, |FD|) at each
	// order; 0 means 1e-5 and 1e-8.
	RTol, ATol float64
	// Seed seeds the direction v.
	Seed uint64
}

// DirectionalOrder is one order's comparison in a DirectionalReport.
type DirectionalOrder struct {
	// Order is k, the order of the directional derivative compared (1 to
	// DirectionalOpts.Order).
	Order int
	// AD is d_k(θ), the k-th directional derivative along v built by
	// ad.Grad; FD is the central difference (d_{k−1}(θ+hv) −
	// d_{k−1}(θ−hv)) / 2h of the order below (d_0 = the cost).
	AD, FD float64
	// AbsErr = |AD − FD|, RelErr = AbsErr / max(|AD|, |FD|) (0 when both
	// are 0).
	AbsErr, RelErr float64
}

// DirectionalReport is what Directional measured.
type DirectionalReport struct {
	// Step is h, the step along the unit direction v.
	Step float64
	// Params is the number of elements of the wrt nodes, the length of v.
	Params int
	// Cost is the cost at θ.
	Cost float64
	// Orders are the comparisons of orders 1 to DirectionalOpts.Order, in
	// that order.
	Orders []DirectionalOrder
}

// String is the report as a table, one line per order.
func (r *DirectionalReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "directional check over %d parameters, h = %g, cost %.10g\n", r.Params, r.Step, r.Cost)
	for _, o := range r.Orders {
		fmt.Fprintf(&b, "order %d: AD %.12g, FD %.12g, relative error %.2e\n", o.Order, o.AD, o.FD, o.RelErr)
	}
	return b.String()
}

// Directional checks a whole model's derivatives of orders 1..opts.Order
// along one random direction: a unit vector v over all the elements of wrt
// (seeded normal draws, scaled to norm 1), d_1 = <∇cost, v>, and d_k =
// <∇d_{k−1}, v>, each built with ad.Grad on cost's graph and compared with
// the central difference of d_{k−1} along v. It costs three runs of the
// graph, at θ and at θ ± h·v, whatever the number of parameters (Check
// costs two per element and order): for a model, where Check is too slow.
//
// cost is a scalar node; wrt are its graph's input nodes (the parameters,
// say), each holding a float64 tensor bound with gorgonia.Let or
// gorgonia.WithValue, which are θ. Directional writes θ ± h·v into those
// tensors and restores them before it returns. The other inputs keep their
// values (a fixed batch). It returns the report and, when an order is off
// by more than the tolerance, an error naming it (the report is returned
// with it); other errors: cost or a wrt node nil or of another graph, a
// wrt node without a float64 tensor value, a bad option, a graph that
// cannot be differentiated or run (a failing op's own error, through
// ad.RunAll: an *ad.RunError), a run that changes θ's memory
// (TapeMachine aliasing).
//
// Directional adds nodes to cost's graph (the derivatives and v): run it on
// a graph built for the check, not on one a machine will later compile for
// training. It runs only the nodes the derivatives need; an op with a side
// effect on its run (BatchNorm's running statistics in training) has it
// three times.
//
// Pitfalls: the finite difference assumes the cost is smooth along the
// segment θ ± h·v. ReLU, max-pooling (a tie between two window elements, a
// different maximum after the step), Abs or a bilinear sample crossing a
// pixel boundary have kinks; a step across one gives an FD that matches
// neither side. Keep h small (the default 1e-5 moves each parameter by
// about 1e-5/√Params), pick inputs with distinct values (random, not
// constant or quantised images where max-pool windows tie) and try
// another Seed when only one draw fails. Use float64: float32's rounding
// error, ~1e-7·|d_{k−1}| / h, swamps the difference at any useful h, which
// is why a float32 wrt is an error. A piecewise-linear model has d_2 = 0
// along almost every direction, so ATol decides the higher orders there.
func Directional(cost *gorgonia.Node, wrt gorgonia.Nodes, opts DirectionalOpts) (*DirectionalReport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	theta, err := directionalInputs(cost, wrt)
	if err != nil {
		return nil, err
	}
	g := cost.Graph()
	// v: normal draws in wrt order, scaled to norm 1.
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	vs := make([]gorgonia.Value, len(wrt))
	var n2 float64
	params := 0
	for j, x := range theta {
		v := randomValue(tensor.Float64, x.Shape(), rng).(*tensor.Dense)
		for _, e := range v.Float64s() {
			n2 += e * e
		}
		vs[j] = v
		params += x.Shape().TotalSize()
	}
	for _, v := range vs {
		d := v.(*tensor.Dense).Float64s()
		for i := range d {
			d[i] /= math.Sqrt(n2)
		}
	}
	// d[0] = cost, d[k] = <∇d[k−1], v>.
	d := make(gorgonia.Nodes, o.Order+1)
	d[0] = cost
	for k := 1; k <= o.Order; k++ {
		gs, err := ad.Grad(d[k-1], wrt...)
		if err != nil {
			return nil, fmt.Errorf("graphtest: Directional: order %d gradient: %w", k, err)
		}
		if d[k], err = dot(g, gs, vs); err != nil {
			return nil, fmt.Errorf("graphtest: Directional: order %d: %w", k, err)
		}
	}
	vals := make([]gorgonia.Value, len(d))
	reads := make(gorgonia.Nodes, len(d))
	for k, n := range d {
		reads[k] = gorgonia.Read(n, &vals[k])
	}
	m, err := ad.NewTapeMachine(g.SubgraphRoots(reads...))
	if err != nil {
		return nil, fmt.Errorf("graphtest: Directional: %w", err)
	}
	defer m.Close()
	orig := make([][]float64, len(theta))
	for j, x := range theta {
		orig[j] = append([]float64(nil), x.Float64s()...)
	}
	defer func() {
		for j, x := range theta {
			copy(x.Float64s(), orig[j])
		}
	}()
	// at runs the graph at θ + s·v and returns d_0 .. d_Order there.
	at := func(s float64) ([]float64, error) {
		want := make([][]float64, len(theta))
		for j, x := range theta {
			p, v := x.Float64s(), vs[j].(*tensor.Dense).Float64s()
			for i := range p {
				p[i] = orig[j][i] + s*v[i]
			}
			want[j] = append([]float64(nil), p...)
		}
		m.Reset()
		if err := ad.RunAll(m); err != nil {
			at := "θ"
			if s != 0 {
				at = fmt.Sprintf("θ%+g·v", s)
			}
			return nil, fmt.Errorf("graphtest: Directional: running the graph at %s: %w", at, err)
		}
		for j, x := range theta {
			for i, e := range x.Float64s() {
				if math.Float64bits(e) != math.Float64bits(want[j][i]) {
					return nil, fmt.Errorf("graphtest: Directional: running the graph overwrote wrt %d (%s) element %v: %v, was %v (TapeMachine memory aliasing)",
						j, wrt[j].Name(), unravel(i, x.Shape()), e, want[j][i])
				}
			}
		}
		out := make([]float64, len(vals))
		for k, v := range vals {
			out[k] = scalarValue(v)
		}
		return out, nil
	}
	mid, err := at(0)
	if err != nil {
		return nil, err
	}
	plus, err := at(o.Eps)
	if err != nil {
		return nil, err
	}
	minus, err := at(-o.Eps)
	if err != nil {
		return nil, err
	}
	r := &DirectionalReport{Step: o.Eps, Params: params, Cost: mid[0]}
	var bad error
	for k := 1; k <= o.Order; k++ {
		row := DirectionalOrder{Order: k, AD: mid[k], FD: (plus[k-1] - minus[k-1]) / (2 * o.Eps)}
		row.AbsErr = math.Abs(row.AD - row.FD)
		row.RelErr = relErr(row.AD, row.FD)
		r.Orders = append(r.Orders, row)
		if !(row.AbsErr <= o.ATol+o.RTol*math.Max(math.Abs(row.AD), math.Abs(row.FD))) && bad == nil {
			bad = fmt.Errorf("graphtest: Directional: order %d derivative along v: AD %.10g, FD %.10g, relative error %.3g (RTol %g, ATol %g, h %g, %d parameters)",
				k, row.AD, row.FD, row.RelErr, o.RTol, o.ATol, o.Eps, params)
		}
	}
	return r, bad
}

// withDefaults checks the options and fills in the defaults.
func (o DirectionalOpts) withDefaults() (DirectionalOpts, error) {
	if o.Order < 0 || o.Eps < 0 || o.RTol < 0 || o.ATol < 0 || math.IsNaN(o.Eps+o.RTol+o.ATol) || math.IsInf(o.Eps, 0) {
		return o, fmt.Errorf("graphtest: Directional: Order, Eps, RTol and ATol must be finite and >= 0, got %d, %v, %v, %v", o.Order, o.Eps, o.RTol, o.ATol)
	}
	if o.Order == 0 {
		o.Order = 1
	}
	if o.Eps == 0 {
		o.Eps = 1e-5
	}
	if o.RTol == 0 {
		o.RTol = 1e-5
	}
	if o.ATol == 0 {
		o.ATol = 1e-8
	}
	return o, nil
}

// directionalInputs checks cost and wrt and returns the wrt nodes' values.
func directionalInputs(cost *gorgonia.Node, wrt gorgonia.Nodes) ([]*tensor.Dense, error) {
	if cost == nil {
		return nil, fmt.Errorf("graphtest: Directional: cost is nil")
	}
	if !cost.IsScalar() {
		return nil, fmt.Errorf("graphtest: Directional: cost %s has shape %v, want a scalar", cost.Name(), cost.Shape())
	}
	if len(wrt) == 0 {
		return nil, fmt.Errorf("graphtest: Directional: no wrt nodes")
	}
	theta := make([]*tensor.Dense, len(wrt))
	for j, n := range wrt {
		if n == nil {
			return nil, fmt.Errorf("graphtest: Directional: wrt %d is nil", j)
		}
		if n.Graph() != cost.Graph() {
			return nil, fmt.Errorf("graphtest: Directional: wrt %d (%s) is a node of another graph than cost", j, n.Name())
		}
		for _, prev := range wrt[:j] {
			if prev == n {
				return nil, fmt.Errorf("graphtest: Directional: wrt %d (%s) is listed twice", j, n.Name())
			}
		}
		x, ok := n.Value().(*tensor.Dense)
		switch {
		case n.Op() != nil:
			return nil, fmt.Errorf("graphtest: Directional: wrt %d (%s) is not an input node (a parameter or data node)", j, n.Name())
		case !ok || x == nil:
			return nil, fmt.Errorf("graphtest: Directional: wrt %d (%s) holds %T, want a float64 tensor (gorgonia.Let one)", j, n.Name(), n.Value())
		case x.Dtype() != tensor.Float64:
			return nil, fmt.Errorf("graphtest: Directional: wrt %d (%s) is %v; finite differences need float64 (build the model in float64 for the check)", j, n.Name(), x.Dtype())
		case x.IsView() || x.IsMaterializable() || !x.DataOrder().IsRowMajor():
			return nil, fmt.Errorf("graphtest: Directional: wrt %d (%s) holds a view; Let a contiguous tensor", j, n.Name())
		case x.Shape().TotalSize() == 0:
			return nil, fmt.Errorf("graphtest: Directional: wrt %d (%s) %v is empty", j, n.Name(), x.Shape())
		}
		theta[j] = x
	}
	return theta, nil
}

// relErr is |a − b| / max(|a|, |b|), 0 when both are 0.
func relErr(a, b float64) float64 {
	den := math.Max(math.Abs(a), math.Abs(b))
	if den == 0 {
		return 0
	}
	return math.Abs(a-b) / den
}
