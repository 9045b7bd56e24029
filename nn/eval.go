package nn

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Model builds a model's output from its input node x, taking every
// parameter from p in x's graph (p.Node(x.Graph(), name)): the forward of
// a torch nn.Module written once and built into any number of graphs.
// train says which mode to build, as torch's module.train() and
// module.eval(): batch norm with batch statistics or running ones, dropout
// on or off. The training graph and an Evaluator's graph are both built by
// the same Model, so they compute the same function of the same values.
type Model func(p *Params, x *gorgonia.Node, train bool) (*gorgonia.Node, error)

// Evaluator runs a Model forward only (train false, no gradient nodes) in
// graphs of its own whose parameter nodes share p's tensors: torch's
// model.eval() under torch.no_grad(). An optimizer's in-place step on
// p.Values() is seen by the next Forward, with nothing copied. One graph
// and TapeMachine are built per input shape, on the first Forward of that
// shape, with ad.ReuseResults on (a forward pass allocates next to
// nothing after the first two). Not safe for concurrent use; Close
// releases the machines.
type Evaluator struct {
	p      *Params
	model  Model
	graphs map[string]*evalGraph
}

// evalGraph is an Evaluator's graph for one input shape and dtype.
type evalGraph struct {
	x, y *gorgonia.Node
	m    gorgonia.VM
	out  gorgonia.Value
}

// NewEvaluator returns an Evaluator of model over p. Errors: p or model
// is nil.
func NewEvaluator(p *Params, model Model) (*Evaluator, error) {
	if p == nil {
		return nil, fmt.Errorf("nn: NewEvaluator: the parameter set is nil")
	}
	if model == nil {
		return nil, fmt.Errorf("nn: NewEvaluator: the model is nil")
	}
	return &Evaluator{p: p, model: model, graphs: map[string]*evalGraph{}}, nil
}

// Forward runs the model in eval mode on x (any shape and float dtype the
// model accepts, e.g. a [B, 1, 28, 28] batch) and returns its output. The
// output is the machine's own value: valid until the next Forward of the
// same input shape, which overwrites it (clone it, (*tensor.Dense).Clone, to keep it). x
// is read, never written; the graph's input node holds it until the next
// Forward of its shape.
//
// Errors: x is nil or not a dense float32/float64 tensor; the model's
// error when building the graph for x's shape (named with that shape);
// the run's error (the op's own message first, ad.RunAll).
func (e *Evaluator) Forward(x tensor.Tensor) (tensor.Tensor, error) {
	if e == nil || e.graphs == nil {
		return nil, fmt.Errorf("nn: Evaluator.Forward: the evaluator is nil or closed")
	}
	if x == nil {
		return nil, fmt.Errorf("nn: Evaluator.Forward: the input is nil")
	}
	dt := x.Dtype()
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("nn: Evaluator.Forward: the input is %v, want float32 or float64", dt)
	}
	key := fmt.Sprintf("%v%v", dt, x.Shape())
	eg, ok := e.graphs[key]
	if !ok {
		var err error
		if eg, err = e.build(dt, x.Shape()); err != nil {
			return nil, err
		}
		e.graphs[key] = eg
	}
	if err := gorgonia.Let(eg.x, x); err != nil {
		return nil, fmt.Errorf("nn: Evaluator.Forward: setting the input %v: %w", x.Shape(), err)
	}
	eg.m.Reset()
	if err := ad.RunAll(eg.m); err != nil {
		return nil, fmt.Errorf("nn: Evaluator.Forward on %v: %w", x.Shape(), err)
	}
	out, ok := eg.out.(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("nn: Evaluator.Forward: the model's output is a %T, not a tensor", eg.out)
	}
	return out, nil
}

// build makes the graph and machine for inputs of dtype dt and shape s.
func (e *Evaluator) build(dt tensor.Dtype, s tensor.Shape) (*evalGraph, error) {
	g := gorgonia.NewGraph()
	ad.ReuseResults(g, true)
	x := gorgonia.NewTensor(g, dt, s.Dims(), gorgonia.WithShape(s.Clone()...), gorgonia.WithName("input"))
	y, err := e.model(e.p, x, false)
	if err != nil {
		return nil, fmt.Errorf("nn: Evaluator: building the model for input %v %v: %w", dt, s, err)
	}
	if y == nil {
		return nil, fmt.Errorf("nn: Evaluator: the model returned no output node for input %v %v", dt, s)
	}
	if y.Graph() != g {
		return nil, fmt.Errorf("nn: Evaluator: the model's output node %q is not in the input's graph", y.Name())
	}
	eg := &evalGraph{x: x, y: y}
	gorgonia.Read(y, &eg.out)
	vm, err := ad.NewTapeMachine(g)
	if err != nil {
		return nil, err
	}
	eg.m = vm
	return eg, nil
}

// Close releases the evaluator's machines; Forward fails after it.
func (e *Evaluator) Close() error {
	if e == nil {
		return nil
	}
	var first error
	for _, eg := range e.graphs {
		if err := eg.m.Close(); err != nil && first == nil {
			first = err
		}
	}
	e.graphs = nil
	return first
}
