package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Layout ops that copy: none returns a view of its input, on either VM
// (Gorgonia's Reshape does, and its TapeMachine may then overwrite the
// input). Each is linear, with its transpose as its gradient:
// differentiable to every order.

// Reshape is torch.reshape as a copy: input of any float shape to shape
// (same number of elements). Errors: nil input, another element count, a
// negative size.
func Reshape(input *gorgonia.Node, shape ...int) (*gorgonia.Node, error) {
	if input == nil {
		return nil, fmt.Errorf("nn: Reshape: input is nil")
	}
	y, err := ad.Reshape(input, shape...)
	if err != nil {
		return nil, fmt.Errorf("nn: Reshape: %w", err)
	}
	return y, nil
}

// Flatten is torch.flatten(input, start_dim=startDim): the axes from
// startDim on (negative counts from the end) merged into one. Errors: a
// nil or scalar input, startDim out of range.
func Flatten(input *gorgonia.Node, startDim int) (*gorgonia.Node, error) {
	a, err := checkAxis("Flatten", input, startDim)
	if err != nil {
		return nil, err
	}
	s := input.Shape()
	shape := append(append([]int{}, s[:a]...), tensor.Shape(s[a:]).TotalSize())
	return Reshape(input, shape...)
}

// Narrow is torch.narrow(input, dim=axis, start, length): the elements
// start ≤ i < start+length along axis (negative axis counts from the end),
// copied. Its gradient places the upstream gradient there in zeros
// (NarrowEmbed), whose gradient is Narrow again. Errors: nil or scalar
// input, axis out of range, start or length outside the axis.
func Narrow(input *gorgonia.Node, axis, start, length int) (*gorgonia.Node, error) {
	a, err := checkAxis("Narrow", input, axis)
	if err != nil {
		return nil, err
	}
	s := input.Shape()
	if start < 0 || length < 0 || start > s[a]-length {
		return nil, fmt.Errorf("nn: Narrow: start %d and length %d outside axis %d of size %d (input %v)", start, length, a, s[a], s)
	}
	narrow, _ := narrowSpecs(s, a, start, length)
	return ad.Apply(narrow, input)
}

// Concat is torch.cat(inputs, dim=axis): inputs of one dtype and rank,
// equal in every axis but axis (negative counts from the end), joined
// along it. Its gradient narrows the upstream gradient back into the
// inputs' parts. Errors: no inputs, a nil one, dtypes, ranks or other
// sizes that differ, axis out of range.
func Concat(axis int, inputs ...*gorgonia.Node) (*gorgonia.Node, error) {
	if len(inputs) == 0 {
		return nil, fmt.Errorf("nn: Concat: no inputs")
	}
	for i, x := range inputs {
		if x == nil {
			return nil, fmt.Errorf("nn: Concat: input %d is nil", i)
		}
	}
	a, err := checkAxis("Concat", inputs[0], axis)
	if err != nil {
		return nil, err
	}
	s0 := inputs[0].Shape()
	shapes := make([]tensor.Shape, len(inputs))
	total := 0
	for i, x := range inputs {
		s := x.Shape()
		if x.Dtype() != inputs[0].Dtype() || s.Dims() != s0.Dims() || x.IsScalar() {
			return nil, fmt.Errorf("nn: Concat: input %d is %v %v, input 0 %v %v", i, x.Dtype(), s, inputs[0].Dtype(), s0)
		}
		for d := range s {
			if d != a && s[d] != s0[d] {
				return nil, fmt.Errorf("nn: Concat: input %d shape %v differs from input 0 %v outside axis %d", i, s, s0, a)
			}
		}
		shapes[i] = s.Clone()
		total += s[a]
	}
	out := s0.Clone()
	out[a] = total
	dims := make([]int, len(inputs))
	for i := range dims {
		dims[i] = s0.Dims()
	}
	spec := ad.OpSpec{
		Name: "Concat", Params: fmt.Sprintf("%v axis %d", shapes, a), InputDims: dims, OutputDims: out.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for i := range in {
				if !slices.Equal(in[i], shapes[i]) {
					return nil, fmt.Errorf("nn: Concat: input %d %v, want %v", i, in[i], shapes[i])
				}
			}
			return out.Clone(), nil
		},
		Kernel: ad.Floats(concatKernel[float32](out, a), concatKernel[float64](out, a)),
		Backward: func(_ gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			gs := make(gorgonia.Nodes, len(shapes))
			off := 0
			for i, s := range shapes {
				narrow, _ := narrowSpecs(out, a, off, s[a])
				var err error
				if gs[i], err = ad.Apply(narrow, u); err != nil {
					return nil, err
				}
				off += s[a]
			}
			return gs, nil
		},
	}
	return ad.Apply(withCUDA(spec, concatGPU{out, a}), inputs...)
}

// blocks splits shape s at axis: outer blocks of s[axis]·inner elements.
func blocks(s tensor.Shape, axis int) (outer, inner int) {
	outer, _, inner = lines(s, axis)
	return outer, inner
}

// concatKernel is cpu.Concat into shape out along axis.
func concatKernel[T ad.Float](out tensor.Shape, axis int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(o ad.Tensor[T], in []ad.Tensor[T]) error {
		outer, _ := blocks(out, axis)
		xs := make([][]T, len(in))
		for i, x := range in {
			xs[i] = x.Data
		}
		cpu.Concat(outer, o.Data, xs)
		return nil
	}
}

// narrowSpecs are Narrow (s → s with axis of length) and NarrowEmbed (back
// into zeros), a linear pair.
func narrowSpecs(s tensor.Shape, axis, start, length int) (narrow, embed ad.OpSpec) {
	s = s.Clone()
	ns := s.Clone()
	ns[axis] = length
	outer, inner := blocks(s, axis)
	mk := func(name string, from, to tensor.Shape, fwd bool) ad.OpSpec {
		return ad.OpSpec{
			Name: name, Params: fmt.Sprintf("%v axis %d [%d, %d)", s, axis, start, start+length), InputDims: []int{from.Dims()}, OutputDims: to.Dims(),
			Shape:  ad.FixedShape("nn: "+name, from, to),
			Kernel: ad.Floats(narrowKernel[float32](outer, inner, s[axis], start, length, fwd), narrowKernel[float64](outer, inner, s[axis], start, length, fwd)),
		}
	}
	return ad.LinearPair(withCUDA(mk("Narrow", s, ns, true), narrowGPU{outer, inner, s[axis], start, length, true}),
		withCUDA(mk("NarrowEmbed", ns, s, false), narrowGPU{outer, inner, s[axis], start, length, false}))
}

// narrowKernel is cpu.Narrow (fwd) or its transpose NarrowEmbed.
func narrowKernel[T ad.Float](outer, inner, size, start, length int, fwd bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(o ad.Tensor[T], in []ad.Tensor[T]) error {
		if fwd {
			cpu.Narrow(outer, inner, size, start, length, false, o.Data, in[0].Data)
		} else {
			cpu.Narrow(outer, inner, size, start, length, true, in[0].Data, o.Data)
		}
		return nil
	}
}

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// concatGPU is Concat into shape out along axis (layout_cuda.go).
type concatGPU struct {
	out  tensor.Shape
	axis int
}

// narrowGPU is Narrow (fwd) or NarrowEmbed on outer blocks of size·inner
// elements, [start, start+length) along the axis (layout_cuda.go).
type narrowGPU struct {
	outer, inner, size, start, length int
	fwd                               bool
}

// linearKernel is the one-input kernel of a linear pair's member: f (with
// forward) or its transpose ft, from in[0] into out.
func linearKernel[T ad.Float](forward bool, f, ft func(in, out []T)) func(ad.Tensor[T], []ad.Tensor[T]) error {
	if !forward {
		f = ft
	}
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		f(in[0].Data, out.Data)
		return nil
	}
}
