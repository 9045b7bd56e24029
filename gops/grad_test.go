package gops

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func runRead(t *testing.T, g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) [][]float64 {
	t.Helper()
	vals := make([]gorgonia.Value, len(nodes))
	for i, n := range nodes {
		gorgonia.Read(n, &vals[i])
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(vals))
	for i, v := range vals {
		switch d := v.Data().(type) {
		case float64:
			out[i] = []float64{d}
		case float32:
			out[i] = []float64{float64(d)}
		default:
			out[i] = asFloat64s(t, v)
		}
	}
	return out
}

// gradChain returns the gradients of orders 1..n of f w.r.t. x, order k+1
// being Grad of Sum(order k).
func gradChain(t *testing.T, f, x *gorgonia.Node, n int) []*gorgonia.Node {
	t.Helper()
	var out []*gorgonia.Node
	for k := 0; k < n; k++ {
		gs, err := Grad(f, x)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, gs[0])
		f = gorgonia.Must(gorgonia.Sum(gs[0]))
	}
	return out
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

// Orders 1, 2, 3 of f = sum(sin(x)⊙x), each Grad called on the previous
// result in the same graph.
func TestGradRepeatedCalls(t *testing.T) {
	xs := []float64{0.3, 0.7, 1.1}
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking(append([]float64(nil), xs...)))))
	f := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.Sin(x)), x))))
	gs := gradChain(t, f, x, 3)
	got := runRead(t, g, gs...)
	var w1, w2, w3 []float64
	for _, v := range xs {
		s, c := math.Sin(v), math.Cos(v)
		w1 = append(w1, c*v+s)
		w2 = append(w2, -s*v+2*c)
		w3 = append(w3, -c*v-3*s)
	}
	near(t, "order 1", got[0], w1, 1e-12)
	near(t, "order 2", got[1], w2, 1e-12)
	near(t, "order 3", got[2], w3, 1e-12)
}

// A scalar intermediate: f = (Σx²)², whose second-order gradient passes a
// 0-d tensor where Gorgonia's scalar ops need a scalar.
func TestGradScalarIntermediate(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{0.3, 0.7, 1.1}))))
	s := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(x))))
	f := gorgonia.Must(gorgonia.Mul(s, s))
	gs := gradChain(t, f, x, 3)
	got := runRead(t, g, gs[1], gs[2])
	// S = Σx²: ∇f = 4Sx; h = Σ∇f = 4SΣx, ∇h = 4(2xΣx + S);
	// k = Σ∇h = 4(2(Σx)² + 3S), ∇k = 4(4Σx + 6x).
	S, sx := 1.79, 2.1
	near(t, "order 2", got[0], []float64{4 * (2*0.3*sx + S), 4 * (2*0.7*sx + S), 4 * (2*1.1*sx + S)}, 1e-12)
	near(t, "order 3", got[1], []float64{4 * (4*sx + 6*0.3), 4 * (4*sx + 6*0.7), 4 * (4*sx + 6*1.1)}, 1e-12)
}

func TestGradNoPathGivesZeros(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	z := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("z"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	f := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(x))))
	gs, err := Grad(f, x, z)
	if err != nil {
		t.Fatal(err)
	}
	got := runRead(t, g, gs[0], gs[1])
	near(t, "dx", got[0], []float64{2, 4}, 0)
	near(t, "dz", got[1], []float64{0, 0}, 0)
}

func TestGradErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	other := gorgonia.NewVector(gorgonia.NewGraph(), tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("o"))
	sum := gorgonia.Must(gorgonia.Sum(x))
	cases := []struct {
		name string
		cost *gorgonia.Node
		wrt  []*gorgonia.Node
		want string
	}{
		{"nil cost", nil, []*gorgonia.Node{x}, "cost is nil"},
		{"vector cost", x, []*gorgonia.Node{x}, "cost must be a scalar"},
		{"no wrt", sum, nil, "no wrt nodes"},
		{"other graph", sum, []*gorgonia.Node{other}, "wrt[0] is nil or in another graph"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Grad(c.cost, c.wrt...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func TestNewOpErrors(t *testing.T) {
	shape := func(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil }
	fwd := func(in []gorgonia.Value) (gorgonia.Value, error) { return in[0], nil }
	cases := []struct {
		spec OpSpec
		want string
	}{
		{OpSpec{InputDims: []int{1}, Shape: shape, Forward: fwd}, "empty Name"},
		{OpSpec{Name: "a", Shape: shape, Forward: fwd}, "no inputs"},
		{OpSpec{Name: "a", InputDims: []int{1}, Forward: fwd}, "Shape and Forward are required"},
		{OpSpec{Name: "a", InputDims: []int{1}, Shape: shape, Forward: fwd, DiffWRT: []bool{true, false}}, "DiffWRT has 2 entries for 1 inputs"},
		{OpSpec{Name: "a", InputDims: []int{-1}, Shape: shape, Forward: fwd}, "negative input rank"},
	}
	for _, c := range cases {
		if _, err := NewOp(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewOp(%+v): error %v, want %q", c.spec.Name, err, c.want)
		}
	}
}

// VJP(y, G, x) is <G, ∂y/∂x> (G held fixed, unlike the gradient of
// Sum(y ⊙ G) when G depends on x), and can itself be differentiated.
func TestVJP(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{0.3, 0.7, 1.1}))))
	y := gorgonia.Must(gorgonia.Sin(x))
	gy := gorgonia.Must(gorgonia.Square(x))
	v, err := VJP(y, gy, x)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gy)))), x)
	if err != nil {
		t.Fatal(err)
	}
	// d/dx Σ VJP = d/dx Σ cos(x)·x² = -sin(x)·x² + 2x·cos(x)
	v2, err := Grad(gorgonia.Must(gorgonia.Sum(v[0])), x)
	if err != nil {
		t.Fatal(err)
	}
	got := runRead(t, g, v[0], ref[0], v2[0])
	var w1, wsum, w2 []float64
	for _, a := range []float64{0.3, 0.7, 1.1} {
		w1 = append(w1, math.Cos(a)*a*a)
		wsum = append(wsum, math.Cos(a)*a*a+2*a*math.Sin(a))
		w2 = append(w2, -math.Sin(a)*a*a+2*a*math.Cos(a))
	}
	near(t, "VJP", got[0], w1, 1e-12)
	near(t, "Grad of sum", got[1], wsum, 1e-12)
	near(t, "second order through VJP", got[2], w2, 1e-12)

	bad := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("bad"))
	if _, err := VJP(y, bad, x); err == nil || !strings.Contains(err.Error(), "must be output's shape") {
		t.Fatalf("error %v", err)
	}
	if _, err := VJP(y, nil, x); err == nil {
		t.Fatal("nil gradOutput accepted")
	}
}

func TestApplyErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	spec := func(shape func([]tensor.Shape) (tensor.Shape, error)) OpSpec {
		return OpSpec{Name: "Id", InputDims: []int{1}, OutputDims: 1, Shape: shape,
			Forward: func(in []gorgonia.Value) (gorgonia.Value, error) { return in[0], nil }}
	}
	same := func(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil }
	if _, err := Apply(spec(same), nil); err == nil || !strings.Contains(err.Error(), "input 0 is nil") {
		t.Errorf("nil input: %v", err)
	}
	if _, err := Apply(spec(same), x); err == nil || !strings.Contains(err.Error(), "want rank 1") {
		t.Errorf("wrong rank: %v", err)
	}
	if _, err := Apply(spec(same), x, x); err == nil || !strings.Contains(err.Error(), "got 2 inputs, want 1") {
		t.Errorf("arity: %v", err)
	}
	v := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("v"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	bad := spec(func([]tensor.Shape) (tensor.Shape, error) { return tensor.Shape{3, 1}, nil })
	if _, err := Apply(bad, v); err == nil || !strings.Contains(err.Error(), "Shape returned (3, 1) for OutputDims 1") {
		t.Errorf("bad Shape: %v", err)
	}
}

// A Backward that returns a gradient of the wrong shape is an error naming
// the op, not a silently wrong gradient.
func TestGradRejectsWrongGradientShape(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	five := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(5), gorgonia.WithName("five"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	y, err := Apply(OpSpec{
		Name: "Bad", InputDims: []int{1}, OutputDims: 1,
		Shape:   func(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil },
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) { return in[0], nil },
		Backward: func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
			return gorgonia.Nodes{five}, nil
		},
	}, x)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Grad(gorgonia.Must(gorgonia.Sum(y)), x)
	if err == nil || !strings.Contains(err.Error(), "op Bad returned a gradient of shape (5) for its input 0 (x) of shape (3)") {
		t.Fatalf("error %v", err)
	}
}
