package ad

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NoElements reports whether n is a tensor without elements (a size 0
// somewhere in its shape); a scalar has one, and a nil node is not one
// (a caller's nil check names it).
func NoElements(n *gorgonia.Node) bool {
	return n != nil && !n.IsScalar() && n.Shape().TotalSize() == 0
}

// EmptyResult is the result of the op name on an input without elements,
// which Gorgonia's elementwise ops cannot take (they panic on a goroutine
// of the VM): a node of shape out filled with v (an empty tensor for an
// elementwise op; torch's 0 or NaN for a sum or mean of nothing, a scalar)
// whose gradient w.r.t. each of in is zero. Its op is named name+"Empty",
// its Params the shape and v. Nil nodes among in are skipped; at least one
// must remain. twin, if not nil, is given the op's spec when out is not a
// scalar, and returns it with a CUDA twin (OpSpec.CUDA) that fills the
// result with v on the device; a scalar result stays on the host. Errors:
// those of Apply.
func EmptyResult(name string, out tensor.Shape, v float64, twin func(spec OpSpec, v float64) OpSpec, in ...*gorgonia.Node) (*gorgonia.Node, error) {
	var args gorgonia.Nodes
	for _, n := range in {
		if n != nil {
			args = append(args, n)
		}
	}
	dims := make([]int, len(args))
	for i, n := range args {
		dims[i] = n.Dims()
	}
	out = out.Clone()
	spec := OpSpec{
		Name: name + "Empty", Params: fmt.Sprint(out, v), InputDims: dims, OutputDims: out.Dims(), DiffWRT: make([]bool, len(args)),
		Shape:  func([]tensor.Shape) (tensor.Shape, error) { return out.Clone(), nil },
		Kernel: Floats(fillKernel[float32](v), fillKernel[float64](v)),
		Backward: func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		},
	}
	if twin != nil && !out.IsScalar() {
		spec = twin(spec, v)
	}
	return Apply(spec, args...)
}

// fillKernel writes v to every element of the result.
func fillKernel[T Float](v float64) func(Tensor[T], []Tensor[T]) error {
	return func(out Tensor[T], _ []Tensor[T]) error {
		for i := range out.Data {
			out.Data[i] = T(v)
		}
		return nil
	}
}
