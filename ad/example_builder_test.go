package ad_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A formula written as one expression and checked once: the derivative
// u ⊙ s ⊙ (1 − s) of the sigmoid s of x, for the upstream gradient u = 2,
// with a constant of x's dtype.
func ExampleBuilder() {
	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float32, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float32{-1, 0, 1}))))
	b := ad.NewBuilder(x)
	s := b.Do(func() (*gorgonia.Node, error) { return gorgonia.Sigmoid(x) })
	d, err := b.Node(b.HadamardProd(b.Scale(s, 2), b.RSub(1, s)))
	if err != nil {
		panic(err)
	}
	var v gorgonia.Value
	gorgonia.Read(d, &v)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", v.Data())
	// Output:
	// [0.3932 0.5000 0.3932]
}
