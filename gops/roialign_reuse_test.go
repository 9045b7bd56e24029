package gops_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// roiAlignReuseNet is RoIAlign of x [2, 3, 20, 16] at boxes [3, 5] and
// the gradient of Σ R⊙RoIAlign w.r.t. x (RoIAlign's transpose, which
// overwrites its result), read with gorgonia.Read.
func roiAlignReuseNet(t *testing.T) (g *gorgonia.ExprGraph, x, boxes, r *gorgonia.Node, vals []*gorgonia.Value) {
	t.Helper()
	g = gorgonia.NewGraph()
	xv := make([]float64, 2*3*20*16)
	for i := range xv {
		xv[i] = math.Sin(float64(i))
	}
	x = gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(2, 3, 20, 16), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2, 3, 20, 16), tensor.WithBacking(xv))))
	boxes = gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 5), gorgonia.WithName("boxes"))
	r = gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(3, 3, 2, 2), gorgonia.WithName("r"))
	y, err := gops.RoIAlign(x, boxes, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	loss, err := gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, r)))
	if err != nil {
		t.Fatal(err)
	}
	grads, err := ad.Grad(loss, x)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*gorgonia.Node{y, grads[0]} {
		v := new(gorgonia.Value)
		gorgonia.Read(n, v)
		vals = append(vals, v)
	}
	return g, x, boxes, r, vals
}

// TestRoIAlignTransposeReuse: under ad.ReuseResults, RoIAlign's transpose
// writes every element of its kept result: two runs whose boxes cover
// both images and whose upstream gradient is NaN (the channels-last
// layout) leave NaN in the kept arrays; a run with those boxes and a
// finite gradient (channels-last again), then runs with a few small boxes
// on image 1, one outside the image and one without area (the in-place
// layout, most pixels untouched) give bitwise a graph's without reuse.
func TestRoIAlignTransposeReuse(t *testing.T) {
	gp, _, bp, rp, plain := roiAlignReuseNet(t)
	gr, _, br, rr, reused := roiAlignReuseNet(t)
	ad.ReuseResults(gr, true)
	mp, mr := gorgonia.NewTapeMachine(gp), gorgonia.NewTapeMachine(gr)
	defer mp.Close()
	defer mr.Close()
	for run := range 5 {
		boxes := []float64{0, 0, 0, 16, 20, 1, 0, 0, 16, 20, 1, -1, -1, 17, 21}
		rv := make([]float64, 3*3*2*2)
		for i := range rv {
			rv[i] = math.NaN()
		}
		if run >= 2 {
			for i := range rv {
				rv[i] = math.Cos(float64(i + run))
			}
		}
		if run >= 3 {
			boxes = []float64{1, 2.5 + float64(run), 3, 6, 7.5, 1, 30, 40, 35, 45, 1, 4, 4, 4, 4}
		}
		for _, s := range []struct{ b, r *gorgonia.Node }{{bp, rp}, {br, rr}} {
			if err := gorgonia.Let(s.b, tensor.New(tensor.WithShape(3, 5), tensor.WithBacking(append([]float64(nil), boxes...)))); err != nil {
				t.Fatal(err)
			}
			if err := gorgonia.Let(s.r, tensor.New(tensor.WithShape(3, 3, 2, 2), tensor.WithBacking(append([]float64(nil), rv...)))); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range []gorgonia.VM{mp, mr} {
			m.Reset()
			if err := m.RunAll(); err != nil {
				t.Fatal(err)
			}
		}
		if run < 2 {
			continue
		}
		for i := range plain {
			a, b := graphtest.Floats(*plain[i]), graphtest.Floats(*reused[i])
			for j := range a {
				if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
					t.Fatalf("run %d value %d [%d]: %v without reuse, %v with", run, i, j, a[j], b[j])
				}
			}
		}
	}
}
