package ad

import (
	"fmt"
	"slices"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Reshape returns x with another shape of the same size, as a copy.
// Gorgonia's Reshape returns a view of its input, and its TapeMachine may
// then write into that memory while the input is still needed: the
// gradient of Square(Reshape(x)) overwrites x in place, and where the
// reshaped node feeds more than one op, Tanh's or Exp's first-order
// gradients come out wrong. The copy costs one pass over the data; the
// reshape and the reshape back are a linear pair (ReshapeSpec), so Reshape
// is differentiable to every order. Errors: x nil, a shape of another size,
// a negative size, x not float32 or float64. Pinned by
// TestGorgoniaFactsReshapeOfInputOverwritten.
func Reshape(x *gorgonia.Node, shape ...int) (*gorgonia.Node, error) {
	if x == nil {
		return nil, fmt.Errorf("ad: Reshape: x is nil")
	}
	there, _ := LinearPair(ReshapeSpec(x.Shape(), shape), ReshapeSpec(shape, x.Shape()))
	return Apply(there, x)
}

// ReshapeSpec is the op of Reshape from one shape to another of the same
// size, without a Backward, for a program that gives it a CUDA twin and
// pairs it with the reshape back (LinearPair).
func ReshapeSpec(from, to tensor.Shape) OpSpec {
	from, to = from.Clone(), to.Clone()
	return OpSpec{
		Name:       "CopyReshape",
		Params:     fmt.Sprintf("%v→%v", from, to),
		InputDims:  []int{from.Dims()},
		OutputDims: to.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			switch {
			case !slices.Equal(in[0], from):
				return nil, fmt.Errorf("ad: Reshape: input %v, want %v", in[0], from)
			case from.TotalSize() != to.TotalSize() || !nonNegative(to):
				return nil, fmt.Errorf("ad: Reshape: cannot reshape %v (%d elements) to %v", from, from.TotalSize(), to)
			}
			return to.Clone(), nil
		},
		Kernel:           Floats(copyData[float32], copyData[float64]),
		KernelOverwrites: true,
	}
}

func copyData[T Float](out Tensor[T], in []Tensor[T]) error {
	copy(out.Data, in[0].Data)
	return nil
}
