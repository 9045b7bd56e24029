package gops_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ExampleMultiScaleRoIAlign pools two boxes of one 64x64 image from a
// two-level pyramid (strides 4 and 8, scales inferred): with s0 = 32 and
// k0 = 3, the 16x16 box pools from the stride-4 map, the 48x40 one from
// the stride-8 map. The gradient w.r.t. each map comes from ad.Grad.
func ExampleMultiScaleRoIAlign() {
	g := gorgonia.NewGraph()
	p2 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 16, 16),
		gorgonia.WithName("p2"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	p3 := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 8, 8),
		gorgonia.WithName("p3"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	boxes := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 4), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2, 4), tensor.WithBacking([]float64{
			8, 8, 24, 24, // s = 16: level floor(3 + log2(16/32)) = 2, the stride-4 map
			0, 16, 48, 56, // s = 43.8: level 3, the stride-8 map
		}))))

	y, err := gops.MultiScaleRoIAlign(gorgonia.Nodes{p2, p3}, gorgonia.Nodes{boxes}, [][2]int{{64, 64}},
		gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 2, CanonicalScale: 32, CanonicalLevel: 3})
	if err != nil {
		panic(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(y))
	grads, err := ad.Grad(loss, p2, p3)
	if err != nil {
		panic(err)
	}
	var yv, g2, g3 gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(grads[0], &g2)
	gorgonia.Read(grads[1], &g3)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	sum := func(v gorgonia.Value) (s float64) {
		for _, x := range v.Data().([]float64) {
			s += x
		}
		return s
	}
	fmt.Println(y.Shape(), yv.Data())
	fmt.Println(sum(g2), sum(g3)) // each box's 4 bins sum to 4 on its own map
	// Output:
	// (2, 1, 2, 2) [51 53 83 85 27.5 30.5 47.5 50.5]
	// 4 4
}
