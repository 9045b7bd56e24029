package ad_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func runRead(t *testing.T, g *gorgonia.ExprGraph, nodes ...*gorgonia.Node) [][]float64 {
	t.Helper()
	out, err := graphtest.Eval(g, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gradChain returns the gradients of orders 1..n of f w.r.t. x, order k+1
// being Grad of Sum(order k).
func gradChain(t *testing.T, f, x *gorgonia.Node, n int) []*gorgonia.Node {
	t.Helper()
	var out []*gorgonia.Node
	for k := 0; k < n; k++ {
		gs, err := ad.Grad(f, x)
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
	gs, err := ad.Grad(f, x, z)
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
			_, err := ad.Grad(c.cost, c.wrt...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// ad.VJP(y, G, x) is <G, ∂y/∂x> (G held fixed, unlike the gradient of
// Sum(y ⊙ G) when G depends on x), and can itself be differentiated.
func TestVJP(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{0.3, 0.7, 1.1}))))
	y := gorgonia.Must(gorgonia.Sin(x))
	gy := gorgonia.Must(gorgonia.Square(x))
	v, err := ad.VJP(y, gy, x)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, gy)))), x)
	if err != nil {
		t.Fatal(err)
	}
	// d/dx Σ VJP = d/dx Σ cos(x)·x² = -sin(x)·x² + 2x·cos(x)
	v2, err := ad.Grad(gorgonia.Must(gorgonia.Sum(v[0])), x)
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
	if _, err := ad.VJP(y, bad, x); err == nil || !strings.Contains(err.Error(), "must be output's shape") {
		t.Fatalf("error %v", err)
	}
	if _, err := ad.VJP(y, nil, x); err == nil {
		t.Fatal("nil gradOutput accepted")
	}
}

func TestApplyErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 2), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	v := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("v"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	v32 := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3), gorgonia.WithName("v32"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	iv := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3), gorgonia.WithName("iv"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	same := func(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil }
	fwd := func(in []gorgonia.Value) (gorgonia.Value, error) { return in[0], nil }
	id := ad.OpSpec{Name: "Id", InputDims: []int{1}, OutputDims: 1, Shape: same, Forward: fwd}
	with := func(f func(*ad.OpSpec)) ad.OpSpec { s := id; f(&s); return s }
	cases := []struct {
		name string
		spec ad.OpSpec
		in   []*gorgonia.Node
		want string
	}{
		{"empty name", with(func(s *ad.OpSpec) { s.Name = "" }), []*gorgonia.Node{v}, "empty Name"},
		{"no inputs", with(func(s *ad.OpSpec) { s.InputDims = nil }), []*gorgonia.Node{v}, "no inputs"},
		{"no shape", with(func(s *ad.OpSpec) { s.Shape = nil }), []*gorgonia.Node{v}, "OpSpec.Shape is required"},
		{"no forward", with(func(s *ad.OpSpec) { s.Forward = nil }), []*gorgonia.Node{v}, "exactly one of Forward and Kernel"},
		{"forward and kernel", with(func(s *ad.OpSpec) { s.Kernel = ad.Floats(copyKernel[float32], copyKernel[float64]) }), []*gorgonia.Node{v}, "exactly one of Forward and Kernel"},
		{"DiffWRT length", with(func(s *ad.OpSpec) { s.DiffWRT = []bool{true, false} }), []*gorgonia.Node{v}, "DiffWRT has 2 entries for 1 inputs"},
		{"InputDtypes length", with(func(s *ad.OpSpec) { s.InputDtypes = []tensor.Dtype{{}, {}} }), []*gorgonia.Node{v}, "InputDtypes has 2 entries for 1 inputs"},
		{"negative rank", with(func(s *ad.OpSpec) { s.InputDims = []int{-1} }), []*gorgonia.Node{v}, "negative rank for input 0"},
		{"nil input", id, []*gorgonia.Node{nil}, "input 0 is nil"},
		{"wrong rank", id, []*gorgonia.Node{x}, "want rank 1"},
		{"arity", id, []*gorgonia.Node{x, x}, "got 2 inputs, want 1"},
		{"int input", id, []*gorgonia.Node{iv}, "input 0 has dtype int, want float32 or float64"},
		{"fixed dtype", with(func(s *ad.OpSpec) { s.InputDims, s.InputDtypes = []int{1, 1}, []tensor.Dtype{{}, tensor.Int} }), []*gorgonia.Node{v, v}, "input 1 has dtype float64, want int"},
		{"no float input", with(func(s *ad.OpSpec) { s.InputDtypes = []tensor.Dtype{tensor.Int} }), []*gorgonia.Node{iv}, "no input has the float dtype that the result takes"},
		{"kernel fixed float input", with(func(s *ad.OpSpec) {
			s.Forward, s.Kernel = nil, ad.Floats(copyKernel[float32], copyKernel[float64])
			s.InputDims, s.InputDtypes = []int{1, 1}, []tensor.Dtype{{}, tensor.Float64}
		}), []*gorgonia.Node{v, v}, "a Kernel takes float inputs of the op's dtype and tensor.Int inputs, not InputDtypes[1] = float64"},
		{"kernel only ints", with(func(s *ad.OpSpec) {
			s.Forward, s.Kernel = nil, ad.Floats(copyKernel[float32], copyKernel[float64])
			s.InputDtypes, s.OutputDtype = []tensor.Dtype{tensor.Int}, tensor.Int
		}), []*gorgonia.Node{iv}, "a Kernel needs a float input"},
		{"kernel float32 output", with(func(s *ad.OpSpec) {
			s.Forward, s.Kernel = nil, ad.Floats(copyKernel[float32], copyKernel[float64])
			s.OutputDtype = tensor.Float32
		}), []*gorgonia.Node{v}, "a Kernel's result has the op's float dtype or tensor.Int, not OutputDtype float32"},
		{"two graphs", with(func(s *ad.OpSpec) { s.InputDims = []int{1, 1} }), []*gorgonia.Node{v, gorgonia.NewVector(gorgonia.NewGraph(), tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("w"))},
			"input 1 (w) is a node of another graph than input 0 (v)"},
		{"mixed floats", with(func(s *ad.OpSpec) { s.InputDims = []int{1, 1} }), []*gorgonia.Node{v, v32}, "input 1 has dtype float32, unlike the op's earlier float64 inputs"},
		{"bad Shape", with(func(s *ad.OpSpec) {
			s.Shape = func([]tensor.Shape) (tensor.Shape, error) { return tensor.Shape{3, 1}, nil }
		}), []*gorgonia.Node{v}, "Shape returned (3, 1) for OutputDims 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ad.Apply(c.spec, c.in...); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

func copyKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	copy(out.Data, in[0].Data)
	return nil
}

// A Backward that returns a gradient of the wrong shape is an error naming
// the op, not a silently wrong gradient.
func TestGradRejectsWrongGradientShape(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 2), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	five := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(5), gorgonia.WithName("five"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	x32 := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(3, 2), gorgonia.WithName("x32"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	for _, c := range []struct {
		name string
		grad func(grad *gorgonia.Node) *gorgonia.Node
		want string
	}{
		{"size", func(*gorgonia.Node) *gorgonia.Node { return five }, "op Size returned a gradient of shape (5) for its input 0 (x) of shape (3, 2)"},
		// Same size, other shape: reshaping it would give wrong numbers.
		{"transposed", func(grad *gorgonia.Node) *gorgonia.Node { return gorgonia.Must(gorgonia.Transpose(grad)) },
			"op Transposed returned a gradient of shape (2, 3) for its input 0 (x) of shape (3, 2)"},
		{"dtype", func(*gorgonia.Node) *gorgonia.Node { return x32 }, "op Dtype returned a gradient of dtype float32 for its input 0 (x) of dtype float64"},
	} {
		name := strings.ToUpper(c.name[:1]) + c.name[1:]
		y, err := ad.Apply(ad.OpSpec{
			Name: name, InputDims: []int{2}, OutputDims: 2,
			Shape:   func(in []tensor.Shape) (tensor.Shape, error) { return in[0], nil },
			Forward: func(in []gorgonia.Value) (gorgonia.Value, error) { return in[0], nil },
			Backward: func(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
				return gorgonia.Nodes{c.grad(grad)}, nil
			},
		}, x)
		if err != nil {
			t.Fatal(err)
		}
		if _, err = ad.Grad(gorgonia.Must(gorgonia.Sum(y)), x); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// A wrt node that cost does not depend on gets a zero gradient of its own
// shape, even next to another such node (Gorgonia's ExprGraph.Constant
// would return one node of the first shape for both), and costs of both
// float dtypes in one graph get seeds of their own dtype.
func TestGradZerosOfUnreachableWrt(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	a := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(40, 50), gorgonia.WithName("a"), gorgonia.WithInit(gorgonia.Zeroes()))
	b := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(30, 30), gorgonia.WithName("b"), gorgonia.WithInit(gorgonia.Zeroes()))
	x32 := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(2), gorgonia.WithName("x32"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	f := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(x))))
	f32 := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Cube(x32))))
	gs, err := ad.Grad(f, x, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if gs[1] == gs[2] || !gs[1].Shape().Eq(a.Shape()) || !gs[2].Shape().Eq(b.Shape()) {
		t.Fatalf("gradients of a and b: shapes %v and %v, same node %t", gs[1].Shape(), gs[2].Shape(), gs[1] == gs[2])
	}
	g32, err := ad.Grad(f32, x32)
	if err != nil {
		t.Fatal(err)
	}
	if g32[0].Dtype() != tensor.Float32 {
		t.Fatalf("float32 gradient has dtype %v", g32[0].Dtype())
	}
	got := runRead(t, g, gs[0], gs[1], gs[2], g32[0])
	near(t, "dx", got[0], []float64{2, 4}, 0)
	expectZeros(t, "da", got[1], 40*50)
	expectZeros(t, "db", got[2], 30*30)
	near(t, "dx32", got[3], []float64{3, 12}, 0)
}

func expectZeros(t *testing.T, what string, got []float64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%s: %d values, want %d", what, len(got), n)
	}
	for i, v := range got {
		if v != 0 {
			t.Fatalf("%s[%d] = %v, want 0", what, i, v)
		}
	}
}

// VJP's gradOutput must have output's shape exactly: (3, 1) is not (3).
func TestVJPShapeIsStrict(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	u := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 1), gorgonia.WithName("u"), gorgonia.WithInit(gorgonia.RangedFrom(1)))
	y := gorgonia.Must(gorgonia.Sin(x))
	if _, err := ad.VJP(y, u, x); err == nil || !strings.Contains(err.Error(), "must be output's shape") {
		t.Fatalf("error %v", err)
	}
}
