package ad_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// vectorOf is a vector node named name holding data (float64 or float32).
func vectorOf(g *gorgonia.ExprGraph, name string, data any) *gorgonia.Node {
	n := 0
	switch d := data.(type) {
	case []float64:
		n = len(d)
	case []float32:
		n = len(d)
	}
	v := tensor.New(tensor.WithShape(n), tensor.WithBacking(data))
	return gorgonia.NewVector(g, v.Dtype(), gorgonia.WithShape(v.Shape()...), gorgonia.WithName(name), gorgonia.WithValue(v))
}

// A formula of every arithmetic step, in both dtypes, equals its value
// computed by hand, and its constants have the builder's dtype.
func TestBuilderArithmetic(t *testing.T) {
	for _, data := range []any{[]float64{0.5, 2}, []float32{0.5, 2}} {
		g := gorgonia.NewGraph()
		x := vectorOf(g, "x", data)
		b := ad.NewBuilder(x)
		c := b.Const(0.1)
		// ((x + x − x)⊙x)² · 3 + 1, then 2 − that, −, eˣ, √, 1/, x³, Σ
		y := b.RSub(2, b.AddConst(b.Scale(b.Square(b.HadamardProd(b.Sub(b.Add(x, x), x), x)), 3), 1))
		z := b.Inverse(b.Sqrt(b.Exp(b.Neg(b.Cube(y)))))
		s := b.Sum(z)
		if _, err := b.Node(s); err != nil {
			t.Fatal(err)
		}
		if c.Dtype() != x.Dtype() || !c.IsScalar() {
			t.Errorf("%v: Const has dtype %v, scalar %v", x.Dtype(), c.Dtype(), c.IsScalar())
		}
		got := runRead(t, g, z, s)
		var want []float64
		sum := 0.0
		for _, v := range []float64{0.5, 2} {
			yv := 2 - (3*math.Pow(v*v, 2) + 1)
			w := 1 / math.Sqrt(math.Exp(-yv*yv*yv))
			want = append(want, w)
			sum += w
		}
		tol := 1e-12
		if x.Dtype() == tensor.Float32 {
			tol = 1e-5
		}
		near(t, x.Dtype().String(), got[0], want, tol)
		near(t, x.Dtype().String()+" sum", got[1], []float64{sum}, tol)
	}
}

// The first error is kept: later steps, nil inputs included, do nothing
// and do not panic, and Node and Nodes return that error.
func TestBuilderFirstErrorKept(t *testing.T) {
	g := gorgonia.NewGraph()
	x := vectorOf(g, "x", []float64{1, 2})
	m := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("m"))
	b := ad.NewBuilder(x)
	before := g.Nodes().Len()
	bad := b.HadamardProd(x, m) // shapes differ
	first := b.Err()
	if bad != nil || first == nil {
		t.Fatalf("HadamardProd of [2] and [2, 2]: %v, %v", bad, first)
	}
	second := errors.New("a later failure")
	ran := false
	y := b.Square(b.Add(bad, x))
	y = b.Do(func() (*gorgonia.Node, error) { ran = true; return nil, second })
	y = b.Scale(b.RSub(1, b.Apply(ad.OpSpec{}, y)), 2)
	if ran || y != nil {
		t.Errorf("a step after the failure ran (%v) or gave a node (%v)", ran, y)
	}
	if n, err := b.Node(y); n != nil || err != first {
		t.Errorf("Node: %v, %v; want nil, %v", n, err, first)
	}
	if ns, err := b.Nodes(x, y); ns != nil || err != first {
		t.Errorf("Nodes: %v, %v; want nil, %v", ns, err, first)
	}
	if added := g.Nodes().Len() - before; added != 0 {
		t.Errorf("the failed formula added %d nodes", added)
	}
}

// A nil input without an earlier error, a nil NewBuilder node and a step
// returning neither node nor error are errors too, never panics.
func TestBuilderNilInputs(t *testing.T) {
	g := gorgonia.NewGraph()
	x := vectorOf(g, "x", []float32{1, 2})
	for _, c := range []struct {
		name string
		f    func() error
		want string
	}{
		{"nil input", func() error { b := ad.NewBuilder(x); b.Add(x, nil); return b.Err() }, "ad: Builder.Add: input 1 is nil"},
		{"nil like", func() error { b := ad.NewBuilder(nil); b.Square(x); return b.Err() }, "ad: NewBuilder: nil node"},
		{"no node", func() error {
			b := ad.NewBuilder(x)
			b.Do(func() (*gorgonia.Node, error) { return nil, nil })
			return b.Err()
		}, "neither a node nor an error"},
	} {
		if err := c.f(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// Nodes hands back several results, nil ones included.
func TestBuilderNodes(t *testing.T) {
	g := gorgonia.NewGraph()
	x := vectorOf(g, "x", []float64{1, 2})
	b := ad.NewBuilder(x)
	ns, err := b.Nodes(b.Neg(x), nil)
	if err != nil || len(ns) != 2 || ns[0] == nil || ns[1] != nil {
		t.Fatalf("Nodes: %v, %v", ns, err)
	}
}

// Resolve gives the function's default for "", keeps the three names and
// refuses the rest; Shape, OfNothing and Reduce follow the reduction.
func TestReduction(t *testing.T) {
	for _, c := range []struct {
		r, def, want ad.Reduction
		ok           bool
	}{
		{"", ad.ReductionMean, "mean", true},
		{"", ad.ReductionNone, "none", true},
		{"sum", ad.ReductionNone, "sum", true},
		{"none", ad.ReductionMean, "none", true},
		{"mean", ad.ReductionNone, "mean", true},
		{"avg", ad.ReductionMean, "avg", false},
		{"Mean", ad.ReductionNone, "Mean", false},
	} {
		if got, ok := c.r.Resolve(c.def); got != c.want || ok != c.ok {
			t.Errorf("%q.Resolve(%q) = %q, %v; want %q, %v", c.r, c.def, got, ok, c.want, c.ok)
		}
	}
	s := tensor.Shape{2, 0}
	if got := ad.ReductionNone.Shape(s); !slices.Equal(got, s) {
		t.Errorf("none: shape %v", got)
	}
	if got := ad.ReductionSum.Shape(s); !got.IsScalar() {
		t.Errorf("sum: shape %v", got)
	}
	if !math.IsNaN(ad.ReductionMean.OfNothing()) || ad.ReductionSum.OfNothing() != 0 {
		t.Error("OfNothing: want NaN for mean, 0 for sum")
	}

	g := gorgonia.NewGraph()
	x := vectorOf(g, "x", []float64{1, 2, 6})
	var outs []*gorgonia.Node
	for _, r := range []ad.Reduction{ad.ReductionNone, ad.ReductionMean, ad.ReductionSum} {
		y, err := r.Reduce(x)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, y)
	}
	got := runRead(t, g, outs...)
	near(t, "none", got[0], []float64{1, 2, 6}, 0)
	near(t, "mean", got[1], []float64{3}, 0)
	near(t, "sum", got[2], []float64{9}, 0)
	if _, err := ad.Reduction("").Reduce(x); err == nil || !strings.Contains(err.Error(), `reduction ""`) {
		t.Errorf("Reduce of an unresolved reduction: %v", err)
	}
	if _, err := ad.ReductionMean.Reduce(nil); err == nil || !strings.Contains(err.Error(), "nil node") {
		t.Errorf("Reduce of a nil node: %v", err)
	}
}

// EmptyResult fills its shape with v, in both dtypes, skips nil inputs,
// gives zero gradients, and calls the twin hook only for a tensor result.
func TestEmptyResult(t *testing.T) {
	for _, data := range []any{[]float64{}, []float32{}} {
		g := gorgonia.NewGraph()
		x := vectorOf(g, "x", data)
		w := vectorOf(g, "w", data)
		if !ad.NoElements(x) {
			t.Fatal("NoElements of an empty vector is false")
		}
		var twinned []string
		twin := func(s ad.OpSpec, v float64) ad.OpSpec { twinned = append(twinned, s.Name); return s }
		empty, err := ad.EmptyResult("Op", tensor.Shape{0, 3}, 1, twin, x, nil, w)
		if err != nil {
			t.Fatal(err)
		}
		mean, err := ad.EmptyResult("Loss", tensor.ScalarShape(), math.NaN(), twin, x)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(empty.Shape(), tensor.Shape{0, 3}) || !mean.IsScalar() || mean.Dtype() != x.Dtype() {
			t.Fatalf("shapes %v and %v, dtype %v", empty.Shape(), mean.Shape(), mean.Dtype())
		}
		if !slices.Equal(twinned, []string{"OpEmpty"}) {
			t.Errorf("twin hook called for %v, want only OpEmpty", twinned)
		}
		if got := empty.Op().String(); got != "OpEmpty{(0, 3) 1}" {
			t.Errorf("op %q", got)
		}
		gs, err := ad.Grad(mean, x)
		if err != nil {
			t.Fatal(err)
		}
		got := runRead(t, g, mean, gs[0])
		if len(got[0]) != 1 || !math.IsNaN(got[0][0]) || len(got[1]) != 0 {
			t.Errorf("values %v", got)
		}
	}
	g := gorgonia.NewGraph()
	one := gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("s"))
	if ad.NoElements(one) || ad.NoElements(vectorOf(g, "v", []float64{1})) || ad.NoElements(nil) {
		t.Error("NoElements of a scalar, a vector of one or nil")
	}
}

// A step that fails inside Do's function is the first error, not the
// error that function then returns.
func TestBuilderNestedFailureFirst(t *testing.T) {
	g := gorgonia.NewGraph()
	x := vectorOf(g, "x", []float64{1, 2})
	b := ad.NewBuilder(x)
	b.Do(func() (*gorgonia.Node, error) {
		b.Add(x, nil)
		return nil, errors.New("later")
	})
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "Builder.Add") {
		t.Errorf("error %v, want the nested Add's", err)
	}
}

// TestBuilderSumAxes: axes outside x, or repeated, are the builder's
// error naming the axes and x's shape, not Gorgonia's panic (a negative
// axis) or a node whose gradient has the wrong shape (a repeated one).
func TestBuilderSumAxes(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName("x"))
	for _, axes := range [][]int{{-1}, {2}, {0, 0}, {1, 0, 1}} {
		b := ad.NewBuilder(x)
		b.Sum(x, axes...)
		if err := b.Err(); err == nil || !strings.Contains(err.Error(), "Builder.Sum") || !strings.Contains(err.Error(), "(2, 3)") {
			t.Errorf("Sum along %v: %v", axes, err)
		}
	}
	b := ad.NewBuilder(x)
	if s := b.Sum(x, 1, 0); b.Err() != nil || !s.IsScalar() {
		t.Errorf("Sum along [1 0]: %v, %v", s, b.Err())
	}
}
