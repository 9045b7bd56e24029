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

// gradOf is the gradient of the scalar f w.r.t. x.
func gradOf(f, x *gorgonia.Node) (*gorgonia.Node, error) {
	gs, err := ad.Grad(f, x)
	if err != nil {
		return nil, err
	}
	return gs[0], nil
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
			b := ad.NewBuilder(grad)
			return b.Nodes(b.HadamardProd(b.Add(in[0], in[0]), grad))
		},
	}
	for _, x0 := range []any{[]float64{1, 2, 3}, []float32{1, 2, 3}} {
		g := gorgonia.NewGraph()
		xv := tensor.New(tensor.WithShape(3), tensor.WithBacking(x0))
		x := gorgonia.NewVector(g, xv.Dtype(), gorgonia.WithShape(3), gorgonia.WithName("x"), gorgonia.WithValue(xv))
		// f = sum(y ⊙ y) = Σx⁴: f' = 4x³, and f'' = 12x² as the gradient of sum(f').
		b := ad.NewBuilder(x)
		y := b.Apply(mySquare, x)
		d1 := b.Do(func() (*gorgonia.Node, error) { return gradOf(b.Sum(b.HadamardProd(y, y)), x) })
		d2 := b.Do(func() (*gorgonia.Node, error) { return gradOf(b.Sum(d1), x) })
		if b.Err() != nil {
			panic(b.Err())
		}
		var v1, v2 gorgonia.Value
		gorgonia.Read(d1, &v1)
		gorgonia.Read(d2, &v2)
		m, err := ad.NewTapeMachine(g)
		if err != nil {
			panic(err)
		}
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
