package ad

import (
	"fmt"
	"hash"
	"hash/fnv"
	"slices"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// OpSpec describes a differentiable operation; Apply puts it into a graph.
// Both of Gorgonia's VMs run and differentiate the result: the TapeMachine
// through SymDiff (and Grad), the LispMachine through DoDiff, which
// evaluates the same Backward on the values at hand. An op's gradient is
// therefore written once, and if Backward builds its result only from
// differentiable ops (other Apply ops included), the op is differentiable
// to every order.
type OpSpec struct {
	// Name identifies the op in errors, graph printouts and hashes.
	Name string
	// Params describes the op's fixed parameters. Two ops with the same
	// Name and Params must compute the same function: Gorgonia hashes ops
	// by them.
	Params string
	// InputDims is the rank of each input (0 for a scalar); its length is
	// the op's arity.
	InputDims []int
	// OutputDims is the rank of the result.
	OutputDims int
	// InputDtypes, if not nil, gives each input's dtype: the zero
	// tensor.Dtype{} for the op's float dtype, or a fixed dtype such as
	// tensor.Int for an index input. nil: every input has the float dtype.
	// The float dtype is float32 or float64, one for every input and result
	// that has it.
	InputDtypes []tensor.Dtype
	// OutputDtype is the result's dtype: the zero tensor.Dtype{} for the
	// float dtype, or a fixed one such as tensor.Int (RoIPool's argmax
	// indices).
	OutputDtype tensor.Dtype
	// DiffWRT says which inputs Backward gives gradients for; nil means all.
	DiffWRT []bool
	// Shape returns the result's shape from the input shapes, or an error
	// that names the offending input. Called when the node is built.
	Shape func(in []tensor.Shape) (tensor.Shape, error)
	// Forward computes the result from the input values, as a new value
	// that shares no memory with them (Gorgonia's VMs may reuse either).
	// Set Forward or Kernel, not both.
	Forward func(in []gorgonia.Value) (gorgonia.Value, error)
	// Kernel computes the result on the inputs' elements, written once for
	// both float dtypes (see Floats): the result is allocated, zeroed, with
	// the shape from Shape and the dtype OutputDtype.
	Kernel Kernel
	// KernelOverwrites says that Kernel writes every element of its result
	// (none is left at, or added to, its zero): the result may then come
	// uncleared, holding old values, from ad's pool of recycled arrays or,
	// under ReuseResults, from the op's own result of two runs before.
	KernelOverwrites bool
	// Backward returns, for each input, the gradient of <grad, output> with
	// respect to it, as nodes built from in, output and grad. Return nil for
	// an input that DiffWRT excludes (its derivative is zero, like an index
	// input's) or that the op cannot differentiate (Grad then fails with an
	// error if a gradient must flow into it). Backward itself may be nil for
	// an op that is not differentiable at all.
	Backward func(in gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error)
	// BackwardFor, set instead of Backward, is a Backward told which
	// gradients are wanted: want[i] says whether input i's is, and the
	// others may be nil. Grad wants only the inputs through which a
	// gradient must flow to its wrt nodes, so a costly gradient nobody
	// asked for (RoIAlign's w.r.t. boxes) is neither built nor run;
	// Gorgonia's own Grad and the LispMachine want every DiffWRT input.
	BackwardFor func(in gorgonia.Nodes, output, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error)
	// CUDA, if not nil, is the op's twin for Gorgonia's CUDA VM (build tag
	// cuda), with the signature of gorgonia.CUDADoer's CUDADo: inputs are
	// on device dev, and the result goes to prealloc when that fits. It is
	// ignored in other builds. An op without a twin runs Forward or Kernel
	// on the host there, Gorgonia copying its inputs and result.
	CUDA func(extern gorgonia.External, dev gorgonia.Device, prealloc gorgonia.Value, inputs ...gorgonia.Value) (gorgonia.Value, error)
}

// op is the gorgonia.Op that Apply makes from an OpSpec. It implements
// gorgonia.SDOp (symbolic differentiation) and gorgonia.ADOp (the
// LispMachine's automatic differentiation); in the cuda build, an op whose
// spec has CUDA is wrapped to implement gorgonia.CUDADoer too.
type op struct {
	spec  OpSpec
	types hm.Types            // Type's arguments, then its result
	salt  int                 // in the hash when not 0: Apply's retries (merge.go)
	graph *gorgonia.ExprGraph // the graph Apply put the op in (ReuseResults)
	keep  reuseSlot           // the previous result's memory, under ReuseResults
}

// newOp checks spec and returns the op.
func newOp(spec OpSpec) (*op, error) {
	switch {
	case spec.Name == "":
		return nil, fmt.Errorf("ad: Apply: OpSpec has an empty Name")
	case len(spec.InputDims) == 0:
		return nil, fmt.Errorf("ad: %s: OpSpec has no inputs (InputDims is empty)", spec.Name)
	case spec.Shape == nil:
		return nil, fmt.Errorf("ad: %s: OpSpec.Shape is required", spec.Name)
	case (spec.Forward == nil) == spec.Kernel.empty():
		return nil, fmt.Errorf("ad: %s: OpSpec needs exactly one of Forward and Kernel", spec.Name)
	case spec.DiffWRT != nil && len(spec.DiffWRT) != len(spec.InputDims):
		return nil, fmt.Errorf("ad: %s: DiffWRT has %d entries for %d inputs", spec.Name, len(spec.DiffWRT), len(spec.InputDims))
	case spec.InputDtypes != nil && len(spec.InputDtypes) != len(spec.InputDims):
		return nil, fmt.Errorf("ad: %s: InputDtypes has %d entries for %d inputs", spec.Name, len(spec.InputDtypes), len(spec.InputDims))
	case spec.OutputDims < 0:
		return nil, fmt.Errorf("ad: %s: negative OutputDims", spec.Name)
	case spec.Backward != nil && spec.BackwardFor != nil:
		return nil, fmt.Errorf("ad: %s: OpSpec sets both Backward and BackwardFor", spec.Name)
	}
	floatInputs := 0
	for i := range spec.InputDims {
		dt := spec.inputDtype(i)
		switch {
		case dt.Type == nil:
			floatInputs++
		case !spec.Kernel.empty() && dt != tensor.Int:
			return nil, fmt.Errorf("ad: %s: a Kernel takes float inputs of the op's dtype and tensor.Int inputs, not InputDtypes[%d] = %v", spec.Name, i, dt)
		}
	}
	switch {
	case floatInputs == 0 && spec.OutputDtype.Type == nil:
		return nil, fmt.Errorf("ad: %s: no input has the float dtype that the result takes: give OutputDtype", spec.Name)
	case floatInputs == 0 && !spec.Kernel.empty():
		return nil, fmt.Errorf("ad: %s: a Kernel needs a float input, whose dtype picks float32 or float64", spec.Name)
	case !spec.Kernel.empty() && spec.OutputDtype.Type != nil && spec.OutputDtype != tensor.Int:
		return nil, fmt.Errorf("ad: %s: a Kernel's result has the op's float dtype or tensor.Int, not OutputDtype %v", spec.Name, spec.OutputDtype)
	}
	floatVar := hm.TypeVariable('a')
	typeOf := func(d int, dt tensor.Dtype) hm.Type {
		var of hm.Type = floatVar
		if dt.Type != nil {
			of = dt
		}
		if d == 0 {
			return of
		}
		return gorgonia.TensorType{Dims: d, Of: of}
	}
	ts := make(hm.Types, 0, len(spec.InputDims)+1)
	for i, d := range spec.InputDims {
		if d < 0 {
			return nil, fmt.Errorf("ad: %s: negative rank for input %d", spec.Name, i)
		}
		ts = append(ts, typeOf(d, spec.inputDtype(i)))
	}
	ts = append(ts, typeOf(spec.OutputDims, spec.OutputDtype))
	return &op{spec: spec, types: ts}, nil
}

// inputDtype is input i's fixed dtype, or the zero Dtype for the float one.
func (s *OpSpec) inputDtype(i int) tensor.Dtype {
	if s.InputDtypes == nil {
		return tensor.Dtype{}
	}
	return s.InputDtypes[i]
}

// FixedShape is an OpSpec.Shape for an op built for one input shape: the
// first input must be exactly want (slices.Equal), and the result is out.
// Any other first input is the error "<op>: input <got>, want <want>", op
// naming the package and the op ("nn: Softmax"). want and out are cloned.
func FixedShape(op string, want, out tensor.Shape) func([]tensor.Shape) (tensor.Shape, error) {
	want, out = want.Clone(), out.Clone()
	return func(in []tensor.Shape) (tensor.Shape, error) {
		if !slices.Equal(in[0], want) {
			return nil, fmt.Errorf("%s: input %v, want %v", op, in[0], want)
		}
		return out.Clone(), nil
	}
}

// Apply builds a node that applies the op spec describes to inputs, in
// their graph. This is the one way to put an op into a graph; Grad and both
// VMs differentiate it through spec.Backward.
//
// Errors: an incomplete spec (empty Name, no InputDims, no Shape, neither or
// both of Forward and Kernel, DiffWRT or InputDtypes of the wrong length, a
// negative rank); dtypes that do not fit (no float input for a result of
// the float dtype; a Kernel with inputs other than float or tensor.Int, or a
// result other than the float dtype or tensor.Int); the wrong number of
// inputs; a nil input; an input whose rank or dtype is not the spec's
// (float inputs must share one dtype, float32 or float64); the spec's Shape
// rejecting the input shapes, returning a negative size, or panicking.
func Apply(spec OpSpec, inputs ...*gorgonia.Node) (*gorgonia.Node, error) {
	o, err := newOp(spec)
	if err != nil {
		return nil, err
	}
	if len(inputs) != len(spec.InputDims) {
		return nil, fmt.Errorf("ad: %s: got %d inputs, want %d", spec.Name, len(inputs), len(spec.InputDims))
	}
	var floatDt tensor.Dtype
	for i, in := range inputs {
		if in == nil {
			return nil, fmt.Errorf("ad: %s: input %d is nil", spec.Name, i)
		}
		if in.Graph() != inputs[0].Graph() {
			return nil, fmt.Errorf("ad: %s: input %d (%s) is a node of another graph than input 0 (%s): an op's inputs must be in one gorgonia.ExprGraph", spec.Name, i, in.Name(), inputs[0].Name())
		}
		if d := in.Shape().Dims(); d != spec.InputDims[i] && !(spec.InputDims[i] == 0 && in.IsScalar()) {
			return nil, fmt.Errorf("ad: %s: input %d has shape %v, want rank %d", spec.Name, i, in.Shape(), spec.InputDims[i])
		}
		dt, want := in.Dtype(), spec.inputDtype(i)
		switch {
		case want.Type != nil && dt != want:
			return nil, fmt.Errorf("ad: %s: input %d has dtype %v, want %v", spec.Name, i, dt, want)
		case want.Type == nil && dt != tensor.Float32 && dt != tensor.Float64:
			return nil, fmt.Errorf("ad: %s: input %d has dtype %v, want float32 or float64", spec.Name, i, dt)
		case want.Type == nil && floatDt.Type != nil && dt != floatDt:
			return nil, fmt.Errorf("ad: %s: input %d has dtype %v, unlike the op's earlier %v inputs", spec.Name, i, dt, floatDt)
		case want.Type == nil:
			floatDt = dt
		}
	}
	o.graph = inputs[0].Graph()
	n, err := applyChecked(o, inputs)
	if err != nil {
		return nil, fmt.Errorf("ad: %s: %w", spec.Name, err)
	}
	return n, nil
}

// Arity implements gorgonia.Op.
func (o *op) Arity() int { return len(o.spec.InputDims) }

// Type implements gorgonia.Op.
//
// The function type is new on every call: Gorgonia's ApplyOp returns it to
// hm's pool of function types once it has inferred the node's type
// (inferNodeType's deferred hm.ReturnFnType), which clears it and hands it
// to the next hm.NewFnType. An op that kept one type and returned it each
// time had it cleared, taken by another inference and put back twice, so
// that two later inferences shared one object: nodes got wrong types and
// a large graph (third-order, thousands of ops) now and then a wrong
// gradient.
func (o *op) Type() hm.Type { return hm.NewFnType(o.types...) }

// InferShape implements gorgonia.Op. A panic in Shape is returned as an
// error naming the op.
func (o *op) InferShape(in ...gorgonia.DimSizer) (s tensor.Shape, err error) {
	defer o.recoverAs("Shape", &err)
	shapes, err := gorgonia.DimSizersToShapes(in)
	if err != nil {
		return nil, fmt.Errorf("ad: %s: %w", o.spec.Name, err)
	}
	if s, err = o.spec.Shape(shapes); err != nil {
		return nil, err
	}
	if !nonNegative(s) {
		return nil, fmt.Errorf("ad: %s: Shape returned %v, a negative size", o.spec.Name, s)
	}
	if s.Dims() != o.spec.OutputDims {
		return nil, fmt.Errorf("ad: %s: Shape returned %v for OutputDims %d", o.spec.Name, s, o.spec.OutputDims)
	}
	return s, nil
}

// Do implements gorgonia.Op: Forward, or Kernel on a new result. A panic
// in it, or in goroutines it started and whose panic it re-raised, is
// returned as an error naming the op instead of ending the program; so is a
// result of another shape or dtype than the spec says.
func (o *op) Do(in ...gorgonia.Value) (v gorgonia.Value, err error) {
	if len(in) != o.Arity() {
		return nil, fmt.Errorf("ad: %s: got %d inputs, want %d", o.spec.Name, len(in), o.Arity())
	}
	defer o.recoverAs("forward", &err)
	shapes := make([]tensor.Shape, len(in))
	var floatDt tensor.Dtype
	for i, x := range in {
		shapes[i] = x.Shape()
		if floatDt.Type == nil && o.spec.inputDtype(i).Type == nil {
			floatDt = x.Dtype()
		}
	}
	want, err := o.spec.Shape(shapes)
	if err != nil {
		return nil, fmt.Errorf("ad: %s: %w", o.spec.Name, err)
	}
	if !nonNegative(want) || want.Dims() != o.spec.OutputDims {
		return nil, fmt.Errorf("ad: %s: Shape returned %v for OutputDims %d", o.spec.Name, want, o.spec.OutputDims)
	}
	if !o.spec.Kernel.empty() {
		return o.spec.Kernel.run(o, in, want)
	}
	if v, err = o.spec.Forward(in); err != nil {
		return nil, err
	}
	wantDt := o.spec.OutputDtype
	if wantDt.Type == nil {
		wantDt = floatDt
	}
	switch t, isTensor := v.(tensor.Tensor); {
	case v == nil:
		return nil, fmt.Errorf("ad: %s: Forward returned no value", o.spec.Name)
	case v.Dtype() != wantDt:
		return nil, fmt.Errorf("ad: %s: Forward returned dtype %v, want %v", o.spec.Name, v.Dtype(), wantDt)
	case want.IsScalar() && isTensor:
		return nil, fmt.Errorf("ad: %s: Forward returned a tensor of shape %v, Shape says a scalar (gorgonia.NewF64, ...)", o.spec.Name, v.Shape())
	case !want.IsScalar() && (!isTensor || !t.Shape().Eq(want) || t.Shape().Dims() != want.Dims()):
		return nil, fmt.Errorf("ad: %s: Forward returned shape %v, Shape says %v", o.spec.Name, v.Shape(), want)
	}
	return v, nil
}

// nonNegative reports whether no size of s is negative.
func nonNegative(s tensor.Shape) bool {
	for _, d := range s {
		if d < 0 {
			return false
		}
	}
	return true
}

// recoverAs turns a panic in the op's function what into *err.
func (o *op) recoverAs(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("ad: op %s failed: its %s panicked: %v", o.spec.Name, what, r)
	}
}

// ReturnsPtr implements gorgonia.Op.
func (o *op) ReturnsPtr() bool { return false }

// CallsExtern implements gorgonia.Op: false (the cuda build's wrapper of an
// op with a CUDA twin says true).
func (o *op) CallsExtern() bool { return false }

// OverwritesInput implements gorgonia.Op: never.
func (o *op) OverwritesInput() int { return -1 }

// WriteHash implements gorgonia.Op.
func (o *op) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "%s{%s}", o.spec.Name, o.spec.Params)
	if o.salt != 0 {
		fmt.Fprintf(h, "#%d", o.salt)
	}
}

// Hashcode implements gorgonia.Op.
func (o *op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// String implements fmt.Stringer.
func (o *op) String() string {
	if o.spec.Params == "" {
		return o.spec.Name
	}
	return o.spec.Name + "{" + o.spec.Params + "}"
}

// DiffWRT implements gorgonia.SDOp: the spec's DiffWRT, all inputs when
// nil, whether or not there is a Backward (without one, SymDiff names the op
// as not differentiable when a gradient needs it).
func (o *op) DiffWRT(n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = o.spec.DiffWRT == nil || i < len(o.spec.DiffWRT) && o.spec.DiffWRT[i]
	}
	return out
}

// SymDiff implements gorgonia.SDOp by calling the spec's Backward. A panic
// in Backward is returned as an error naming the op.
func (o *op) SymDiff(in gorgonia.Nodes, output, grad *gorgonia.Node) (gs gorgonia.Nodes, err error) {
	return o.symDiffWant(in, output, grad, o.DiffWRT(len(in)))
}

// wantDiffer is an op whose gradients can be built for some inputs only
// (ours, through OpSpec.BackwardFor); Grad calls it with the inputs that
// need one.
type wantDiffer interface {
	symDiffWant(in gorgonia.Nodes, output, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error)
}

// symDiffWant is SymDiff for the inputs want marks: Backward builds them
// all, BackwardFor only those.
func (o *op) symDiffWant(in gorgonia.Nodes, output, grad *gorgonia.Node, want []bool) (gs gorgonia.Nodes, err error) {
	defer o.recoverAs("Backward", &err)
	if !o.differentiable() {
		return nil, fmt.Errorf("ad: %s is not differentiable", o.spec.Name)
	}
	if len(in) != o.Arity() || len(want) != len(in) {
		return nil, fmt.Errorf("ad: %s: SymDiff got %d inputs, want %d", o.spec.Name, len(in), o.Arity())
	}
	if o.spec.BackwardFor != nil {
		gs, err = o.spec.BackwardFor(in, output, grad, want)
	} else {
		gs, err = o.spec.Backward(in, output, grad)
	}
	if err != nil {
		return nil, fmt.Errorf("ad: %s backward: %w", o.spec.Name, err)
	}
	if len(gs) != len(in) {
		return nil, fmt.Errorf("ad: %s: Backward returned %d gradients for %d inputs", o.spec.Name, len(gs), len(in))
	}
	return gs, nil
}

// DoDiff implements gorgonia.ADOp for the LispMachine: it builds Backward in
// a scratch graph over the current values, runs it, and adds the results to
// the inputs' gradients. The LispMachine differentiates w.r.t. every input
// and cannot say which gradients are wanted, so an input for which Backward
// returns nil (PSRoIAlign's boxes) keeps a zero gradient there, where Grad
// would report an error if that gradient were needed.
func (o *op) DoDiff(ctx gorgonia.ExecutionContext, in gorgonia.Nodes, output *gorgonia.Node) error {
	if !o.differentiable() {
		for _, d := range o.DiffWRT(len(in)) {
			if d {
				return fmt.Errorf("ad: %s is not differentiable", o.spec.Name)
			}
		}
		return nil // piecewise constant: DiffWRT declares no gradient
	}
	upstream, err := output.Grad()
	if err != nil {
		return fmt.Errorf("ad: %s: DoDiff: %w", o.spec.Name, err)
	}
	g := gorgonia.NewGraph()
	args := make(gorgonia.Nodes, len(in))
	for i, n := range in {
		args[i] = valueNode(g, n.Value(), fmt.Sprintf("in%d", i))
	}
	out := valueNode(g, output.Value(), "out")
	gr := valueNode(g, upstream, "grad")
	grads, err := o.SymDiff(args, out, gr)
	if err != nil {
		return err
	}
	diff := o.DiffWRT(len(in))
	vals := make([]gorgonia.Value, len(in))
	for i, gn := range grads {
		if diff[i] && gn != nil {
			gorgonia.Read(gn, &vals[i])
		}
	}
	m, err := NewTapeMachine(g)
	if err != nil {
		return fmt.Errorf("ad: %s: DoDiff: %w", o.spec.Name, err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		return fmt.Errorf("ad: %s: DoDiff: %w", o.spec.Name, err)
	}
	for i, v := range vals {
		if v == nil {
			continue
		}
		d, err := in[i].Grad()
		if err != nil {
			return fmt.Errorf("ad: %s: DoDiff: input %d: %w", o.spec.Name, i, err)
		}
		if err := addInto(d, v); err != nil {
			return fmt.Errorf("ad: %s: DoDiff: input %d: %w", o.spec.Name, i, err)
		}
	}
	return nil
}

// differentiable says whether the spec has a Backward or a BackwardFor.
func (o *op) differentiable() bool { return o.spec.Backward != nil || o.spec.BackwardFor != nil }

// valueNode puts v into g as an input node holding v.
func valueNode(g *gorgonia.ExprGraph, v gorgonia.Value, name string) *gorgonia.Node {
	if t, ok := v.(tensor.Tensor); ok {
		return gorgonia.NewTensor(g, t.Dtype(), t.Shape().Dims(), gorgonia.WithShape(t.Shape()...), gorgonia.WithValue(t), gorgonia.WithName(name))
	}
	return gorgonia.NewScalar(g, v.Dtype(), gorgonia.WithValue(v), gorgonia.WithName(name))
}

// addInto adds v to the gradient value d in place: a scalar gradient (F64,
// F32) or a tensor of v's size and dtype.
func addInto(d, v gorgonia.Value) error {
	switch dd := d.(type) {
	case *gorgonia.F64:
		b, err := valueData[float64](v)
		if err != nil || len(b) != 1 {
			return fmt.Errorf("gradient %v (%v) does not fit a float64 scalar", v.Shape(), v.Dtype())
		}
		*dd += gorgonia.F64(b[0])
		return nil
	case *gorgonia.F32:
		b, err := valueData[float32](v)
		if err != nil || len(b) != 1 {
			return fmt.Errorf("gradient %v (%v) does not fit a float32 scalar", v.Shape(), v.Dtype())
		}
		*dd += gorgonia.F32(b[0])
		return nil
	case tensor.Tensor:
		if v.Shape().TotalSize() != dd.Shape().TotalSize() {
			return fmt.Errorf("gradient %v does not match %v", v.Shape(), d.Shape())
		}
		if dd.Shape().TotalSize() == 0 {
			return nil // and Data() of an empty tensor panics
		}
		switch a := dd.Data().(type) {
		case []float64:
			return addSlices(a, v)
		case []float32:
			return addSlices(a, v)
		}
		return fmt.Errorf("gradient dtype %v is not float32 or float64", dd.Dtype())
	}
	return fmt.Errorf("gradient value %T is not supported", d)
}

// addSlices adds v's elements to a.
func addSlices[T Float](a []T, v gorgonia.Value) error {
	b, err := valueData[T](v)
	if err != nil || len(b) != len(a) {
		return fmt.Errorf("gradient %v (%v) does not match %d elements of %T", v.Shape(), v.Dtype(), len(a), a)
	}
	for i := range a {
		a[i] += b[i]
	}
	return nil
}
