package ad

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Constant returns a node of g holding the value v, a scalar
// (gorgonia.NewF64, NewF32, ...) or a tensor, that no gradient passes
// through. Use it instead of ExprGraph.Constant, which returns an existing
// constant whose printed value equals v's, whatever its shape, dtype or
// elements: Gorgonia abbreviates large tensors when it prints them, so zero
// tensors of shapes [40, 50] and [30, 30] are "equal", two [40, 50] images
// that differ only inside are too, and so are float32 and float64 scalars of
// one value; the second constant silently becomes the first. Constant's
// node is identified by v's dtype, shape and a hash of all its elements:
// equal values share one node, different ones never do. Each run of the
// graph gives the node a fresh copy of v, so no op can alter the constant
// by writing into it. A view is copied first, a 0-d tensor becomes a
// scalar. Errors: g or v is nil, a 0-d tensor of another dtype than
// float64, float32 or int. Pinned by
// TestGorgoniaFactsConstantsMergeByPrintedValue.
func Constant(g *gorgonia.ExprGraph, v gorgonia.Value) (*gorgonia.Node, error) {
	if g == nil || v == nil {
		return nil, fmt.Errorf("ad: Constant: nil graph or value")
	}
	if t, ok := v.(*tensor.Dense); ok {
		switch {
		case t.Shape().IsScalar():
			// A 0-d tensor: Gorgonia's scalar ops want a true scalar.
			var err error
			if v, err = scalarOf(t); err != nil {
				return nil, err
			}
		case t.IsMaterializable() || t.IsView() || !t.DataOrder().IsRowMajor():
			v = t.Materialize() // a view's Data() is its parent's elements
		}
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%v|%v|", v.Dtype(), v.Shape())
	var buf []byte
	var data any
	if v.Shape().IsScalar() || v.Shape().TotalSize() > 0 {
		data = v.Data() // Data of an empty tensor panics
	}
	switch d := data.(type) {
	case []float64:
		for _, x := range d {
			buf = binary.LittleEndian.AppendUint64(buf[:0], math.Float64bits(x))
			h.Write(buf)
		}
	case []float32:
		for _, x := range d {
			buf = binary.LittleEndian.AppendUint32(buf[:0], math.Float32bits(x))
			h.Write(buf)
		}
	case nil:
	default:
		fmt.Fprintf(h, "%v", d)
	}
	op := constantOp{v: v, name: fmt.Sprintf("const %v%v #%016x", v.Dtype(), v.Shape(), h.Sum64())}
	return gorgonia.NewUniqueNode(gorgonia.WithType(op.Type()), gorgonia.WithOp(op), gorgonia.In(g),
		gorgonia.WithShape(v.Shape()...), gorgonia.WithName(op.name)), nil
}

// scalarOf is the scalar value a 0-d tensor holds.
func scalarOf(t *tensor.Dense) (gorgonia.Value, error) {
	switch d := t.Data().(type) {
	case float64:
		return gorgonia.NewF64(d), nil
	case float32:
		return gorgonia.NewF32(d), nil
	case int:
		return gorgonia.NewI(d), nil
	}
	return nil, fmt.Errorf("ad: Constant: a 0-d tensor of %v", t.Dtype())
}

// constantOp is Constant's op: no inputs, its value a copy of v. A node of
// Gorgonia's own constant op would be identified by its printed value.
type constantOp struct {
	v    gorgonia.Value
	name string
}

// The methods of gorgonia.Op and gorgonia.SDOp: no inputs, no gradient.

func (o constantOp) Arity() int { return 0 }
func (o constantOp) Type() hm.Type {
	if o.v.Shape().IsScalar() {
		return o.v.Dtype()
	}
	return gorgonia.TensorType{Dims: o.v.Shape().Dims(), Of: o.v.Dtype()}
}
func (o constantOp) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) {
	return o.v.Shape().Clone(), nil
}
func (o constantOp) Do(...gorgonia.Value) (gorgonia.Value, error) { return gorgonia.CloneValue(o.v) }
func (o constantOp) ReturnsPtr() bool                             { return false }
func (o constantOp) CallsExtern() bool                            { return false }
func (o constantOp) OverwritesInput() int                         { return -1 }
func (o constantOp) WriteHash(h hash.Hash)                        { fmt.Fprint(h, o.name) }
func (o constantOp) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}
func (o constantOp) String() string       { return o.name }
func (o constantOp) DiffWRT(n int) []bool { return make([]bool, n) }
func (o constantOp) SymDiff(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
	return make(gorgonia.Nodes, len(in)), nil
}

// Scalar returns a scalar constant node of g holding v in dtype dt
// (tensor.Float32, v rounded, or tensor.Float64), made with Constant: for
// a constant of a node's dtype, Scalar(x.Graph(), x.Dtype(), 0.5), the
// torch habit of writing x * 0.5 for either dtype. No tensor is needed:
// gorgonia.NewConstant(float32(0.5)) also works, but Gorgonia identifies
// its constants by printed value, so a float64 0.5 elsewhere in the graph
// and this float32 0.5 become one node and the graph fails to run with a
// dtype mismatch (docs/GORGONIA.md, Constants); Scalar's nodes are keyed
// by dtype and value. Errors: g is nil, dt is not float32 or float64.
func Scalar(g *gorgonia.ExprGraph, dt tensor.Dtype, v float64) (*gorgonia.Node, error) {
	if g == nil {
		return nil, fmt.Errorf("ad: Scalar: nil graph")
	}
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("ad: Scalar: dtype %v, want float32 or float64", dt)
	}
	return scalarConstant(g, dt, v)
}

// scalarConstant is Constant of the scalar k in dtype dt: float32 if dt
// is, float64 otherwise.
func scalarConstant(g *gorgonia.ExprGraph, dt tensor.Dtype, k float64) (*gorgonia.Node, error) {
	var v gorgonia.Value = gorgonia.NewF64(k)
	if dt == tensor.Float32 {
		v = gorgonia.NewF32(float32(k))
	}
	return Constant(g, v)
}
