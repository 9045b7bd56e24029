package ad_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// square is y = x², written once for both float dtypes.
func square[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	for i, x := range in[0].Data {
		out.Data[i] = x * x
	}
	return nil
}

// A new differentiable op in a dozen lines: y = x², whose backward
// (x + x)⊙G is built from graph nodes, so Grad can differentiate it again.
// The same spec runs in float32 and float64.
func ExampleApply() {
	mySquare := ad.OpSpec{
		Name:       "MySquare",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil },
		Kernel:     ad.Floats(square[float32], square[float64]),
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			twoX, err := gorgonia.Add(in[0], in[0])
			if err != nil {
				return nil, err
			}
			d, err := gorgonia.HadamardProd(twoX, grad)
			return gorgonia.Nodes{d}, err
		},
	}
	for _, x0 := range []any{[]float64{1, 2, 3}, []float32{1, 2, 3}} {
		g := gorgonia.NewGraph()
		xv := tensor.New(tensor.WithShape(3), tensor.WithBacking(x0))
		x := gorgonia.NewVector(g, xv.Dtype(), gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithValue(xv))
		y, err := ad.Apply(mySquare, x)
		if err != nil {
			panic(err)
		}
		// f = sum(y ⊙ y) = Σx⁴: f' = 4x³, and f'' = 12x² as the gradient of sum(f').
		f := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, y))))
		d1, err := ad.Grad(f, x)
		if err != nil {
			panic(err)
		}
		d2, err := ad.Grad(gorgonia.Must(gorgonia.Sum(d1[0])), x)
		if err != nil {
			panic(err)
		}
		var v1, v2 gorgonia.Value
		gorgonia.Read(d1[0], &v1)
		gorgonia.Read(d2[0], &v2)
		m := gorgonia.NewTapeMachine(g)
		if err := m.RunAll(); err != nil {
			panic(err)
		}
		m.Close()
		fmt.Println(xv.Dtype(), v1.Data(), v2.Data())
	}
	// Output:
	// float64 [4 32 108] [12 48 108]
	// float32 [4 32 108] [12 48 108]
}
