//go:build cuda

package ad

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// cudaOp is an op with a CUDA twin (OpSpec.CUDA): Gorgonia's CUDA VM
// allocates its result on the device and calls CUDADo.
type cudaOp struct{ *op }

var _ gorgonia.CUDADoer = cudaOp{}

// gorgoniaOp is the op as Gorgonia sees it: an op whose spec has a CUDA
// twin implements gorgonia.CUDADoer, the others run on the host.
func gorgoniaOp(o *op) gorgonia.Op {
	if o.spec.CUDA != nil {
		return cudaOp{o}
	}
	return o
}

// ours reports whether o was made by Apply.
func ours(o gorgonia.Op) bool {
	switch o.(type) {
	case *op, cudaOp:
		return true
	}
	return false
}

// CallsExtern implements gorgonia.Op: the result is on the device.
func (o cudaOp) CallsExtern() bool { return true }

// CUDADo implements gorgonia.CUDADoer with the spec's CUDA twin; a panic in
// it is returned as an error naming the op.
func (o cudaOp) CUDADo(extern gorgonia.External, dev gorgonia.Device, prealloc gorgonia.Value, inputs ...gorgonia.Value) (v gorgonia.Value, err error) {
	if len(inputs) != o.Arity() {
		return nil, fmt.Errorf("ad: %s: got %d inputs, want %d", o.spec.Name, len(inputs), o.Arity())
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("ad: op %s failed: its CUDA twin panicked: %v", o.spec.Name, r)
		}
	}()
	return o.spec.CUDA(extern, dev, prealloc, inputs...)
}

// unwrap is the op of o if Apply made it, else nil.
func unwrap(o gorgonia.Op) *op {
	switch v := o.(type) {
	case *op:
		return v
	case cudaOp:
		return v.op
	}
	return nil
}
