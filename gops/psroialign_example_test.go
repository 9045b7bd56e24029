package gops_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// PSRoIAlign's position-sensitive channels: with 8 input channels and 2×2
// bins, output channel c of bin (i, j) samples input channel 4c + 2i + j.
func ExamplePSRoIAlign() {
	g := gorgonia.NewGraph()
	// One image, 8 channels of 4×4; pixel (r, col) of channel k is
	// 100k + 4r + col.
	data := make([]float64, 8*4*4)
	for i := range data {
		data[i] = float64(100*(i/16) + i%16)
	}
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 8, 4, 4), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 8, 4, 4), tensor.WithBacking(data))))
	// The whole image; with the -0.5 pixel shift, one sample per bin falls
	// at the centre of each 2×2 quadrant.
	boxes := gorgonia.NewTensor(g, tensor.Float64, 2, gorgonia.WithShape(1, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 5), tensor.WithBacking([]float64{0, 0, 0, 4, 4}))))
	y, err := gops.PSRoIAlign(x, boxes, gops.PSRoIAlignOpts{OutputSize: [2]int{2, 2}, SamplingRatio: 1})
	if err != nil {
		panic(err)
	}
	dx, err := ad.Grad(gorgonia.Must(gorgonia.Sum(y)), x)
	if err != nil {
		panic(err)
	}
	var yv, dxv gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(dx[0], &dxv)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println("y shape:", yv.Shape())
	fmt.Println("y:", yv.Data())
	// Input channel 1 feeds bin (0, 1) of output channel 0: its top-right
	// quadrant gets the gradient.
	fmt.Println("d sum(y)/dx, channel 1:", dxv.Data().([]float64)[16:32])
	// Output:
	// y shape: (1, 2, 2, 2)
	// y: [2.5 104.5 210.5 312.5 402.5 504.5 610.5 712.5]
	// d sum(y)/dx, channel 1: [0 0 0.25 0.25 0 0 0.25 0.25 0 0 0 0 0 0 0 0]
}
