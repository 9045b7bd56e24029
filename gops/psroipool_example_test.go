package gops_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PSRoIPool averages each bin of its position-sensitive channel: with 4
// input channels and 2×2 bins, bin (i, j) of the one output channel is the
// mean of input channel 2i + j over that quadrant. The result is linear in
// the input, so a gradient of a gradient of a cube passes through it.
func ExamplePSRoIPool() {
	g := gorgonia.NewGraph()
	// One image, 4 channels of 4×4; pixel (r, col) of channel k is
	// 100k + 4r + col.
	data := make([]float64, 4*4*4)
	for i := range data {
		data[i] = float64(100*(i/16) + i%16)
	}
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 4, 4, 4), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 4, 4, 4), tensor.WithBacking(data))))
	boxes := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 5), tensor.WithBacking([]float64{0, 0, 0, 4, 4}))))
	y, err := gops.PSRoIPool(x, boxes, gops.PSRoIPoolOpts{OutputSize: [2]int{2, 2}})
	if err != nil {
		panic(err)
	}
	// L = Σ y²: dL/dx spreads 2y/4 over each bin's 4 pixels, so Σ dL/dx is
	// Σ 2y, whose gradient is 2/4 on every pixel of a bin.
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	dx, err := ad.Grad(loss, x)
	if err != nil {
		panic(err)
	}
	ddx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(dx[0])), x)
	if err != nil {
		panic(err)
	}
	var yv, ddxv gorgonia.Value
	gorgonia.Read(y, &yv)
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
	fmt.Println("d(Σ dL/dx)/dx, channel 0:", ddxv.Data().([]float64)[:16])
	// Output:
	// y: [2.5 104.5 210.5 312.5]
	// d(Σ dL/dx)/dx, channel 0: [0.5 0.5 0 0 0.5 0.5 0 0 0 0 0 0 0 0 0 0]
}
