package nn_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A 3×3 convolution with padding 1 (the identity kernel), and three
// derivatives of loss = Σ conv(x, w)² w.r.t. the weight's first element,
// each the derivative of the one before: 2·Σ y·x shifted by one pixel =
// 188, 2·Σ x² over the shifted window = 92, and 0 (the loss is quadratic
// in w).
func ExampleConv2d() {
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 3, 3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9}))))
	w := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 3, 3), gorgonia.WithName("w"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.WithBacking([]float64{0, 0, 0, 0, 1, 0, 0, 0, 0}))))
	y, err := nn.Conv2d(x, w, nil, nn.Conv2dOpts{Padding: [2]int{1, 1}})
	if err != nil {
		panic(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	first := func(f *gorgonia.Node) *gorgonia.Node { // ∂f/∂w[0, 0, 0, 0], summed with a one-hot
		d, err := ad.Grad(f, w)
		if err != nil {
			panic(err)
		}
		e := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(1, 1, 3, 3), gorgonia.WithName(fmt.Sprint("e", f.ID())),
			gorgonia.WithValue(tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.WithBacking([]float64{1, 0, 0, 0, 0, 0, 0, 0, 0}))))
		return gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(d[0], e))))
	}
	d1 := first(loss)
	d2 := first(d1)
	d3 := first(d2)
	var yv, v1, v2, v3 gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(d1, &v1)
	gorgonia.Read(d2, &v2)
	gorgonia.Read(d3, &v3)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println("y =", yv.Data())
	fmt.Println("d/dw00:", v1, " d²:", v2, " d³:", v3)
	// Output:
	// y = [1 2 3 4 5 6 7 8 9]
	// d/dw00: 188  d²: 92  d³: 0
}
