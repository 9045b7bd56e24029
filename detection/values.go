package detection

import (
	"fmt"

	"gorgonia.org/tensor"
)

// Helpers of the value-side parts (transform, anchors, box coders,
// postprocessing): *tensor.Dense values in and out, float32 or float64.

// floatType is the element type of a value-side computation.
type floatType interface{ ~float32 | ~float64 }

// valueData is t's elements in row-major order (a view is copied; the
// slice may be t's own backing array: read it, do not write it); nil for
// an empty tensor.
func valueData[T floatType](t *tensor.Dense) []T {
	if t.Shape().TotalSize() == 0 {
		return nil
	}
	if t.IsView() || !t.DataOrder().IsRowMajor() {
		t = t.Materialize().(*tensor.Dense)
	}
	return t.Data().([]T)
}

// newValue is a tensor of dtype T holding data (not copied) with shape.
func newValue[T floatType](data []T, shape ...int) *tensor.Dense {
	if len(data) == 0 {
		return tensor.New(tensor.Of(dtypeOf[T]()), tensor.WithShape(shape...))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
}

// convertValues is x converted to T.
func convertValues[T, S floatType](x []S) []T {
	y := make([]T, len(x))
	for i, v := range x {
		y[i] = T(v)
	}
	return y
}

// dtypeOf is T's tensor dtype.
func dtypeOf[T floatType]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

// checkValue checks that t is a float32 or float64 tensor of rank len(dims)
// whose axes equal dims where dims[i] >= 0 (−1: any size), and returns its
// shape. Errors name opName, the tensor (what) and the wanted shape (want,
// e.g. "[K, 4]").
func checkValue(opName, what, want string, t *tensor.Dense, dims ...int) (tensor.Shape, error) {
	if t == nil {
		return nil, fmt.Errorf("detection: %s: %s is nil", opName, what)
	}
	if dt := t.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("detection: %s: %s dtype %v, want float32 or float64", opName, what, dt)
	}
	s := t.Shape()
	ok := s.Dims() == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = dims[i] < 0 || s[i] == dims[i]
	}
	if !ok {
		return nil, fmt.Errorf("detection: %s: %s must be %s, got %v", opName, what, want, s)
	}
	return s.Clone(), nil
}
