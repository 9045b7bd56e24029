package gops_test

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

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
	g1, err := ad.Grad(loss, x, offset)
	if err != nil {
		panic(err)
	}
	s := gorgonia.Must(gorgonia.Add(gorgonia.Must(gorgonia.Sum(g1[0])), gorgonia.Must(gorgonia.Sum(g1[1]))))
	g2, err := ad.Grad(s, x)
	if err != nil {
		panic(err)
	}
	var yv, g2v gorgonia.Value
	gorgonia.Read(y, &yv)
	gorgonia.Read(g2[0], &g2v)
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		panic(err)
	}
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
