package nn_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MatMul of a [2, 3] matrix and the transpose of a [2, 3] matrix, the
// gradient of the sum of squares of the product w.r.t. a, and the Hessian-
// vector product along v: the product's derivatives are products again, to
// every order.
func ExampleMatMul() {
	g := gorgonia.NewGraph()
	matrix := func(name string, data ...float64) *gorgonia.Node {
		return gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(2, 3), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(data))))
	}
	a := matrix("a", 1, 2, 3, 4, 5, 6)
	b := matrix("b", 1, 0, 1, 0, 1, 0)
	v := matrix("v", 1, 0, 0, 0, 0, 0)
	y, err := nn.MatMul(a, b, false, true) // a·bᵀ: [2, 2]
	if err != nil {
		panic(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	da, err := ad.Grad(loss, a)
	if err != nil {
		panic(err)
	}
	hv, err := ad.Grad(gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(da[0], v)))), a)
	if err != nil {
		panic(err)
	}
	var yv, dav, hvv gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(da[0], &dav)
	gorgonia.Read(hv[0], &hvv)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println("y =", yv.Data())
	fmt.Println("dloss/da =", dav.Data())
	fmt.Println("H·v =", hvv.Data())
	// Output:
	// y = [4 2 10 5]
	// dloss/da = [8 4 8 20 10 20]
	// H·v = [2 0 2 0 0 0]
}
