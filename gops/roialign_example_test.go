package gops_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// RoIAlign in a graph, its gradient, and the gradient of a function of that
// gradient (a gradient-norm penalty), on the TapeMachine.
func ExampleRoIAlign() {
	g := gorgonia.NewGraph()
	// One 1×1×4×4 image with pixel values 0..15.
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 4, 4),
		gorgonia.WithName("x"), gorgonia.WithInit(gorgonia.RangedFrom(0)))
	// One box (batch_index, x1, y1, x2, y2) in pixel coordinates; with one
	// sample per bin, the samples fall on pixels (1,1), (1,2), (2,1), (2,2).
	boxes := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5),
		gorgonia.WithName("boxes"), gorgonia.WithValue(tensor.New(tensor.WithShape(1, 5),
			tensor.WithBacking([]float64{0, 0.5, 0.5, 2.5, 2.5}))))
	y, err := gops.RoIAlign(x, boxes, gops.RoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 1})
	if err != nil {
		panic(err)
	}
	// L = sum(y³); dL/dx; P = ||dL/dx||²; dP/dx is a second derivative.
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Cube(y))))
	dx, err := ad.Grad(loss, x)
	if err != nil {
		panic(err)
	}
	penalty := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(dx[0]))))
	ddx, err := ad.Grad(penalty, x)
	if err != nil {
		panic(err)
	}
	var yv, pv, ddxv gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(penalty, &pv)
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
	fmt.Println("penalty:", pv)
	fmt.Println("dpenalty/dx row 1:", ddxv.Data().([]float64)[4:8])
	// Output:
	// y: [5 6 9 10]
	// penalty: 166338
	// dpenalty/dx row 1: [0 4500 7776 0]
}
