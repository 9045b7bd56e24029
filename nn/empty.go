package nn

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// whenEmpty handles an input with no elements, which Gorgonia's
// elementwise ops cannot take (they panic on a goroutine of the VM): if x
// has none, it returns a node of shape out filled with v (an empty tensor
// for an elementwise op; 0 or NaN for a sum or mean of nothing, as torch)
// whose gradients w.r.t. the given inputs are zero, and true.
func whenEmpty(name string, x *gorgonia.Node, out tensor.Shape, v float64, given ...*gorgonia.Node) (*gorgonia.Node, bool, error) {
	if x.IsScalar() || x.Shape().TotalSize() != 0 {
		return nil, false, nil
	}
	var in gorgonia.Nodes
	for _, n := range append([]*gorgonia.Node{x}, given...) {
		if n != nil {
			in = append(in, n)
		}
	}
	dims := make([]int, len(in))
	for i, n := range in {
		dims[i] = n.Dims()
	}
	out = out.Clone()
	spec := ad.OpSpec{
		Name: name + "Empty", Params: fmt.Sprint(out, v), InputDims: dims, OutputDims: out.Dims(), DiffWRT: make([]bool, len(in)),
		Shape:  func([]tensor.Shape) (tensor.Shape, error) { return out.Clone(), nil },
		Kernel: ad.Floats(fillKernel[float32](v), fillKernel[float64](v)),
		Backward: func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		},
	}
	if !out.IsScalar() { // (a reduction of nothing stays on the host)
		spec = withCUDA(spec, fillGPU{v})
	}
	y, err := ad.Apply(spec, in...)
	return y, true, err
}

func fillKernel[T ad.Float](v float64) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], _ []ad.Tensor[T]) error {
		for i := range out.Data {
			out.Data[i] = T(v)
		}
		return nil
	}
}

// reducedShape is the shape a reduction gives for an input of shape s:
// s for "none", a scalar otherwise.
func reducedShape(s tensor.Shape, red string) tensor.Shape {
	if red == "none" {
		return s.Clone()
	}
	return tensor.ScalarShape()
}

// emptyReduction is the value of a reduction of nothing: 0 for a sum, NaN
// for a mean (torch's).
func emptyReduction(red string) float64 {
	if red == "mean" {
		return nan
	}
	return 0
}

var nan = math.NaN()

// shapeIs reports whether a and b are exactly the same shape. Gorgonia's
// Shape.Eq also takes (1, C) and (C, 1) for (C).
func shapeIs(a, b tensor.Shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The CUDA twin's descriptor (launch code in the *_cuda.go files; withCUDA
// ignores it in the CPU build).

// fillGPU is a result filled with v (the *Empty ops of empty.go)
// (layout_cuda.go).
type fillGPU struct{ v float64 }
