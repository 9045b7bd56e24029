package gops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestPSReuseOverwrite: PSRoIPool's and PSRoIAlign's transposes write
// every element of their results (each plane cleared as its channel's
// boxes add into it), so under ad.ReuseResults and ad.ReuseResultsInPlace
// they run into the array of an earlier run without a clearing pass. Runs
// with a different input x and upstream gradient R each time give bitwise
// the output and input gradient of a graph without reuse, for six boxes
// and for none.
func TestPSReuseOverwrite(t *testing.T) {
	ops := map[string]func(x, b *gorgonia.Node) (*gorgonia.Node, error){
		"PSRoIPool": func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.PSRoIPool(x, b, gops.PSRoIPoolOpts{OutputSize: [2]int{3, 3}, SpatialScale: 1})
		},
		"PSRoIAlign": func(x, b *gorgonia.Node) (*gorgonia.Node, error) {
			return gops.PSRoIAlign(x, b, gops.PSRoIAlignOpts{OutputSize: [2]int{3, 3}, SpatialScale: 1, SamplingRatio: 2})
		},
	}
	for name, op := range ops {
		for _, k := range []int{6, 0} {
			t.Run(fmt.Sprint(name, "/K=", k), func(t *testing.T) { testPSReuseOverwrite(t, op, k) })
		}
	}
}

func testPSReuseOverwrite(t *testing.T, op func(x, b *gorgonia.Node) (*gorgonia.Node, error), k int) {
	type graph struct {
		x, r, y, dx *gorgonia.Node
		m           gorgonia.VM
	}
	build := func(mode string) *graph {
		g := gorgonia.NewGraph()
		x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 18, 9, 11), gorgonia.WithName("x"))
		bx := []float64{0, 0, 0, 10, 8, 1, 2.5, 1, 6, 7.5, 0, -3, -2, 4, 5, 1, 8, 7, 12, 10, 1, 3, 3, 3.2, 3.1, 0, 1, 1, 9, 9}[:5*k]
		boxes := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(k, 5), gorgonia.WithName("boxes"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(bx))))
		y, err := op(x, boxes)
		if err != nil {
			t.Fatal(err)
		}
		r := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(y.Shape()...), gorgonia.WithName("R"))
		// <R, y>'s gradient by ad.VJP (Gorgonia's HadamardProd panics on
		// the empty y of no boxes).
		dx, err := ad.VJP(y, r, x)
		if err != nil {
			t.Fatal(err)
		}
		// The values are read right after each run (gorgonia.Read's copy
		// panics on an empty tensor).
		gr := &graph{x: x, r: r, y: y, dx: dx[0]}
		switch mode {
		case "reuse":
			ad.ReuseResults(g, true)
		case "inplace":
			ad.ReuseResultsInPlace(g, true)
		}
		gr.m = gorgonia.NewTapeMachine(g)
		return gr
	}
	graphs := []*graph{build("plain"), build("reuse"), build("inplace")}
	for _, gr := range graphs {
		defer gr.m.Close()
	}
	for run := range 5 {
		rng := rand.New(rand.NewPCG(uint64(run), 3))
		xv, rv := make([]float64, 2*18*9*11), make([]float64, k*2*3*3)
		for i := range xv {
			xv[i] = rng.NormFloat64()
		}
		for i := range rv {
			rv[i] = rng.NormFloat64()
		}
		var want [2][]uint64
		for i, gr := range graphs {
			if err := gorgonia.Let(gr.x, tensor.New(tensor.WithShape(2, 18, 9, 11), tensor.WithBacking(slices.Clone(xv)))); err != nil {
				t.Fatal(err)
			}
			if err := gorgonia.Let(gr.r, tensor.New(tensor.WithShape(k, 2, 3, 3), tensor.WithBacking(slices.Clone(rv)))); err != nil {
				t.Fatal(err)
			}
			gr.m.Reset()
			if err := gr.m.RunAll(); err != nil {
				t.Fatal(err)
			}
			got := [2][]uint64{bits(gr.y.Value()), bits(gr.dx.Value())}
			if i == 0 {
				want = got
				if k > 0 && !slices.ContainsFunc(want[1], func(v uint64) bool { return v != 0 }) {
					t.Fatal("the gradient is all zeros")
				}
				continue
			}
			if !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) {
				t.Fatalf("run %d, graph %d: output or input gradient differs from the graph without reuse", run, i)
			}
		}
	}
}

// bits is the IEEE bits of a float64 value's elements (none for an empty
// tensor, whose Data panics).
func bits(v gorgonia.Value) []uint64 {
	if v.Size() == 0 {
		return nil
	}
	d := v.Data().([]float64)
	out := make([]uint64, len(d))
	for i, f := range d {
		out[i] = math.Float64bits(f)
	}
	return out
}
