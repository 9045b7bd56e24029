package ad_test

import (
	"fmt"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// squareSpec is y = x² (square, example_test.go), a Kernel op that writes
// every element.
func squareSpec() ad.OpSpec {
	return ad.OpSpec{
		Name: "ReuseSquare", InputDims: []int{1}, OutputDims: 1, KernelOverwrites: true,
		Shape:  func(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil },
		Kernel: ad.Floats(square[float32], square[float64]),
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := gorgonia.HadamardProd(gorgonia.Must(gorgonia.Add(in[0], in[0])), grad)
			return gorgonia.Nodes{d}, err
		},
	}
}

// first is the address of v's first element.
func first(t *testing.T, v gorgonia.Value) *float64 {
	t.Helper()
	d, ok := v.Data().([]float64)
	if !ok || len(d) == 0 {
		t.Fatalf("value %v is not a non-empty []float64", v)
	}
	return &d[0]
}

// TestReuseResults runs y = x², z = y², the gradient of Σz and its
// gradient again, three times with new x: under ReuseResults every run's
// values are right and y and z keep their memory; switched off, each run
// allocates anew. Both VMs.
func TestReuseResults(t *testing.T) {
	for _, lisp := range []bool{false, true} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))))
		y, err := ad.Apply(squareSpec(), x)
		if err != nil {
			t.Fatal(err)
		}
		z, err := ad.Apply(squareSpec(), y)
		if err != nil {
			t.Fatal(err)
		}
		var d1, d2 *gorgonia.Node
		if lisp {
			gorgonia.Must(gorgonia.Sum(z)) // the LispMachine's cost
		} else {
			g1, err := ad.Grad(gorgonia.Must(gorgonia.Sum(z)), x)
			if err != nil {
				t.Fatal(err)
			}
			g2, err := ad.Grad(gorgonia.Must(gorgonia.Sum(g1[0])), x)
			if err != nil {
				t.Fatal(err)
			}
			d1, d2 = g1[0], g2[0]
		}
		// The TapeMachine's nodes may hold stale values after a run (its
		// registers are reused): read results with gorgonia.Read, as users
		// do (it copies them).
		vals := make(map[*gorgonia.Node]*gorgonia.Value)
		for _, n := range []*gorgonia.Node{y, z, d1, d2} {
			if n != nil {
				vals[n] = new(gorgonia.Value)
				gorgonia.Read(n, vals[n])
			}
		}
		value := func(n *gorgonia.Node) gorgonia.Value {
			if lisp {
				return n.Value()
			}
			return *vals[n]
		}
		ad.ReuseResults(g, true)
		var tape gorgonia.VM
		if !lisp {
			tm := gorgonia.NewTapeMachine(g)
			defer tm.Close()
			tape = tm
		}
		var py, pz *float64
		for run, x0 := range [][]float64{{1, 2, 3}, {-1, 0.5, 4}, {2, -3, 0.25}} {
			if run == 2 {
				ad.ReuseResults(g, false)
			}
			if lisp { // the LispMachine wants its own binding of x: change x's values in place
				copy(x.Value().Data().([]float64), x0)
			} else if err := gorgonia.Let(x, tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]float64(nil), x0...)))); err != nil {
				t.Fatal(err)
			}
			var m gorgonia.VM = tape
			if lisp { // a LispMachine runs once
				m = gorgonia.NewLispMachine(g)
			}
			if !lisp {
				m.Reset()
			}
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			for i, v := range x0 {
				checks := []struct {
					n    *gorgonia.Node
					want float64
				}{{y, v * v}, {z, v * v * v * v}}
				if !lisp {
					checks = append(checks, struct {
						n    *gorgonia.Node
						want float64
					}{d1, 4 * v * v * v}, struct {
						n    *gorgonia.Node
						want float64
					}{d2, 12 * v * v})
				}
				for _, c := range checks {
					if got := value(c.n).Data().([]float64)[i]; got != c.want {
						t.Errorf("lisp %v run %d: %s[%d] = %v, want %v", lisp, run, c.n.Name(), i, got, c.want)
					}
				}
			}
			ny, nz := first(t, y.Value()), first(t, z.Value()) // the memory the ops wrote
			switch run {
			case 1:
				if ny != py || nz != pz {
					t.Errorf("lisp %v: under ReuseResults the second run moved y or z to new memory", lisp)
				}
			case 2:
				if ny == py || nz == pz {
					t.Errorf("lisp %v: with ReuseResults off the third run kept y's or z's memory", lisp)
				}
			}
			py, pz = ny, nz
		}
	}
}

// TestReuseResultsFedBack: a result given back to the graph as an input
// (h = x², then x := h's value) is not overwritten by the run that reads
// it: that run writes h elsewhere, and both values are right.
func TestReuseResultsFedBack(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{2, 3}))))
	h, err := ad.Apply(squareSpec(), x)
	if err != nil {
		t.Fatal(err)
	}
	ad.ReuseResults(g, true)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	want := [][]float64{{4, 9}, {16, 81}, {256, 6561}}
	for run := range want {
		if run > 0 {
			if err := gorgonia.Let(x, h.Value()); err != nil {
				t.Fatal(err)
			}
		}
		m.Reset()
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := h.Value().Data().([]float64)
		if got[0] != want[run][0] || got[1] != want[run][1] {
			t.Fatalf("run %d: h = %v, want %v", run, got, want[run])
		}
		if run > 0 {
			if xs := x.Value().Data().([]float64); xs[0] != want[run-1][0] || xs[1] != want[run-1][1] {
				t.Fatalf("run %d: the input fed back was overwritten: x = %v, want %v", run, xs, want[run-1])
			}
		}
	}
}

// A training-style loop under ReuseResults: every run writes y = x² into
// the memory of the previous run's y; the values read with gorgonia.Read
// are copies, valid after later runs.
func ExampleReuseResults() {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2}))))
	y, err := ad.Apply(squareSpec(), x)
	if err != nil {
		panic(err)
	}
	var yv gorgonia.Value
	gorgonia.Read(y, &yv)
	ad.ReuseResults(g, true)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	var kept []gorgonia.Value
	for step := range 3 {
		if err := gorgonia.Let(x, tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{float64(step), float64(step + 1)}))); err != nil {
			panic(err)
		}
		m.Reset()
		if err := m.RunAll(); err != nil {
			panic(err)
		}
		kept = append(kept, yv.(tensor.Tensor).Clone().(gorgonia.Value)) // Read's value is refreshed by every run: clone to keep it
	}
	fmt.Println(kept)
	// Output: [[0  1] [1  4] [4  9]]
}
