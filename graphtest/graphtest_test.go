package graphtest

import (
	"errors"
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func vec(xs ...float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(xs)), tensor.WithBacking(xs))
}

// composite is f(x, y) = tanh(x ⊙ y) ⊙ exp(x) + sin(y)², right at every order.
func composite(in gorgonia.Nodes) (*gorgonia.Node, error) {
	x, y := in[0], in[1]
	xy, err := gorgonia.HadamardProd(x, y)
	if err != nil {
		return nil, err
	}
	a := gorgonia.Must(gorgonia.HadamardProd(gorgonia.Must(gorgonia.Tanh(xy)), gorgonia.Must(gorgonia.Exp(x))))
	return gorgonia.Add(a, gorgonia.Must(gorgonia.Square(gorgonia.Must(gorgonia.Sin(y)))))
}

func TestCheckPassesCorrectComposite(t *testing.T) {
	in := []*tensor.Dense{vec(0.3, -0.7, 1.1), vec(0.5, 0.2, -0.4)}
	if err := Check(composite, in, Options{Order: 3}); err != nil {
		t.Fatal(err)
	}
	if err := CheckVMs(composite, in, Options{RTol: 1e-12, ATol: 1e-12}); err != nil {
		t.Fatal(err)
	}
}

// wrongSquare is x² with a backward of 3x·G instead of 2x·G.
func wrongSquare(factor float64) Func {
	return func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		spec := ad.OpSpec{
			Name:       "WrongSquare",
			Params:     "",
			InputDims:  []int{1},
			OutputDims: 1,
			Shape:      func(s []tensor.Shape) (tensor.Shape, error) { return s[0].Clone(), nil },
			Forward: func(v []gorgonia.Value) (gorgonia.Value, error) {
				x := v[0].Data().([]float64)
				out := make([]float64, len(x))
				for i := range x {
					out[i] = x[i] * x[i]
				}
				return tensor.New(tensor.WithShape(len(out)), tensor.WithBacking(out)), nil
			},
			Backward: func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
				k := gorgonia.Must(ad.Constant(in[0].Graph(), gorgonia.NewF64(factor)))
				d, err := gorgonia.HadamardProd(in[0], g)
				if err != nil {
					return nil, err
				}
				d, err = gorgonia.Mul(d, k)
				return gorgonia.Nodes{d}, err
			},
		}
		return ad.Apply(spec, in[0])
	}
}

func TestCheckCatchesWrongBackward(t *testing.T) {
	in := []*tensor.Dense{vec(0.3, -0.7, 1.1)}
	if err := Check(wrongSquare(2), in, Options{Order: 2}); err != nil {
		t.Fatalf("the right backward failed: %v", err)
	}
	err := Check(wrongSquare(3), in, Options{Order: 1})
	var m *Mismatch
	if !errors.As(err, &m) {
		t.Fatalf("want a Mismatch, got %v", err)
	}
	if m.Order != 1 || m.Input != 0 || m.Index[0] != 0 {
		t.Fatalf("mismatch %+v", m)
	}
	if r := m.Analytic / m.Numeric; r < 1.49 || r > 1.51 {
		t.Fatalf("analytic/numeric = %v, want 1.5", r)
	}
	if !strings.Contains(err.Error(), "analytic") || !strings.Contains(err.Error(), "in0") {
		t.Fatalf("message does not name the input and values: %v", err)
	}
}

// Cube(Reshape(x)) on the TapeMachine writes into x's memory (a Gorgonia
// v0.9.18 aliasing bug); the check reports it instead of a huge mismatch.
func TestCheckReportsOverwrittenInput(t *testing.T) {
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		r, err := gorgonia.Reshape(in[0], tensor.Shape{3, 1})
		if err != nil {
			return nil, err
		}
		return gorgonia.Cube(r)
	}
	err := Check(f, []*tensor.Dense{vec(0.3, -0.7, 1.1)}, Options{Order: 1})
	if err == nil || !strings.Contains(err.Error(), "overwrote input 0") {
		t.Fatalf("error %v, want an overwritten-input report", err)
	}
}

// Gorgonia's Max: the LispMachine's gradient is zero (docs/GORGONIA.md), the
// TapeMachine's is right, so CheckVMs fails.
func TestCheckVMsCatchesDisagreement(t *testing.T) {
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Max(in[0], 0) }
	err := CheckVMs(f, []*tensor.Dense{vec(0.3, -0.7, 1.1)}, Options{})
	if err == nil || !strings.Contains(err.Error(), "TapeMachine") || !strings.Contains(err.Error(), "LispMachine") {
		t.Fatalf("error %v, want a TapeMachine/LispMachine disagreement", err)
	}
}

func TestCheckBadOptions(t *testing.T) {
	in := []*tensor.Dense{vec(0.3, -0.7, 1.1)}
	cases := []struct {
		name string
		in   []*tensor.Dense
		f    Func
		o    Options
		want string
	}{
		{"wrt out of range", in, composite1, Options{Wrt: []int{1}}, "Wrt index 1 out of range"},
		{"negative wrt", in, composite1, Options{Wrt: []int{-1}}, "Wrt index -1 out of range"},
		{"nil input", []*tensor.Dense{nil}, composite1, Options{}, "input 0 is nil"},
		{"negative tolerance", in, composite1, Options{RTol: -1}, "must be >= 0"},
		{"nil node", in, func(gorgonia.Nodes) (*gorgonia.Node, error) { return nil, nil }, Options{}, "f returned a nil node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, check := range []func(Func, []*tensor.Dense, Options) error{Check, CheckVMs} {
				if err := check(c.f, c.in, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want %q", err, c.want)
				}
			}
		})
	}
}

func composite1(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Sin(in[0]) }

func TestEval(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float32{1.5, -2}))))
	sq := gorgonia.Must(gorgonia.Square(x))
	s := gorgonia.Must(gorgonia.Sum(sq))
	got, err := Eval(g, sq, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != 2 || got[0][0] != 2.25 || got[0][1] != 4 || len(got[1]) != 1 || got[1][0] != 6.25 {
		t.Fatalf("Eval = %v, want [[2.25 4] [6.25]]", got)
	}
}

// Eval and the checks reject what Gorgonia would crash on: a nil node, a
// graph without inputs, empty or integer inputs.
func TestBadUse(t *testing.T) {
	g := gorgonia.NewGraph()
	c := gorgonia.Must(ad.Constant(g, gorgonia.NewF64(2)))
	if _, err := Eval(g, c); err == nil || !strings.Contains(err.Error(), "graphtest: Eval") {
		t.Errorf("Eval on a graph without inputs: %v", err)
	}
	if _, err := Eval(g, nil); err == nil || !strings.Contains(err.Error(), "node 0 is nil") {
		t.Errorf("Eval(nil): %v", err)
	}
	if _, err := Eval(nil); err == nil || !strings.Contains(err.Error(), "the graph is nil") {
		t.Errorf("Eval(nil): %v", err)
	}
	sum := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Sum(in[0]) }
	one := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))
	if err := Check(nil, []*tensor.Dense{one}, Options{}); err == nil || !strings.Contains(err.Error(), "f is nil") {
		t.Errorf("Check(nil): %v", err)
	}
	empty := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(0))
	ints := tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2}))
	for _, c := range []struct {
		in   *tensor.Dense
		want string
	}{{empty, "input 0 (0) is empty"}, {ints, "input 0 is int; want float32 or float64"}} {
		if err := Check(sum, []*tensor.Dense{c.in}, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check: %v, want %q", err, c.want)
		}
		if err := CheckVMs(sum, []*tensor.Dense{c.in}, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckVMs: %v, want %q", err, c.want)
		}
	}
}

// A transposed input is checked as the matrix it is, not as its storage.
func TestTransposedInput(t *testing.T) {
	x := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0.3, -0.7, 1.1, 0.5, -0.2, 0.9}))
	if err := x.T(); err != nil {
		t.Fatal(err)
	}
	w := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		return gorgonia.HadamardProd(gorgonia.Must(gorgonia.Cube(in[0])), in[1])
	}
	if err := Check(f, []*tensor.Dense{x, w}, Options{Order: 2}); err != nil {
		t.Fatal(err)
	}
}

// CheckDeterministic and CheckEmpty refuse bad arguments with an error.
func TestDeterminismArgs(t *testing.T) {
	x := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))
	f := func(in gorgonia.Nodes) (*gorgonia.Node, error) { return gorgonia.Square(in[0]) }
	for _, err := range []error{
		CheckDeterministic(f, []*tensor.Dense{x}, []int{0}),
		CheckDeterministic(f, []*tensor.Dense{x}, []int{1}, 1, 2),
		CheckDeterministic(f, []*tensor.Dense{nil}, nil, 1, 2),
		CheckEmpty(f, []*tensor.Dense{x}, []int{-1}),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "graphtest: ") {
			t.Errorf("error %v", err)
		}
	}
	if err := CheckDeterministic(f, []*tensor.Dense{x}, []int{0}, 1, 2); err != nil {
		t.Error(err)
	}
}
