package ad_test

import (
	"fmt"
	"math"
	"slices"
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

// squares is y = x², z = y² (squareSpec) in x's graph.
func squares(t *testing.T, x *gorgonia.Node) (y, z *gorgonia.Node) {
	t.Helper()
	y, err := ad.Apply(squareSpec(), x)
	if err != nil {
		t.Fatal(err)
	}
	if z, err = ad.Apply(squareSpec(), y); err != nil {
		t.Fatal(err)
	}
	return y, z
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
// gradient again, four times with new x: under ReuseResults every run's
// values are right and y and z alternate between two arrays (run 2 writes
// where run 0 did, run 1 elsewhere); switched off, the run allocates anew.
// Both VMs. Under ReuseResultsInPlace (TestReuseResultsInPlace) every
// run writes y and z where the first did.
func TestReuseResults(t *testing.T) { testReuseResults(t, false) }

// TestReuseResultsInPlace is TestReuseResults under ReuseResultsInPlace.
func TestReuseResultsInPlace(t *testing.T) { testReuseResults(t, true) }

// reuseOn switches g's reuse on, in place or with two arrays.
func reuseOn(g *gorgonia.ExprGraph, inPlace bool) {
	if inPlace {
		ad.ReuseResultsInPlace(g, true)
	} else {
		ad.ReuseResults(g, true)
	}
}

func testReuseResults(t *testing.T, inPlace bool) {
	for _, lisp := range []bool{false, true} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))))
		y, z := squares(t, x)
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
		reuseOn(g, inPlace)
		var tape gorgonia.VM
		if !lisp {
			tm := gorgonia.NewTapeMachine(g)
			defer tm.Close()
			tape = tm
		}
		var ptrs [][2]*float64
		for run, x0 := range [][]float64{{1, 2, 3}, {-1, 0.5, 4}, {2, -3, 0.25}, {0.5, 1.5, -2}} {
			if run == 3 && inPlace {
				ad.ReuseResultsInPlace(g, false)
			} else if run == 3 {
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
			ptrs = append(ptrs, [2]*float64{ny, nz})
			switch {
			case inPlace && (run == 1 || run == 2):
				if ptrs[run] != ptrs[0] {
					t.Errorf("lisp %v: under ReuseResultsInPlace run %d did not write y and z where the first did", lisp, run)
				}
			case run == 1:
				if ptrs[1] == ptrs[0] {
					t.Errorf("lisp %v: the second run wrote y and z where the first did", lisp)
				}
			case run == 2:
				if ptrs[2] != ptrs[0] {
					t.Errorf("lisp %v: under ReuseResults the third run did not write y and z where the first did", lisp)
				}
			case run == 3:
				if ptrs[3][0] == ptrs[1][0] || ptrs[3][0] == ptrs[2][0] || ptrs[3][1] == ptrs[1][1] || ptrs[3][1] == ptrs[2][1] {
					t.Errorf("lisp %v: with ReuseResults off the fourth run reused y's or z's memory", lisp)
				}
			}
		}
	}
}

// TestReuseResultsFedBack: a result given back to the graph as an input
// (h = x², then x := h's value) is not overwritten by the run that reads
// it: that run writes h elsewhere, and both values are right; under
// ReuseResults and ReuseResultsInPlace.
func TestReuseResultsFedBack(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		testReuseFedBack(t, inPlace)
	}
}

func testReuseFedBack(t *testing.T, inPlace bool) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{2, 3}))))
	h, err := ad.Apply(squareSpec(), x)
	if err != nil {
		t.Fatal(err)
	}
	reuseOn(g, inPlace)
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

// TestReuseResultsFedBackTwoHops: a state fed back to an input that its
// own op does not read (x → y = x² → h = y², then x := h's value; z = x²
// reads x too) is left intact by the next run, under ReuseResults and
// ReuseResultsInPlace: x and z right after every run.
func TestReuseResultsFedBackTwoHops(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1.5, 1.25}))))
		y, h := squares(t, x)
		_ = y
		z, err := ad.Apply(squareSpec(), x)
		if err != nil {
			t.Fatal(err)
		}
		reuseOn(g, inPlace)
		m := gorgonia.NewTapeMachine(g)
		xs := []float64{1.5, 1.25}
		for run := 0; run < 4; run++ {
			if run > 0 {
				if err := gorgonia.Let(x, h.Value()); err != nil {
					t.Fatal(err)
				}
				prev := h.Value().Data().([]float64)
				xs = []float64{prev[0], prev[1]}
			}
			m.Reset()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			got, zs, hs := x.Value().Data().([]float64), z.Value().Data().([]float64), h.Value().Data().([]float64)
			for i := range xs {
				if got[i] != xs[i] || zs[i] != xs[i]*xs[i] || hs[i] != (xs[i]*xs[i])*(xs[i]*xs[i]) {
					t.Fatalf("in place %v run %d: x = %v, z = %v, h = %v; want x = %v", inPlace, run, got, zs, hs, xs)
				}
			}
		}
		m.Close()
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

// close says whether a and b agree to 1e-13 relative (the reference
// rounds differently from the ops).
func close(a, b float64) bool { return math.Abs(a-b) <= 1e-13*math.Abs(b) }

// vec is a float64 vector value.
func vec(v ...float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(append([]float64(nil), v...)))
}

// TestReuseResultsStateFedBack: recurrent states fed back with Let and
// read by ops other than the one that made them (found by a review of the
// first, single-array ReuseResults, which overwrote them): out = x − w²
// with x := the last run's w², and a recurrence h = (x²)², x := h, with
// the gradient of Σ(h + x), which reads x after h is computed. Several
// runs, reuse off and on, both right.
func TestReuseResultsStateFedBack(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"), gorgonia.WithValue(vec(0, 0)))
		w := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("w"), gorgonia.WithValue(vec(2, 3)))
		h, err := ad.Apply(squareSpec(), w)
		if err != nil {
			t.Fatal(err)
		}
		out := gorgonia.Must(gorgonia.Sub(x, h))
		var ov gorgonia.Value
		gorgonia.Read(out, &ov)
		ad.ReuseResults(g, reuse)
		m := gorgonia.NewTapeMachine(g)
		prev := []float64{0, 0}
		for run, wv := range [][]float64{{2, 3}, {1, 1}, {0.5, 4}, {3, -1}} {
			if run > 0 {
				gorgonia.Let(x, h.Value()) // the state fed back
			}
			gorgonia.Let(w, vec(wv...))
			m.Reset()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			got := ov.Data().([]float64)
			for i := range got {
				if want := prev[i] - wv[i]*wv[i]; got[i] != want {
					t.Errorf("reuse %v run %d: out[%d] = x − w² = %v, want %v", reuse, run, i, got[i], want)
				}
			}
			prev = []float64{wv[0] * wv[0], wv[1] * wv[1]}
		}
		m.Close()
	}
	for _, reuse := range []bool{false, true} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"), gorgonia.WithValue(vec(1.1, 0.9)))
		a, err := ad.Apply(squareSpec(), x)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ad.Apply(squareSpec(), a)
		if err != nil {
			t.Fatal(err)
		}
		s := gorgonia.Must(gorgonia.Add(gorgonia.Must(gorgonia.Sum(h)), gorgonia.Must(gorgonia.Sum(x))))
		dx, err := ad.Grad(s, x)
		if err != nil {
			t.Fatal(err)
		}
		var sv, dv gorgonia.Value
		gorgonia.Read(s, &sv)
		gorgonia.Read(dx[0], &dv)
		ad.ReuseResults(g, reuse)
		m := gorgonia.NewTapeMachine(g)
		xs := []float64{1.1, 0.9}
		for run := range 3 {
			if run > 0 {
				gorgonia.Let(x, h.Value()) // x := x⁴
				for i, v := range xs {
					xs[i] = (v * v) * (v * v)
				}
			}
			m.Reset()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			var want float64
			for _, v := range xs {
				want += v*v*v*v + v
			}
			if got := sv.Data().(float64); !close(got, want) {
				t.Errorf("reuse %v run %d: Σ(x⁴ + x) = %v, want %v", reuse, run, got, want)
			}
			for i, v := range xs {
				if got, w := dv.Data().([]float64)[i], 4*v*v*v+1; !close(got, w) {
					t.Errorf("reuse %v run %d: d/dx[%d] = %v, want %v", reuse, run, i, got, w)
				}
			}
		}
		m.Close()
	}
}

// TestReuseResultsLispRead: the LispMachine's gorgonia.Read hands out the
// node's value itself (no copy); under ReuseResults a value read in one
// run survives the next run, which writes elsewhere.
func TestReuseResultsLispRead(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("x"), gorgonia.WithValue(vec(2, 3)))
	y, err := ad.Apply(squareSpec(), x)
	if err != nil {
		t.Fatal(err)
	}
	var yv gorgonia.Value
	gorgonia.Read(y, &yv)
	ad.ReuseResults(g, true)
	if err := gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly()).RunAll(); err != nil {
		t.Fatal(err)
	}
	kept := yv
	copy(x.Value().Data().([]float64), []float64{5, 7})
	if err := gorgonia.NewLispMachine(g, gorgonia.ExecuteFwdOnly()).RunAll(); err != nil {
		t.Fatal(err)
	}
	if d := kept.Data().([]float64); d[0] != 4 || d[1] != 9 {
		t.Errorf("the value read in run 1 is now %v, want [4 9]", d)
	}
	if d := yv.Data().([]float64); d[0] != 25 || d[1] != 49 {
		t.Errorf("run 2 read %v, want [25 49]", d)
	}
}

// TestReuseResultsInPlaceEmptyInput: a graph input bound to an empty
// tensor (no boxes in a batch) is skipped by ReuseResultsInPlace's check
// of the inputs' memory (an empty tensor's Data panics), run after run.
func TestReuseResultsInPlaceEmptyInput(t *testing.T) {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))))
	e := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(0, 5), gorgonia.WithName("empty"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(0, 5), tensor.Of(tensor.Float64))))
	y, z := squares(t, x)
	ez, err := ad.Apply(squareSpec(), gorgonia.Must(gorgonia.Reshape(e, tensor.Shape{0})))
	if err != nil {
		t.Fatal(err)
	}
	ad.ReuseResultsInPlace(g, true)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	for run := 0; run < 3; run++ {
		m.Reset()
		if err := m.RunAll(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if ys, zs := y.Value().Data().([]float64), z.Value().Data().([]float64); ys[2] != 9 || zs[2] != 81 {
			t.Fatalf("run %d: y = %v, z = %v", run, ys, zs)
		}
		if n := ez.Value().Shape().TotalSize(); n != 0 {
			t.Fatalf("run %d: the empty input's square has %d elements", run, n)
		}
	}
}

// TestReuseResultsInPlaceFedBackView: a 0-d view of an op's result (its
// Data a number, not a slice) fed back into a scalar input is still
// found sharing the result's memory, so the op writes its other array:
// run after run the state is the value of a graph without reuse.
func TestReuseResultsInPlaceFedBackView(t *testing.T) {
	var got [2][]float64
	for i, inPlace := range []bool{false, true} {
		g := gorgonia.NewGraph()
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"))
		s := gorgonia.NewScalar(g, tensor.Float64, gorgonia.WithName("s"), gorgonia.WithValue(0.0))
		y, err := ad.Apply(squareSpec(), x)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ad.Apply(squareSpec(), gorgonia.Must(gorgonia.Reshape(s, tensor.Shape{1})))
		if err != nil {
			t.Fatal(err)
		}
		if inPlace {
			ad.ReuseResultsInPlace(g, true)
		}
		m := gorgonia.NewTapeMachine(g)
		xs := []float64{1, 2, 3}
		for run := 0; run < 4; run++ {
			if err := gorgonia.Let(x, tensor.New(tensor.WithShape(3), tensor.WithBacking(slices.Clone(xs)))); err != nil {
				t.Fatal(err)
			}
			m.Reset()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
			got[i] = append(got[i], v.Value().Data().([]float64)[0])
			// s := y[2], a 0-d view into y's array; x changes before the next run
			view, err := y.Value().(*tensor.Dense).Slice(gorgonia.S(2))
			if err != nil {
				t.Fatal(err)
			}
			if err := gorgonia.Let(s, view); err != nil {
				t.Fatal(err)
			}
			xs[2]++
		}
		m.Close()
	}
	if !slices.Equal(got[0], got[1]) {
		t.Fatalf("s² by run: %v in place, %v without reuse", got[1], got[0])
	}
}
