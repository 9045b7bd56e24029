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
func ExampleConv2d_identity() {
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
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
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

// A conv → max-pool → cross-entropy stack, differentiated three times
// w.r.t. the convolution's weight along a direction v: the loss, its
// directional derivative, and the second and third ones (each the
// derivative of the one before, all through Conv2d, MaxPool2d and
// CrossEntropy's row log-sum-exp). torch gives the same four numbers (its
// double backward, applied three times).
func ExampleConv2d() {
	g := gorgonia.NewGraph()
	tensorOf := func(name string, shape []int, data []float64) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))))
	}
	img := make([]float64, 2*1*4*4)
	for i := range img {
		img[i] = float64((i*7)%11) / 10
	}
	x := tensorOf("x", []int{2, 1, 4, 4}, img)
	w := tensorOf("w", []int{3, 1, 2, 2}, []float64{0.5, -0.2, 0.1, 0.3, -0.4, 0.2, 0.6, -0.1, 0.3, 0.3, -0.5, 0.2})
	v := tensorOf("v", []int{3, 1, 2, 2}, []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0})
	target := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(2), gorgonia.WithName("target"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{2, 0}))))
	h, err := nn.Conv2d(x, w, nil, nn.Conv2dOpts{}) // [2, 3, 3, 3]
	if err != nil {
		panic(err)
	}
	if h, err = nn.MaxPool2d(h, nn.MaxPool2dOpts{KernelSize: [2]int{3, 3}}); err != nil { // [2, 3, 1, 1]
		panic(err)
	}
	logits, err := nn.Reshape(h, 2, 3)
	if err != nil {
		panic(err)
	}
	loss, err := nn.CrossEntropy(logits, target, nn.CrossEntropyOpts{})
	if err != nil {
		panic(err)
	}
	along := func(f *gorgonia.Node) *gorgonia.Node { // <∂f/∂w, v>
		d, err := ad.Grad(f, w)
		if err != nil {
			panic(err)
		}
		return gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(d[0], v))))
	}
	d1 := along(loss)
	d2 := along(d1)
	d3 := along(d2)
	vals := make([]gorgonia.Value, 4)
	for i, n := range []*gorgonia.Node{loss, d1, d2, d3} {
		gorgonia.Read(n, &vals[i])
	}
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Printf("loss %.6f, derivatives along v: %.6f %.6f %.6f\n", vals[0].Data(), vals[1].Data(), vals[2].Data(), vals[3].Data())
	// Output:
	// loss 1.116854, derivatives along v: 0.172985 0.080269 -0.014559
}
