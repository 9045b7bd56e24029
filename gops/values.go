package gops

import (
	"fmt"
	"reflect"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// tensorData returns v's elements in row-major order and its shape. A view
// or a non-contiguous tensor is copied first.
func tensorData[T Float](v gorgonia.Value) ([]T, tensor.Shape, error) {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return nil, nil, fmt.Errorf("value %T is not a tensor", v)
	}
	var z T
	if t.Dtype().Type != reflect.TypeOf(z) {
		return nil, nil, fmt.Errorf("tensor of %v, want %T", t.Dtype(), z)
	}
	if t.Shape().TotalSize() == 0 {
		// Data() of an empty tensor panics in gorgonia.org/tensor.
		return nil, t.Shape(), nil
	}
	if d, ok := t.(*tensor.Dense); ok && (d.IsView() || !d.DataOrder().IsRowMajor()) {
		t = d.Materialize()
	}
	data, ok := t.Data().([]T)
	if !ok {
		return nil, nil, fmt.Errorf("tensor data %T, want []%T", t.Data(), z)
	}
	return data, t.Shape(), nil
}

// newTensor returns a zeroed tensor of dtype dt and the given shape, and its
// backing slice.
func newTensor[T Float](shape ...int) (*tensor.Dense, []T) {
	var z T
	dt := tensor.Float64
	if _, ok := any(z).(float32); ok {
		dt = tensor.Float32
	}
	size := 1
	for _, s := range shape {
		size *= s
	}
	data := make([]T, size)
	return tensor.New(tensor.WithShape(shape...), tensor.Of(dt), tensor.WithBacking(data)), data
}

// checkFloatNode checks that n is a float32 or float64 tensor of rank dims.
func checkFloatNode(opName, arg string, n *gorgonia.Node, dims int) error {
	if n == nil {
		return fmt.Errorf("gops: %s: %s is nil", opName, arg)
	}
	if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("gops: %s: %s dtype %v, want float32 or float64", opName, arg, dt)
	}
	if n.IsScalar() || n.Shape().Dims() != dims {
		return fmt.Errorf("gops: %s: %s must have rank %d, got shape %v", opName, arg, dims, n.Shape())
	}
	return nil
}

type (
	func32 func(a, b []float32) (*tensor.Dense, error)
	func64 func(a, b []float64) (*tensor.Dense, error)
)

// dispatch2 calls f32 or f64 on the data of two tensors of one dtype.
func dispatch2(a, b gorgonia.Value, f32 func32, f64 func64) (gorgonia.Value, error) {
	switch a.Dtype() {
	case tensor.Float32:
		x, _, err := tensorData[float32](a)
		if err != nil {
			return nil, err
		}
		y, _, err := tensorData[float32](b)
		if err != nil {
			return nil, err
		}
		return f32(x, y)
	case tensor.Float64:
		x, _, err := tensorData[float64](a)
		if err != nil {
			return nil, err
		}
		y, _, err := tensorData[float64](b)
		if err != nil {
			return nil, err
		}
		return f64(x, y)
	}
	return nil, fmt.Errorf("dtype %v is not float32 or float64", a.Dtype())
}

// intTensorData returns the elements of an Int tensor (index tensors such as
// RoIPool's argmax) in row-major order.
func intTensorData(v gorgonia.Value) ([]int, error) {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("value %T is not a tensor", v)
	}
	if t.Dtype() != tensor.Int {
		return nil, fmt.Errorf("index tensor of %v, want int", t.Dtype())
	}
	if t.Shape().TotalSize() == 0 {
		return nil, nil
	}
	if d, ok := t.(*tensor.Dense); ok && (d.IsView() || !d.DataOrder().IsRowMajor()) {
		t = d.Materialize()
	}
	data, ok := t.Data().([]int)
	if !ok {
		return nil, fmt.Errorf("index tensor data %T, want []int", t.Data())
	}
	return data, nil
}

// newIntTensor returns an Int tensor of the given shape and its backing
// slice.
func newIntTensor(shape ...int) (*tensor.Dense, []int) {
	data := make([]int, tensor.Shape(shape).TotalSize())
	return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Int), tensor.WithBacking(data)), data
}

// dispatchIndexed calls f32 or f64 on the data of a float tensor a and an
// Int tensor idx.
func dispatchIndexed(a, idx gorgonia.Value, f32 func([]float32, []int) (*tensor.Dense, error), f64 func([]float64, []int) (*tensor.Dense, error)) (gorgonia.Value, error) {
	ix, err := intTensorData(idx)
	if err != nil {
		return nil, err
	}
	switch a.Dtype() {
	case tensor.Float32:
		x, _, err := tensorData[float32](a)
		if err != nil {
			return nil, err
		}
		return f32(x, ix)
	case tensor.Float64:
		x, _, err := tensorData[float64](a)
		if err != nil {
			return nil, err
		}
		return f64(x, ix)
	}
	return nil, fmt.Errorf("dtype %v is not float32 or float64", a.Dtype())
}
