package gops_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RoIPool in a graph, its gradient, and a second derivative through the
// gradient, on the TapeMachine.
func ExampleRoIPool() {
	g := gorgonia.NewGraph()
	// One 1×1×4×4 image with pixel values 0..15.
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 4, 4),
		gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	// One box (batch_index, x1, y1, x2, y2) over the whole image: 2×2 bins of
	// 2×2 pixels each.
	boxes := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5),
		gorgonia.WithName("boxes"), gorgonia.WithValue(tensor.New(tensor.WithShape(1, 5),
			tensor.WithBacking([]float64{0, 0, 0, 3, 3}))))
	y, err := gops.RoIPool(x, boxes, gops.RoIPoolOpts{OutputSize: [2]int{2, 2}})
	if err != nil {
		panic(err)
	}
	// L = sum(y²); dL/dx = 2·y at each bin's maximum; P = ||dL/dx||².
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	dx, err := ad.Grad(loss, x)
	if err != nil {
		panic(err)
	}
	penalty := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(dx[0]))))
	ddx, err := ad.Grad(penalty, x)
	if err != nil {
		panic(err)
	}
	var yv, dxv, ddxv gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(dx[0], &dxv)
	gorgonia.Read(ddx[0], &ddxv)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println("y:", yv.Data())
	fmt.Println("dL/dx:", dxv.Data())
	fmt.Println("dP/dx:", ddxv.Data())
	// Output:
	// y: [5 7 13 15]
	// dL/dx: [0 0 0 0 0 10 0 14 0 0 0 0 0 26 0 30]
	// dP/dx: [0 0 0 0 0 40 0 56 0 0 0 0 0 104 0 120]
}
