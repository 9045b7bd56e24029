package gops_test

import (
	"fmt"

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
	dx, err := gops.Grad(loss, x)
	if err != nil {
		panic(err)
	}
	penalty := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(dx[0]))))
	ddx, err := gops.Grad(penalty, x)
	if err != nil {
		panic(err)
	}
	var yv, pv, ddxv gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(penalty, &pv)
	gorgonia.Read(ddx[0], &ddxv)
	m := gorgonia.NewTapeMachine(g)
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

// A user-defined op in a dozen lines: y = x², with a backward built from
// graph nodes (2·x⊙G), so gops.Grad can differentiate it again.
func ExampleNewOp() {
	square := gops.OpSpec{
		Name:       "MySquare",
		InputDims:  []int{1},
		OutputDims: 1,
		Shape:      func(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil },
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			x := in[0].Data().([]float64)
			y := make([]float64, len(x))
			for i, v := range x {
				y[i] = v * v
			}
			return tensor.New(tensor.WithShape(len(y)), tensor.WithBacking(y)), nil
		},
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			two := in[0].Graph().Constant(gorgonia.NewF64(2))
			xg, err := gorgonia.HadamardProd(in[0], grad)
			if err != nil {
				return nil, err
			}
			d, err := gorgonia.Mul(xg, two)
			return gorgonia.Nodes{d}, err
		},
	}

	g := gorgonia.NewGraph()
	x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2, 3}))))
	y, err := gops.Apply(square, x)
	if err != nil {
		panic(err)
	}
	// f = sum(y ⊙ y) = Σx⁴: f' = 4x³, f'' = 12x² (as the gradient of sum(f')).
	f := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(y, y))))
	d1, err := gops.Grad(f, x)
	if err != nil {
		panic(err)
	}
	d2, err := gops.Grad(gorgonia.Must(gorgonia.Sum(d1[0])), x)
	if err != nil {
		panic(err)
	}
	var v1, v2 gorgonia.Value
	gorgonia.Read(d1[0], &v1)
	gorgonia.Read(d2[0], &v2)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println(v1.Data(), v2.Data())
	// Output: [4 32 108] [12 48 108]
}

// DeformConv2d v2 and the gradient of the sum of its first-order gradients
// w.r.t. input and offset: the mixed second derivatives that meta-learning
// needs, which torchvision refuses.
func ExampleDeformConv2d() {
	g := gorgonia.NewGraph()
	tensorOf := func(name string, shape []int, data ...float64) *gorgonia.Node {
		return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))))
	}
	// A 1×1×3×3 image, a 1×1×2×2 kernel: a 2×2 output, 4 kernel positions.
	x := tensorOf("input", []int{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	w := tensorOf("weight", []int{1, 1, 2, 2}, 1, 0, 0, 1)
	// Offsets [1, 2·4, 2, 2]: every sample moves by (dy, dx) = (0.5, 0), so
	// y[0, 0] = (1+4)/2 + (5+8)/2 = 9; the bottom row samples half outside.
	off := make([]float64, 32)
	for k := 0; k < 4; k++ {
		for l := 0; l < 4; l++ {
			off[(2*k)*4+l] = 0.5
		}
	}
	offset := tensorOf("offset", []int{1, 8, 2, 2}, off...)
	mask := tensorOf("mask", []int{1, 4, 2, 2}, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	y, err := gops.DeformConv2d(x, offset, w, nil, mask, gops.DeformConv2dOpts{})
	if err != nil {
		panic(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	g1, err := gops.Grad(loss, x, offset)
	if err != nil {
		panic(err)
	}
	s := gorgonia.Must(gorgonia.Add(gorgonia.Must(gorgonia.Sum(g1[0])), gorgonia.Must(gorgonia.Sum(g1[1]))))
	g2, err := gops.Grad(s, x)
	if err != nil {
		panic(err)
	}
	var yv, g2v gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(g2[0], &g2v)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		panic(err)
	}
	fmt.Println("y:", yv.Data())
	fmt.Println("d/dx sum(dL/dx) + sum(dL/doffset):", g2v.Data())
	// Output:
	// y: [9 11 9.5 11]
	// d/dx sum(dL/dx) + sum(dL/doffset): [-17 -22.5 11 -11.5 -27 -0.5 7.5 1 1]
}
