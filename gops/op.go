package gops

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// OpSpec describes a differentiable operation. NewOp turns it into a
// gorgonia.Op that both of Gorgonia's VMs can run and differentiate: the
// TapeMachine through SymDiff (and Grad), the LispMachine through DoDiff,
// which evaluates the same Backward on the values at hand. An op's gradient
// is therefore written once, and if Backward builds its result only from
// differentiable ops (other NewOp ops included), the op is differentiable to
// every order.
type OpSpec struct {
	// Name identifies the op in errors, graph printouts and hashes.
	Name string
	// Params describes the op's fixed parameters. Two ops with the same
	// Name and Params must compute the same function: Gorgonia hashes ops
	// by them.
	Params string
	// InputDims is the rank of each input (0 for a scalar); its length is
	// the op's arity. All inputs and the output share one dtype.
	InputDims []int
	// OutputDims is the rank of the result.
	OutputDims int
	// DiffWRT says which inputs Backward gives gradients for; nil means all.
	DiffWRT []bool
	// Shape returns the result's shape from the input shapes, or an error
	// that names the offending input. Called when the node is built.
	Shape func(in []tensor.Shape) (tensor.Shape, error)
	// Forward computes the result from the input values.
	Forward func(in []gorgonia.Value) (gorgonia.Value, error)
	// Backward returns, for each input, the gradient of <grad, output> with
	// respect to it, as nodes built from in, output and grad. Return nil for
	// an input that DiffWRT excludes (its derivative is zero, like an index
	// input's) or that the op cannot differentiate (Grad then fails with an
	// error if a gradient must flow into it). Backward itself may be nil for
	// an op that is not differentiable at all.
	Backward func(in gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error)
	// Type, if not nil, replaces the Gorgonia type NewOp derives from
	// InputDims and OutputDims (every input and the result of one float
	// dtype). It must be a function type from the inputs' types to the
	// result's, with ranks matching InputDims and OutputDims; use it for an
	// op with integer inputs or results, such as RoIPool's argmax indices:
	// hm.NewFnType(gorgonia.TensorType{Dims: 4, Of: hm.TypeVariable('a')},
	// gorgonia.TensorType{Dims: 2, Of: hm.TypeVariable('a')},
	// gorgonia.TensorType{Dims: 4, Of: tensor.Int}).
	Type hm.Type

	// gpu holds what the op's CUDA twin needs (its geometry), for the
	// library's own ops; nil means the op has no GPU implementation.
	gpu any
}

// Op is a gorgonia.Op made from an OpSpec by NewOp. It implements
// gorgonia.SDOp (symbolic differentiation) and gorgonia.ADOp (the
// LispMachine's automatic differentiation).
type Op struct {
	spec OpSpec
	typ  hm.Type
}

// NewOp checks spec and returns the op. Apply it with gorgonia.ApplyOp.
// Errors: empty Name, no InputDims, a negative rank, DiffWRT of the wrong
// length, a nil Shape or Forward.
func NewOp(spec OpSpec) (*Op, error) {
	switch {
	case spec.Name == "":
		return nil, fmt.Errorf("gops: NewOp: empty Name")
	case len(spec.InputDims) == 0:
		return nil, fmt.Errorf("gops: NewOp %s: no inputs", spec.Name)
	case spec.Shape == nil || spec.Forward == nil:
		return nil, fmt.Errorf("gops: NewOp %s: Shape and Forward are required", spec.Name)
	case spec.DiffWRT != nil && len(spec.DiffWRT) != len(spec.InputDims):
		return nil, fmt.Errorf("gops: NewOp %s: DiffWRT has %d entries for %d inputs", spec.Name, len(spec.DiffWRT), len(spec.InputDims))
	case spec.OutputDims < 0:
		return nil, fmt.Errorf("gops: NewOp %s: negative OutputDims", spec.Name)
	}
	a := hm.TypeVariable('a')
	typeOf := func(d int) hm.Type {
		if d == 0 {
			return a
		}
		return gorgonia.TensorType{Dims: d, Of: a}
	}
	ts := make(hm.Types, 0, len(spec.InputDims)+1)
	for _, d := range spec.InputDims {
		if d < 0 {
			return nil, fmt.Errorf("gops: NewOp %s: negative input rank", spec.Name)
		}
		ts = append(ts, typeOf(d))
	}
	ts = append(ts, typeOf(spec.OutputDims))
	if spec.Type != nil {
		return &Op{spec: spec, typ: spec.Type}, nil
	}
	return &Op{spec: spec, typ: hm.NewFnType(ts...)}, nil
}

// Apply builds an op node from spec and inputs: NewOp then gorgonia.ApplyOp.
// Errors: those of NewOp; a nil input; an input whose rank is not the
// spec's; the spec's Shape rejecting the input shapes.
func Apply(spec OpSpec, inputs ...*gorgonia.Node) (*gorgonia.Node, error) {
	op, err := NewOp(spec)
	if err != nil {
		return nil, err
	}
	if len(inputs) != len(spec.InputDims) {
		return nil, fmt.Errorf("gops: %s: got %d inputs, want %d", spec.Name, len(inputs), len(spec.InputDims))
	}
	for i, in := range inputs {
		if in == nil {
			return nil, fmt.Errorf("gops: %s: input %d is nil", spec.Name, i)
		}
		if d := in.Shape().Dims(); d != spec.InputDims[i] && !(spec.InputDims[i] == 0 && in.IsScalar()) {
			return nil, fmt.Errorf("gops: %s: input %d has shape %v, want rank %d", spec.Name, i, in.Shape(), spec.InputDims[i])
		}
	}
	n, err := gorgonia.ApplyOp(op, inputs...)
	if err != nil {
		return nil, fmt.Errorf("gops: %s: %w", spec.Name, err)
	}
	return n, nil
}

// Arity implements gorgonia.Op.
func (op *Op) Arity() int { return len(op.spec.InputDims) }

// Type implements gorgonia.Op.
func (op *Op) Type() hm.Type { return op.typ }

// InferShape implements gorgonia.Op.
func (op *Op) InferShape(in ...gorgonia.DimSizer) (tensor.Shape, error) {
	shapes, err := gorgonia.DimSizersToShapes(in)
	if err != nil {
		return nil, fmt.Errorf("gops: %s: %w", op.spec.Name, err)
	}
	s, err := op.spec.Shape(shapes)
	if err != nil {
		return nil, err
	}
	if s.Dims() != op.spec.OutputDims {
		return nil, fmt.Errorf("gops: %s: Shape returned %v for OutputDims %d", op.spec.Name, s, op.spec.OutputDims)
	}
	return s, nil
}

// Do implements gorgonia.Op. A panic in Forward, or in a kernel goroutine
// it started through the package's parallel loops, is returned as an error
// naming the op instead of ending the program.
func (op *Op) Do(in ...gorgonia.Value) (v gorgonia.Value, err error) {
	if len(in) != op.Arity() {
		return nil, fmt.Errorf("gops: %s: got %d inputs, want %d", op.spec.Name, len(in), op.Arity())
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("gops: %s: internal error (please report): %v", op.spec.Name, r)
		}
	}()
	return op.spec.Forward(in)
}

// ReturnsPtr implements gorgonia.Op.
func (op *Op) ReturnsPtr() bool { return false }

// CallsExtern implements gorgonia.Op: true only in the cuda build, for an
// op with a CUDA twin, so that Gorgonia's CUDA VM preallocates its output on
// the device.
func (op *Op) CallsExtern() bool { return cudaBuild && op.spec.gpu != nil }

// OverwritesInput implements gorgonia.Op: never.
func (op *Op) OverwritesInput() int { return -1 }

// WriteHash implements gorgonia.Op.
func (op *Op) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s{%s}", op.spec.Name, op.spec.Params)
}

// Hashcode implements gorgonia.Op.
func (op *Op) Hashcode() uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// String implements fmt.Stringer.
func (op *Op) String() string {
	if op.spec.Params == "" {
		return op.spec.Name
	}
	return op.spec.Name + "{" + op.spec.Params + "}"
}

// DiffWRT implements gorgonia.SDOp.
func (op *Op) DiffWRT(n int) []bool {
	out := make([]bool, n)
	if op.spec.Backward == nil {
		return out
	}
	for i := range out {
		out[i] = op.spec.DiffWRT == nil || i < len(op.spec.DiffWRT) && op.spec.DiffWRT[i]
	}
	return out
}

// SymDiff implements gorgonia.SDOp by calling the spec's Backward.
func (op *Op) SymDiff(in gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if op.spec.Backward == nil {
		return nil, fmt.Errorf("gops: %s is not differentiable", op.spec.Name)
	}
	if len(in) != op.Arity() {
		return nil, fmt.Errorf("gops: %s: SymDiff got %d inputs, want %d", op.spec.Name, len(in), op.Arity())
	}
	gs, err := op.spec.Backward(in, output, grad)
	if err != nil {
		return nil, fmt.Errorf("gops: %s backward: %w", op.spec.Name, err)
	}
	if len(gs) != len(in) {
		return nil, fmt.Errorf("gops: %s: Backward returned %d gradients for %d inputs", op.spec.Name, len(gs), len(in))
	}
	return gs, nil
}

// DoDiff implements gorgonia.ADOp for the LispMachine: it builds Backward in
// a scratch graph over the current values, runs it, and adds the results to
// the inputs' gradients. The LispMachine differentiates w.r.t. every input
// and cannot say which gradients are wanted, so an input for which Backward
// returns nil (RoIAlign's boxes) keeps a zero gradient there, where Grad
// would report an error if that gradient were needed.
func (op *Op) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, output *gorgonia.Node) error {
	if op.spec.Backward == nil {
		return fmt.Errorf("gops: %s is not differentiable", op.spec.Name)
	}
	upstream, err := output.Grad()
	if err != nil {
		return fmt.Errorf("gops: %s: DoDiff: %w", op.spec.Name, err)
	}
	g := gorgonia.NewGraph()
	args := make(gorgonia.Nodes, len(in))
	for i, n := range in {
		args[i] = valueNode(g, n.Value(), fmt.Sprintf("in%d", i))
	}
	out := valueNode(g, output.Value(), "out")
	gr := valueNode(g, upstream, "grad")
	grads, err := op.SymDiff(args, out, gr)
	if err != nil {
		return err
	}
	diff := op.DiffWRT(len(in))
	vals := make([]gorgonia.Value, len(in))
	for i, gn := range grads {
		if diff[i] && gn != nil {
			gorgonia.Read(gn, &vals[i])
		}
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return fmt.Errorf("gops: %s: DoDiff: %w", op.spec.Name, err)
	}
	for i, v := range vals {
		if v == nil {
			continue
		}
		d, err := in[i].Grad()
		if err != nil {
			return fmt.Errorf("gops: %s: DoDiff: input %d: %w", op.spec.Name, i, err)
		}
		if err := addInto(d, v); err != nil {
			return fmt.Errorf("gops: %s: DoDiff: input %d: %w", op.spec.Name, i, err)
		}
	}
	return nil
}

// valueNode puts v into g as an input node holding v.
func valueNode(g *gorgonia.ExprGraph, v gorgonia.Value, name string) *gorgonia.Node {
	if t, ok := v.(tensor.Tensor); ok {
		return gorgonia.NewTensor(g, t.Dtype(), t.Shape().Dims(), gorgonia.WithShape(t.Shape()...), gorgonia.WithValue(t), gorgonia.WithName(name))
	}
	return gorgonia.NewScalar(g, v.Dtype(), gorgonia.WithValue(v), gorgonia.WithName(name))
}

// addInto adds v to the gradient value d in place.
func addInto(d, v gorgonia.Value) error {
	switch dd := d.(type) {
	case *gorgonia.F64:
		*dd += gorgonia.F64(scalarOf(v))
		return nil
	case *gorgonia.F32:
		*dd += gorgonia.F32(scalarOf(v))
		return nil
	case tensor.Tensor:
		vt, ok := v.(tensor.Tensor)
		if !ok || vt.Shape().TotalSize() != dd.Shape().TotalSize() {
			return fmt.Errorf("gradient %v does not match %v", v.Shape(), d.Shape())
		}
		switch a := dd.Data().(type) {
		case []float64:
			b, _ := vt.Data().([]float64)
			if len(b) != len(a) {
				return fmt.Errorf("gradient dtype %v does not match %v", vt.Dtype(), dd.Dtype())
			}
			for i := range a {
				a[i] += b[i]
			}
		case []float32:
			b, _ := vt.Data().([]float32)
			if len(b) != len(a) {
				return fmt.Errorf("gradient dtype %v does not match %v", vt.Dtype(), dd.Dtype())
			}
			for i := range a {
				a[i] += b[i]
			}
		default:
			return fmt.Errorf("gradient dtype %v is not float32 or float64", dd.Dtype())
		}
		return nil
	}
	return fmt.Errorf("gradient value %T is not supported", d)
}

func scalarOf(v gorgonia.Value) float64 {
	switch x := v.(type) {
	case *gorgonia.F64:
		return float64(*x)
	case *gorgonia.F32:
		return float64(*x)
	case tensor.Tensor:
		switch d := x.Data().(type) {
		case []float64:
			if len(d) > 0 {
				return d[0]
			}
		case []float32:
			if len(d) > 0 {
				return float64(d[0])
			}
		case float64:
			return d
		case float32:
			return float64(d)
		}
	}
	return 0
}
