package main

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
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
	m, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
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

// Box is a box in pixel coordinates: pixel (i, j) covers [j, j+1) x
// [i, i+1), so a box that encloses pixels x0..x1 (inclusive) spans X1 = x0
// to X2 = x1+1.
type Box struct {
	Name           string
	X1, Y1, X2, Y2 float64
}

// BoxesTensor converts boxes to RoIAlign's [K, 5] float64 layout, rows
// (batch_index = 0, x1, y1, x2, y2).
func BoxesTensor(boxes []Box) *tensor.Dense {
	data := make([]float64, 0, 5*len(boxes))
	for _, b := range boxes {
		data = append(data, 0, b.X1, b.Y1, b.X2, b.Y2)
	}
	return tensor.New(tensor.WithShape(len(boxes), 5), tensor.WithBacking(data))
}

// scalar reads a float64 scalar value.
func scalar(v gorgonia.Value) (float64, error) {
	switch s := v.(type) {
	case *gorgonia.F64:
		return float64(*s), nil
	case *tensor.Dense:
		if d, ok := s.Data().([]float64); ok && len(d) == 1 {
			return d[0], nil
		}
		if d, ok := s.Data().(float64); ok {
			return d, nil
		}
	}
	return 0, fmt.Errorf("value %v (%T) is not a float64 scalar", v, v)
}
