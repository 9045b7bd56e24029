package gops_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// secondOrderGraph is a small detection-style graph, float32:
// x [2, 16, 32, 32] → DeformConv2d v2 3×3 (weight [16, 16, 3, 3], given
// offsets and mask) → RoIAlign 7×7 of 64 boxes → L = Σ y². With order 1 it
// builds ∇L w.r.t. the weight, offsets and input; with order 2 also the
// gradient-penalty step ∇_w Σ‖∇_x L‖² (as in WGAN-GP or the demo's MAML).
func secondOrderGraph(tb testing.TB, order int) gorgonia.VM {
	tb.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	g := gorgonia.NewGraph()
	node := func(name string, scale float64, shape ...int) *gorgonia.Node {
		d := make([]float32, tensor.Shape(shape).TotalSize())
		for i := range d {
			d[i] = float32(scale * r.NormFloat64())
		}
		return gorgonia.NewTensor(g, tensor.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))))
	}
	x := node("x", 1, 2, 16, 32, 32)
	w := node("w", 0.1, 16, 16, 3, 3)
	off := node("offset", 1, 2, 18, 32, 32)
	mask := node("mask", 0.5, 2, 9, 32, 32)
	bd := make([]float32, 0, 64*5)
	for k := 0; k < 64; k++ {
		x1, y1 := 28*r.Float64(), 28*r.Float64()
		bd = append(bd, float32(k%2), float32(x1), float32(y1), float32(x1+2+2*r.Float64()*(30-x1)/2), float32(y1+2+2*r.Float64()*(30-y1)/2))
	}
	boxes := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(64, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(64, 5), tensor.WithBacking(bd))))
	f, err := gops.DeformConv2d(x, off, w, nil, mask, gops.DeformConv2dOpts{Padding: [2]int{1, 1}})
	if err != nil {
		tb.Fatal(err)
	}
	y, err := gops.RoIAlign(f, boxes, gops.RoIAlignOpts{OutputSize: [2]int{7, 7}, SamplingRatio: 2, Aligned: true})
	if err != nil {
		tb.Fatal(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	g1, err := ad.Grad(loss, w, off, x)
	if err != nil {
		tb.Fatal(err)
	}
	if order == 2 {
		penalty := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(g1[2]))))
		if _, err := ad.Grad(penalty, w); err != nil {
			tb.Fatal(err)
		}
	}
	return gorgonia.NewTapeMachine(g)
}

// BenchmarkSecondOrder times the first-order pass (forward and ∇L) and the
// pass that adds a second-order gradient of the same graph; issue 6 asks
// the second to cost at most 3× the first.
func BenchmarkSecondOrder(b *testing.B) {
	for _, order := range []int{1, 2} {
		name := "first-order"
		if order == 2 {
			name = "second-order"
		}
		b.Run(name, func(b *testing.B) {
			m := secondOrderGraph(b, order)
			defer m.Close()
			timeVM(b, m)
		})
	}
}
