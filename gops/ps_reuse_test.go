package gops_test

import (
	"fmt"
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
// with a different upstream gradient R each time give bitwise the input
// gradient of a graph without reuse.
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
		t.Run(name, func(t *testing.T) { testPSReuseOverwrite(t, op) })
	}
}

func testPSReuseOverwrite(t *testing.T, op func(x, b *gorgonia.Node) (*gorgonia.Node, error)) {
	type graph struct {
		r  *gorgonia.Node
		m  gorgonia.VM
		dx gorgonia.Value
	}
	build := func(mode string) *graph {
		g := gorgonia.NewGraph()
		xd := make([]float64, 2*18*9*11)
		x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 18, 9, 11), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(2, 18, 9, 11), tensor.WithBacking(xd))))
		bx := []float64{0, 0, 0, 10, 8, 1, 2.5, 1, 6, 7.5, 0, -3, -2, 4, 5, 1, 8, 7, 12, 10, 1, 3, 3, 3.2, 3.1, 0, 1, 1, 9, 9}
		boxes := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(6, 5), gorgonia.WithName("boxes"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(6, 5), tensor.WithBacking(bx))))
		y, err := op(x, boxes)
		if err != nil {
			t.Fatal(err)
		}
		r := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(y.Shape()...), gorgonia.WithName("R"))
		loss, err := gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, r)))
		if err != nil {
			t.Fatal(err)
		}
		dx, err := ad.Grad(loss, x)
		if err != nil {
			t.Fatal(err)
		}
		gr := &graph{r: r}
		gorgonia.Read(dx[0], &gr.dx)
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
		rv := make([]float64, 6*2*3*3)
		for i := range rv {
			rv[i] = rng.NormFloat64()
		}
		var want []float64
		for i, gr := range graphs {
			if err := gorgonia.Let(gr.r, tensor.New(tensor.WithShape(6, 2, 3, 3), tensor.WithBacking(slices.Clone(rv)))); err != nil {
				t.Fatal(err)
			}
			gr.m.Reset()
			if err := gr.m.RunAll(); err != nil {
				t.Fatal(err)
			}
			got := gr.dx.Data().([]float64)
			if i == 0 {
				want = slices.Clone(got)
				if !slices.ContainsFunc(want, func(v float64) bool { return v != 0 }) {
					t.Fatal("the gradient is all zeros")
				}
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("run %d, graph %d: input gradient differs from the graph without reuse", run, i)
			}
		}
	}
}
