package gops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestRoIPoolReuseOverwrite: RoIPool's argmax and gather write every
// element of their results (KernelOverwrites), so with ad.ReuseResults a
// run writes into the arrays of two runs back without clearing them. Runs
// on inputs with NaNs (which win their bins, at other positions) come
// first; the runs on finite inputs after them, into those arrays, give
// bitwise the values and input gradients of a graph without reuse. (An
// element that no run writes is zero either way: the kernels' loops write
// each element unconditionally, which this cannot see.)
func TestRoIPoolReuseOverwrite(t *testing.T) {
	build := func(reuse bool) (*gorgonia.Node, gorgonia.VM, []*gorgonia.Value) {
		g := gorgonia.NewGraph()
		x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(2, 3, 9, 11), gorgonia.WithName("x"))
		bx := []float32{0, 0, 0, 10, 8, 1, 2.5, 1, 6, 7.5, 0, -3, -2, 4, 5, 1, 8, 7, 12, 10, 1, 3, 3, 3.2, 3.1}
		boxes := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(5, 5), gorgonia.WithName("boxes"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(5, 5), tensor.WithBacking(bx))))
		y, err := gops.RoIPool(x, boxes, gops.RoIPoolOpts{OutputSize: [2]int{3, 2}, SpatialScale: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := make([]float32, y.Shape().TotalSize())
		for i := range r {
			r[i] = float32(i%7) - 3
		}
		rn := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(y.Shape()...), gorgonia.WithName("R"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(r))))
		loss, err := gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, rn)))
		if err != nil {
			t.Fatal(err)
		}
		dx, err := ad.Grad(loss, x)
		if err != nil {
			t.Fatal(err)
		}
		vals := []*gorgonia.Value{new(gorgonia.Value), new(gorgonia.Value)}
		gorgonia.Read(y, vals[0])
		gorgonia.Read(dx[0], vals[1])
		ad.ReuseResults(g, reuse)
		return x, gorgonia.NewTapeMachine(g), vals
	}
	xp, mp, plain := build(false)
	xr, mr, reused := build(true)
	defer mp.Close()
	defer mr.Close()
	for run := range 6 {
		rng := rand.New(rand.NewPCG(uint64(run), 9))
		d := make([]float32, 2*3*9*11)
		for i := range d {
			d[i] = float32(rng.NormFloat64())
			if run < 2 && i%5 == run {
				d[i] = float32(math.NaN())
			}
		}
		for _, c := range []struct {
			x *gorgonia.Node
			m gorgonia.VM
		}{{xp, mp}, {xr, mr}} {
			if err := gorgonia.Let(c.x, tensor.New(tensor.WithShape(2, 3, 9, 11), tensor.WithBacking(append([]float32(nil), d...)))); err != nil {
				t.Fatal(err)
			}
			c.m.Reset()
			if err := c.m.RunAll(); err != nil {
				t.Fatal(err)
			}
		}
		if run < 2 {
			continue
		}
		for i := range plain {
			a, b := (*plain[i]).Data().([]float32), (*reused[i]).Data().([]float32)
			for j := range a {
				if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
					t.Fatalf("run %d, result %d, element %d: reuse %v, plain %v", run, i, j, b[j], a[j])
				}
			}
		}
	}
}
