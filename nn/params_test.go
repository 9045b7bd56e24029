package nn_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// denseOf makes a tensor of dtype dt and shape from float64 values.
func denseOf(dt tensor.Dtype, vals []float64, shape ...int) *tensor.Dense {
	if dt == tensor.Float32 {
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(slices.Clone(vals)))
}

// seq is n values spread over about [-1, 1], distinct per seed.
func seq(n int, seed float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Sin(seed + 0.7*float64(i))
	}
	return out
}

var dtypes = []tensor.Dtype{tensor.Float32, tensor.Float64}

func tolFor(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 2e-6
	}
	return 1e-13
}

func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); d > tol*(1+math.Abs(want[i])) || math.IsNaN(got[i]) {
			t.Fatalf("%s[%d] = %v, want %v (diff %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// machineKinds are the two machines every graph test runs on.
var machineKinds = []string{"tape", "lisp"}

// newRunner returns a function that runs g once more on a machine of the
// kind: the TapeMachine made once and re-run with Reset and RunAll, a new
// LispMachine (forward only) per run, since Gorgonia's LispMachine runs
// once (TestParamsLispMachineRunsOnce).
func newRunner(t *testing.T, kind string, g *gorgonia.ExprGraph) func() {
	t.Helper()
	if kind == "lisp" {
		return func() {
			t.Helper()
			m := gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly())
			defer m.Close()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := gorgonia.NewTapeMachine(g)
	t.Cleanup(func() { m.Close() })
	return func() {
		t.Helper()
		m.Reset()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestParamsAddBadInput(t *testing.T) {
	good := denseOf(tensor.Float32, []float64{1, 2}, 2)
	sparse := tensor.CSRFromCoord(tensor.Shape{2, 2}, []int{0}, []int{1}, []float64{1})
	var nilDense *tensor.Dense
	view, err := denseOf(tensor.Float64, seq(6, 0), 2, 3).Slice(nil, gorgonia.S(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, param string
		p           *nn.Params
		value       tensor.Tensor
		want        string // "" for success
	}{
		{"ok", "fc.weight", nn.NewParams(), good, ""},
		{"view", "v", nn.NewParams(), view, ""},
		{"nil set", "w", nil, good, "nil or not made by NewParams"},
		{"zero set", "w", &nn.Params{}, good, "nil or not made by NewParams"},
		{"empty name", "", nn.NewParams(), good, "must not be empty"},
		{"reserved name", "__metadata__", nn.NewParams(), good, "reserved"},
		{"nil value", "w", nn.NewParams(), nil, "nil"},
		{"typed nil value", "w", nn.NewParams(), nilDense, "nil"},
		{"sparse value", "w", nn.NewParams(), sparse, "*tensor.Dense"},
		{"int dtype", "w", nn.NewParams(), tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2})), "not float32 or float64"},
		{"0-d", "w", nn.NewParams(), tensor.New(tensor.FromScalar(1.5)), "0-d"},
		{"no elements", "w", nn.NewParams(), tensor.New(tensor.WithShape(0, 3), tensor.Of(tensor.Float32)), "no elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Add(tc.param, tc.value)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.p.Len() != 1 {
					t.Fatalf("Len = %d after Add", tc.p.Len())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if tc.param != "" && !strings.Contains(err.Error(), "Params.Add") {
				t.Fatalf("error %v does not name Params.Add", err)
			}
			if tc.p.Len() != 0 {
				t.Fatalf("Len = %d after a failed Add", tc.p.Len())
			}
		})
	}
	p := nn.NewParams()
	if err := p.Add("w", good); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("w", good); err == nil || !strings.Contains(err.Error(), `"w" is already`) {
		t.Fatalf("duplicate name: error %v", err)
	}
}

func TestParamsAccessors(t *testing.T) {
	for _, dt := range dtypes {
		t.Run(dt.String(), func(t *testing.T) {
			p := nn.NewParams()
			w := denseOf(dt, seq(6, 1), 2, 3)
			if err := p.Add("fc.weight", w); err != nil {
				t.Fatal(err)
			}
			view, err := denseOf(dt, seq(6, 2), 3, 2).Slice(nil, gorgonia.S(0))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Add("fc.bias", view); err != nil {
				t.Fatal(err)
			}
			if p.Len() != 2 || !slices.Equal(p.Names(), []string{"fc.weight", "fc.bias"}) {
				t.Fatalf("Len %d, Names %v", p.Len(), p.Names())
			}
			names := p.Names()
			names[0] = "changed"
			if p.Names()[0] != "fc.weight" {
				t.Fatal("Names returned the set's own slice")
			}
			// Add copied: changing w leaves the parameter alone.
			addTo(w, 5)
			v, err := p.Value("fc.weight")
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "fc.weight", graphtest.Floats(v), seq(6, 1), tolFor(dt))
			b, err := p.Value("fc.bias")
			if err != nil {
				t.Fatal(err)
			}
			sb := seq(6, 2)
			assertClose(t, "fc.bias (a column view)", graphtest.Floats(b), []float64{sb[0], sb[2], sb[4]}, tolFor(dt))
			if !slices.Equal([]int(b.Shape()), []int{3}) || b.Dtype() != dt {
				t.Fatalf("fc.bias: shape %v dtype %v", b.Shape(), b.Dtype())
			}
			// Values are the owned tensors, in order.
			vals := p.Values()
			if len(vals) != 2 || vals[0] != v || vals[1] != b {
				t.Fatal("Values are not the tensors Value returns, in order")
			}
			// SetValue copies into the owned tensor.
			if err := p.SetValue("fc.bias", denseOf(dt, []float64{7, 8, 9}, 3)); err != nil {
				t.Fatal(err)
			}
			assertClose(t, "fc.bias after SetValue", graphtest.Floats(b), []float64{7, 8, 9}, 0)
		})
	}
}

func TestParamsValueSetValueBadInput(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float32, seq(4, 0), 2, 2)); err != nil {
		t.Fatal(err)
	}
	var nilSet *nn.Params
	var nilDense *tensor.Dense
	if _, err := p.Value("x"); err == nil || !strings.Contains(err.Error(), `no parameter "x"`) {
		t.Fatalf("Value of an unknown name: %v", err)
	}
	if _, err := nilSet.Value("w"); err == nil {
		t.Fatal("Value on a nil set: no error")
	}
	if nilSet.Len() != 0 || nilSet.Names() != nil || nilSet.Values() != nil {
		t.Fatal("a nil set is not empty")
	}
	for _, tc := range []struct {
		name, param string
		p           *nn.Params
		value       tensor.Tensor
		want        string
	}{
		{"nil set", "w", nilSet, denseOf(tensor.Float32, seq(4, 0), 2, 2), "nil"},
		{"unknown name", "x", p, denseOf(tensor.Float32, seq(4, 0), 2, 2), `no parameter "x"`},
		{"nil value", "w", p, nil, "nil"},
		{"typed nil", "w", p, nilDense, "nil"},
		{"dtype", "w", p, denseOf(tensor.Float64, seq(4, 0), 2, 2), "dtype float64, the parameter's is float32"},
		{"shape", "w", p, denseOf(tensor.Float32, seq(4, 0), 4), "shape (4), the parameter's is (2, 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.SetValue(tc.param, tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	v, _ := p.Value("w")
	assertClose(t, "w after failed SetValues", graphtest.Floats(v), seq(4, 0), 2e-7)
}

// tinyModel is cost = Σ tanh(x·w + b) ⊙ r over the parameters w [4, 2] and
// b [3, 2] of a set that also holds "unused" (a node in the graph that cost
// does not read) and "absent" (no node in the graph).
type tinyModel struct {
	p       *nn.Params
	g       *gorgonia.ExprGraph
	cost    *gorgonia.Node
	costV   gorgonia.Value
	x, r    []float64
	dt      tensor.Dtype
	grads   *nn.Grads
	wN, bN  *gorgonia.Node
	unusedN *gorgonia.Node
}

func newTinyModel(t *testing.T, dt tensor.Dtype, reuse bool) *tinyModel {
	t.Helper()
	tm := &tinyModel{p: nn.NewParams(), g: gorgonia.NewGraph(), x: seq(12, 3), r: seq(6, 4), dt: dt}
	ad.ReuseResults(tm.g, reuse)
	for _, a := range []struct {
		name  string
		vals  []float64
		shape []int
	}{{"w", seq(8, 1), []int{4, 2}}, {"unused", seq(2, 5), []int{2}}, {"b", seq(6, 2), []int{3, 2}}, {"absent", seq(3, 6), []int{3}}} {
		if err := tm.p.Add(a.name, denseOf(dt, a.vals, a.shape...)); err != nil {
			t.Fatal(err)
		}
	}
	must := mustNode(t)
	tm.wN = must(tm.p.Node(tm.g, "w"))
	tm.bN = must(tm.p.Node(tm.g, "b"))
	tm.unusedN = must(tm.p.Node(tm.g, "unused"))
	x := gorgonia.NewMatrix(tm.g, dt, gorgonia.WithShape(3, 4), gorgonia.WithName("x"), gorgonia.WithValue(denseOf(dt, tm.x, 3, 4)))
	r := gorgonia.NewMatrix(tm.g, dt, gorgonia.WithShape(3, 2), gorgonia.WithName("r"), gorgonia.WithValue(denseOf(dt, tm.r, 3, 2)))
	h := must(nn.Tanh(must(gorgonia.Add(must(nn.MatMul(x, tm.wN, false, false)), tm.bN))))
	tm.cost = must(gorgonia.Sum(must(gorgonia.HadamardProd(h, r))))
	gorgonia.Read(tm.cost, &tm.costV)
	var err error
	if tm.grads, err = tm.p.Grad(tm.cost); err != nil {
		t.Fatal(err)
	}
	return tm
}

// want is cost and its gradients w.r.t. w and b for the set's current
// values, in float64: with z = x·w + b, h = tanh z, ∂cost/∂z = r ⊙ (1-h²),
// ∂/∂b = that, ∂/∂w = xᵀ·that.
func (tm *tinyModel) want(t *testing.T) (cost float64, gw, gb []float64) {
	t.Helper()
	wv, _ := tm.p.Value("w")
	bv, _ := tm.p.Value("b")
	w, b := graphtest.Floats(wv), graphtest.Floats(bv)
	gz := make([]float64, 6)
	for i := 0; i < 3; i++ {
		for j := 0; j < 2; j++ {
			z := b[2*i+j]
			for k := 0; k < 4; k++ {
				z += tm.x[4*i+k] * w[2*k+j]
			}
			h := math.Tanh(z)
			cost += h * tm.r[2*i+j]
			gz[2*i+j] = tm.r[2*i+j] * (1 - h*h)
		}
	}
	gw = make([]float64, 8)
	for k := 0; k < 4; k++ {
		for j := 0; j < 2; j++ {
			for i := 0; i < 3; i++ {
				gw[2*k+j] += tm.x[4*i+k] * gz[2*i+j]
			}
		}
	}
	return cost, gw, gz
}

// check compares the last run's cost and gradients with want.
func (tm *tinyModel) check(t *testing.T, what string) {
	t.Helper()
	cost, gw, gb := tm.want(t)
	tol := tolFor(tm.dt) * 10
	assertClose(t, what+": cost", graphtest.Floats(tm.costV), []float64{cost}, tol)
	vals := tm.grads.Values()
	if len(vals) != 4 || vals[1] != nil || vals[3] != nil {
		t.Fatalf("%s: gradients %v: want 4, nil for unused (index 1) and absent (index 3)", what, vals)
	}
	assertClose(t, what+": ∂/∂w", graphtest.Floats(vals[0]), gw, tol)
	assertClose(t, what+": ∂/∂b", graphtest.Floats(vals[2]), gb, tol)
	for i, name := range []string{"w", "b"} {
		v := vals[2*i]
		pv, _ := tm.p.Value(name)
		if v.Dtype() != tm.dt || !slices.Equal([]int(v.Shape()), []int(pv.Shape())) {
			t.Fatalf("%s: ∂/∂%s has dtype %v shape %v", what, name, v.Dtype(), v.Shape())
		}
	}
}

// bump adds delta to every element of the owned tensor of name, in place.
func bump(t *testing.T, p *nn.Params, name string, delta float64) {
	t.Helper()
	v, err := p.Value(name)
	if err != nil {
		t.Fatal(err)
	}
	addTo(v, delta)
}

// addTo adds delta to every element of v, in place.
func addTo(v tensor.Tensor, delta float64) {
	switch d := v.Data().(type) {
	case []float32:
		for i := range d {
			d[i] += float32(delta)
		}
	case []float64:
		for i := range d {
			d[i] += delta
		}
	}
}

// TestParamsInPlaceUpdateSeenByRerun: after an in-place update of the owned
// tensors (an optimizer's step) or SetValue, Reset and RunAll of the same
// TapeMachine, or a new LispMachine over the same graph, compute with the
// new values, with ad.ReuseResults off and on, and running never writes
// into a parameter.
func TestParamsInPlaceUpdateSeenByRerun(t *testing.T) {
	for _, dt := range dtypes {
		for _, kind := range machineKinds {
			for _, reuse := range []bool{false, true} {
				t.Run(dt.String()+"/"+kind+"/reuse="+map[bool]string{false: "off", true: "on"}[reuse], func(t *testing.T) {
					tm := newTinyModel(t, dt, reuse)
					if vals := tm.grads.Values(); len(vals) != 4 || slices.ContainsFunc(vals, func(v tensor.Tensor) bool { return v != nil }) {
						t.Fatalf("Values before a run: %v, want 4 nils", vals)
					}
					run := newRunner(t, kind, tm.g)
					before := graphtest.Floats(tm.p.Values()[0])
					run()
					assertClose(t, "w after a run", graphtest.Floats(tm.p.Values()[0]), before, 0)
					tm.check(t, "run 1")
					for i := 2; i <= 4; i++ {
						prev := graphtest.Floats(tm.grads.Values()[0])
						bump(t, tm.p, "w", 0.1)
						if i == 3 {
							if err := tm.p.SetValue("b", denseOf(dt, seq(6, 9), 3, 2)); err != nil {
								t.Fatal(err)
							}
						}
						run()
						tm.check(t, "run "+string(rune('0'+i)))
						if slices.Equal(prev, graphtest.Floats(tm.grads.Values()[0])) {
							t.Fatalf("run %d: ∂/∂w did not change after w did", i)
						}
					}
				})
			}
		}
	}
}

// TestParamsSharedByTwoGraphs: a training graph and a forward-only graph
// built from one set share the values: one in-place update reaches both,
// and ops that overwrite their input leave the parameters alone.
func TestParamsSharedByTwoGraphs(t *testing.T) {
	for _, kind := range machineKinds {
		t.Run(kind, func(t *testing.T) {
			train := newTinyModel(t, tensor.Float64, true)
			must := mustNode(t)
			ge := gorgonia.NewGraph()
			w := must(train.p.Node(ge, "w"))
			// Gorgonia's Neg may overwrite its input: never a parameter's.
			y := must(gorgonia.Sum(must(gorgonia.Neg(must(gorgonia.Neg(w))))))
			var yv gorgonia.Value
			gorgonia.Read(y, &yv)
			runTrain, runEval := newRunner(t, kind, train.g), newRunner(t, kind, ge)
			for step := 0; step < 3; step++ {
				runTrain()
				train.check(t, "training graph")
				wv, _ := train.p.Value("w")
				before := graphtest.Floats(wv)
				runEval()
				assertClose(t, "w after the evaluation graph ran", graphtest.Floats(wv), before, 0)
				sum := 0.0
				for _, v := range graphtest.Floats(wv) {
					sum += v
				}
				assertClose(t, "evaluation graph Σw", []float64{yv.Data().(float64)}, []float64{sum}, 1e-14)
				bump(t, train.p, "w", -0.05)
			}
		})
	}
}

func TestParamsNode(t *testing.T) {
	p := nn.NewParams()
	for _, name := range []string{"a", "b"} {
		if err := p.Add(name, denseOf(tensor.Float32, seq(3, 0), 3)); err != nil {
			t.Fatal(err)
		}
	}
	g := gorgonia.NewGraph()
	b, err := p.Node(g, "b")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "b" || b.Dtype() != tensor.Float32 || !slices.Equal([]int(b.Shape()), []int{3}) {
		t.Fatalf("node %v: name %q dtype %v shape %v", b, b.Name(), b.Dtype(), b.Shape())
	}
	if v, _ := p.Value("b"); b.Value() != v {
		t.Fatal("the node's value is not the owned tensor")
	}
	if again, err := p.Node(g, "b"); err != nil || again != b {
		t.Fatalf("second Node: %v, %v; want the same node", again, err)
	}
	nodes, err := p.Nodes(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[1] != b || nodes[0].Name() != "a" {
		t.Fatalf("Nodes = %v", nodes)
	}
	if again, _ := p.Nodes(g); !slices.Equal(again, nodes) {
		t.Fatal("Nodes made new nodes on its second call")
	}
	if n := len(g.AllNodes()); n != 2 {
		t.Fatalf("graph has %d nodes, want 2", n)
	}
	g2 := gorgonia.NewGraph()
	a2, err := p.Node(g2, "a")
	if err != nil || a2 == nodes[0] || a2.Value() != nodes[0].Value() {
		t.Fatalf("node in a second graph: %v, %v; want a new node sharing the value", a2, err)
	}
}

func TestParamsNodeBadInput(t *testing.T) {
	newSet := func() *nn.Params {
		p := nn.NewParams()
		if err := p.Add("w", denseOf(tensor.Float64, seq(4, 0), 2, 2)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := newSet()
	var nilSet *nn.Params
	g := gorgonia.NewGraph()
	// Another set's parameter of the same name, a user's input of that
	// name, and the parameter's node after gorgonia.Let.
	other, rebound, user := gorgonia.NewGraph(), gorgonia.NewGraph(), gorgonia.NewGraph()
	if _, err := newSet().Node(other, "w"); err != nil {
		t.Fatal(err)
	}
	n, err := p.Node(rebound, "w")
	if err != nil {
		t.Fatal(err)
	}
	if err := gorgonia.Let(n, denseOf(tensor.Float64, seq(4, 0), 2, 2)); err != nil {
		t.Fatal(err)
	}
	gorgonia.NewMatrix(user, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("w"))
	for _, tc := range []struct {
		name, param string
		p           *nn.Params
		g           *gorgonia.ExprGraph
		want        string
	}{
		{"nil set", "w", nilSet, g, "nil"},
		{"nil graph", "w", p, nil, "graph is nil"},
		{"unknown name", "x", p, g, `no parameter "x"`},
		{"another set's w", "w", p, other, "names must be unique"},
		{"user's input w", "w", p, user, "names must be unique"},
		{"after Let", "w", p, rebound, "gorgonia.Let"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.p.Node(tc.g, tc.param); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Node: error %v, want one containing %q", err, tc.want)
			}
			if tc.param == "w" {
				if _, err := tc.p.Nodes(tc.g); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Nodes: error %v, want one containing %q", err, tc.want)
				}
			}
		})
	}
}

func TestParamsGradBadInput(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float64, seq(4, 0), 1, 1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	var nilSet *nn.Params
	must := mustNode(t)
	g := gorgonia.NewGraph()
	w := must(p.Node(g, "w"))
	vec := must(gorgonia.Square(w))
	other := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"))
	independent := must(gorgonia.Sum(other))
	// The image's gradient is Gorgonia's col2im, which has no derivative.
	pc := nn.NewParams()
	if err := pc.Add("im", denseOf(tensor.Float64, seq(16, 1), 1, 1, 4, 4)); err != nil {
		t.Fatal(err)
	}
	gc := gorgonia.NewGraph()
	wc := gorgonia.NewTensor(gc, tensor.Float64, 4, gorgonia.WithShape(1, 1, 2, 2), gorgonia.WithName("w"),
		gorgonia.WithValue(denseOf(tensor.Float64, seq(4, 0), 1, 1, 2, 2)))
	im := must(pc.Node(gc, "im"))
	conv := must(gorgonia.Sum(must(gorgonia.Square(must(gorgonia.Conv2d(im, wc, tensor.Shape{2, 2}, []int{0, 0}, []int{1, 1}, []int{1, 1}))))))
	gconv, err := pc.Grad(conv)
	if err != nil {
		t.Fatal(err)
	}
	convPenalty := must(gorgonia.Sum(must(gorgonia.Square(gconv.Nodes()[0]))))
	for _, tc := range []struct {
		name string
		p    *nn.Params
		cost *gorgonia.Node
		want string
	}{
		{"nil set", nilSet, independent, "nil"},
		{"nil cost", p, nil, "cost is nil"},
		{"vector cost", p, vec, "must be a scalar"},
		{"cost without parameters", p, independent, "depends on none"},
		{"no second derivative (Gorgonia's Conv2d)", pc, convPenalty, "Conv2d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.p.Grad(tc.cost); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	var nilGrads *nn.Grads
	if nilGrads.Values() != nil || nilGrads.Nodes() != nil {
		t.Fatal("nil Grads is not empty")
	}
}

// TestParamsGradAliasing: on the LispMachine a gradient may be another
// parameter's own value (∂Σ(a⊙b)/∂a = b); Values copies it, so that an
// in-place update of b before reading ∂/∂b's partner does not change it.
// Also the second order: a gradient node differentiated again.
func TestParamsGradAliasing(t *testing.T) {
	for _, dt := range dtypes {
		for _, kind := range machineKinds {
			t.Run(dt.String()+"/"+kind, func(t *testing.T) {
				p := nn.NewParams()
				av, bv := seq(3, 1), seq(3, 2)
				for i, v := range [][]float64{av, bv} {
					if err := p.Add([]string{"a", "b"}[i], denseOf(dt, v, 3)); err != nil {
						t.Fatal(err)
					}
				}
				must := mustNode(t)
				g := gorgonia.NewGraph()
				nodes, err := p.Nodes(g)
				if err != nil {
					t.Fatal(err)
				}
				cost := must(gorgonia.Sum(must(gorgonia.HadamardProd(nodes[0], nodes[1]))))
				gs, err := p.Grad(cost)
				if err != nil {
					t.Fatal(err)
				}
				// Second order: Σ(∂/∂a)² = Σb², whose gradient is (0, 2b).
				gn := gs.Nodes()
				pen := must(gorgonia.Sum(must(gorgonia.Square(gn[0]))))
				gs2, err := p.Grad(pen)
				if err != nil {
					t.Fatal(err)
				}
				newRunner(t, kind, g)()
				vals := gs.Values()
				ga, gb := vals[0], vals[1]
				bump(t, p, "a", 1)
				bump(t, p, "b", 1)
				assertClose(t, "∂/∂a", graphtest.Floats(ga), bv, tolFor(dt))
				assertClose(t, "∂/∂b", graphtest.Floats(gb), av, tolFor(dt))
				v2 := gs2.Values()
				twoB := make([]float64, 3)
				for i := range twoB {
					twoB[i] = 2 * bv[i]
				}
				// ∂/∂a is b's node, so Σ(∂/∂a)² has no path to a: nil, as
				// torch leaves a.grad None after backward of
				// autograd.grad(Σa⊙b, a, create_graph=True)[0].pow(2).sum().
				if v2[0] != nil || gs2.Nodes()[0] != nil {
					t.Fatalf("second order: ∂/∂a of Σb² is %v, want nil", v2[0])
				}
				assertClose(t, "second order ∂/∂b", graphtest.Floats(v2[1]), twoB, tolFor(dt))
			})
		}
	}
}

// TestParamsLispMachineRunsOnce pins a fact of Gorgonia v0.9.18 that the
// recipe depends on: a LispMachine's Reset sets its position to the last
// node, so Reset and RunAll re-run only that node and leave the cost of the
// first run; a new LispMachine over the same graph sees the updated
// parameters. If this fails after a Gorgonia upgrade, Reset works: update
// newRunner and the Params documentation.
func TestParamsLispMachineRunsOnce(t *testing.T) {
	p := nn.NewParams()
	if err := p.Add("w", denseOf(tensor.Float64, []float64{1, 2}, 2)); err != nil {
		t.Fatal(err)
	}
	must := mustNode(t)
	g := gorgonia.NewGraph()
	cost := must(gorgonia.Sum(must(gorgonia.Square(must(p.Node(g, "w"))))))
	m := gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly())
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	bump(t, p, "w", 1) // w = (2, 3): Σw² = 13
	m.Reset()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got := cost.Value().Data().(float64); got != 5 {
		t.Fatalf("LispMachine Reset+RunAll gave %v, the pinned fact is the stale 5 (13 would mean Reset works now)", got)
	}
	newRunner(t, "lisp", g)()
	if got := cost.Value().Data().(float64); got != 13 {
		t.Fatalf("a new LispMachine gave %v, want 13", got)
	}
}
