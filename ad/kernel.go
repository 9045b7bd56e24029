package ad

import (
	"fmt"
	"reflect"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Float is the element type of a Kernel: float32 or float64.
type Float interface{ ~float32 | ~float64 }

// Tensor is what a Kernel sees of one input or of its result: the shape and
// the elements in row-major order, in Data for the float dtype T or in Ints
// for an Int tensor (an index input, or the result of an op whose
// OutputDtype is tensor.Int). A scalar has shape () and one element.
type Tensor[T Float] struct {
	Shape tensor.Shape
	Data  []T
	Ints  []int
}

// Optional is in[i].Data, or nil where in has no input i: the optional last
// input of a kernel whose op is built with or without it (the mask of
// torchvision's deform_conv2d, the one of a masked grid sample).
func Optional[T Float](in []Tensor[T], i int) []T {
	if i < len(in) {
		return in[i].Data
	}
	return nil
}

// Kernel is an op's forward computation written once, generically, for
// both float dtypes; Floats makes one. The zero Kernel is none.
type Kernel struct {
	f32 func(out Tensor[float32], in []Tensor[float32]) error
	f64 func(out Tensor[float64], in []Tensor[float64]) error
}

// Floats makes the Kernel of an OpSpec from one generic function
// instantiated for each float dtype, as Floats(k[float32], k[float64]) for
//
//	func k[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error
//
// The op runs the instantiation of its inputs' float dtype. k reads the
// inputs (views and non-contiguous tensors arrive copied to row-major
// order) and writes out, which arrives with the shape from OpSpec.Shape
// and the dtype OutputDtype, zeroed unless the spec sets KernelOverwrites
// (then it may hold old values, and k must write every element); k must
// not keep or modify the inputs. Both functions must be given.
func Floats(f32 func(out Tensor[float32], in []Tensor[float32]) error, f64 func(out Tensor[float64], in []Tensor[float64]) error) Kernel {
	return Kernel{f32: f32, f64: f64}
}

func (k Kernel) empty() bool { return k.f32 == nil || k.f64 == nil }

// run evaluates the kernel on the values in, with a result of shape.
func (k Kernel) run(o *op, in []gorgonia.Value, shape tensor.Shape) (gorgonia.Value, error) {
	spec := &o.spec
	var dt tensor.Dtype
	for i, v := range in {
		if spec.inputDtype(i).Type == nil {
			dt = v.Dtype()
			break
		}
	}
	switch dt {
	case tensor.Float32:
		return runKernel(k.f32, o, in, shape)
	case tensor.Float64:
		return runKernel(k.f64, o, in, shape)
	}
	return nil, fmt.Errorf("ad: %s: a Kernel needs a float32 or float64 input, got dtype %v", spec.Name, dt)
}

func runKernel[T Float](f func(out Tensor[T], in []Tensor[T]) error, o *op, in []gorgonia.Value, shape tensor.Shape) (gorgonia.Value, error) {
	spec := &o.spec
	args := make([]Tensor[T], len(in))
	for i, v := range in {
		var err error
		if want := spec.inputDtype(i); want.Type != nil {
			args[i].Shape = v.Shape()
			if want == tensor.Int {
				args[i].Ints, err = valueData[int](v)
			} else if v.Dtype() != want {
				err = fmt.Errorf("dtype %v, want %v", v.Dtype(), want)
			}
		} else {
			args[i].Shape = v.Shape()
			args[i].Data, err = valueData[T](v)
		}
		if err != nil {
			return nil, fmt.Errorf("ad: %s: input %d: %w", spec.Name, i, err)
		}
	}
	var out Tensor[T]
	var result gorgonia.Value
	size := shape.TotalSize()
	if shape.IsScalar() {
		shape, size = tensor.ScalarShape(), 1
	}
	out.Shape = shape
	reuse := reusing(o.graph)
	switch {
	case spec.OutputDtype == tensor.Int:
		out.Ints = resultBuffer[int](o, reuse, size, args)
		result = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out.Ints))
	case spec.OutputDtype.Type != nil:
		return nil, fmt.Errorf("ad: %s: a Kernel's OutputDtype is the float dtype or tensor.Int, not %v", spec.Name, spec.OutputDtype)
	default:
		out.Data = resultBuffer[T](o, reuse, size, args)
		result = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(out.Data))
	}
	if err := f(out, args); err != nil {
		return nil, err
	}
	if spec.OutputDims == 0 {
		if spec.OutputDtype == tensor.Int {
			return gorgonia.NewI(out.Ints[0]), nil
		}
		switch d := any(out.Data).(type) {
		case []float64:
			return gorgonia.NewF64(d[0]), nil
		case []float32:
			return gorgonia.NewF32(d[0]), nil
		}
	}
	return result, nil
}

// valueData returns the elements of v, a tensor or scalar of element type
// E (float32, float64 or int), in row-major order: a view or a
// non-contiguous tensor is copied first, an empty tensor gives nil, a scalar
// one element. Errors: v of another dtype.
func valueData[E ~float32 | ~float64 | ~int](v gorgonia.Value) ([]E, error) {
	var z E
	if v == nil || v.Dtype().Type != reflect.TypeOf(z) {
		if v == nil {
			return nil, fmt.Errorf("no value")
		}
		return nil, fmt.Errorf("dtype %v, want %T", v.Dtype(), z)
	}
	t, ok := v.(tensor.Tensor)
	if !ok {
		if s, ok := v.Data().(E); ok {
			return []E{s}, nil
		}
		return nil, fmt.Errorf("value %T holds %T, want %T", v, v.Data(), z)
	}
	if t.Shape().TotalSize() == 0 && !t.Shape().IsScalar() {
		return nil, nil // Data() of an empty tensor panics in gorgonia.org/tensor
	}
	if d, ok := t.(*tensor.Dense); ok && (d.IsMaterializable() || d.IsView() || !d.DataOrder().IsRowMajor()) {
		t = d.Materialize()
	}
	switch d := t.Data().(type) {
	case []E:
		return d, nil
	case E:
		return []E{d}, nil
	}
	return nil, fmt.Errorf("tensor data %T, want []%T", t.Data(), z)
}
