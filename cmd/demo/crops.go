package main

import (
	"fmt"

	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Crops pools every box of boxes ([K, 5]) from the image tensor x
// ([1, 3, H, W]) with gops.RoIAlign on a TapeMachine, and returns the
// [K, 3, PH, PW] crops.
func Crops(x, boxes *tensor.Dense, opts gops.RoIAlignOpts) (*tensor.Dense, error) {
	g := gorgonia.NewGraph()
	xn := gorgonia.NewTensor(g, tensor.Float64, 4, gorgonia.WithShape(x.Shape()...), gorgonia.WithName("x"), gorgonia.WithValue(x.Clone()))
	bn := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(boxes.Shape()...), gorgonia.WithName("boxes"), gorgonia.WithValue(boxes.Clone()))
	y, err := gops.RoIAlign(xn, bn, opts)
	if err != nil {
		return nil, err
	}
	var yv gorgonia.Value
	gorgonia.Read(y, &yv)
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return nil, fmt.Errorf("running RoIAlign: %w", err)
	}
	d, ok := yv.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("RoIAlign returned %T, want *tensor.Dense", yv)
	}
	return d, nil
}
