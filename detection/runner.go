package detection

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// buildFunc builds a model part's outputs from its input node, and
// whatever the caller wants kept of the graph's geometry (meta).
type buildFunc func(x *gorgonia.Node) (outs []*gorgonia.Node, meta any, err error)

// variantBuildFunc is a buildFunc for graphs that differ by more than the
// input's shape: variant (comparable, printed into the graph's key) says
// how.
type variantBuildFunc func(x *gorgonia.Node, variant any) (outs []*gorgonia.Node, meta any, err error)

// maxRunnerGraphs is how many input shapes' graphs a runner keeps. Each
// graph's machine holds every intermediate buffer (hundreds of MB for a
// ResNet-50-FPN detector at 800×1333), and images of varied aspect
// ratios give many padded shapes, so the least recently used graph is
// closed beyond this.
const maxRunnerGraphs = 4

// runner runs a forward-only graph (built by build, in eval mode) on
// inputs of any shape: one graph and TapeMachine per input shape and
// dtype, built on the first run of that shape, with ad.ReuseResults on, as
// nn.Evaluator does for one output; the maxRunnerGraphs most recently
// used are kept. Not safe for concurrent use.
type runner struct {
	build  variantBuildFunc
	graphs map[string]*runGraph
	clock  uint64
}

// runGraph is a runner's graph for one input shape.
type runGraph struct {
	x    *gorgonia.Node
	outs []gorgonia.Value
	meta any
	m    gorgonia.VM
	used uint64
}

func newRunner(build buildFunc) *runner {
	return newVariantRunner(func(x *gorgonia.Node, _ any) ([]*gorgonia.Node, any, error) { return build(x) })
}

// newVariantRunner is a runner whose graphs are built per input shape and
// variant.
func newVariantRunner(build variantBuildFunc) *runner {
	return &runner{build: build, graphs: map[string]*runGraph{}}
}

// run sets x as the input and returns the outputs (the machine's own
// values, valid until the next run of the same shape) and the graph's
// meta.
func (r *runner) run(x *tensor.Dense) ([]*tensor.Dense, any, error) {
	return r.runVariant(x, nil, nil)
}

// runVariant is run on the graph of x's shape and variant; prepare, if
// not nil, is called with the graph's meta before the machine runs (to
// set the graph's other inputs).
func (r *runner) runVariant(x *tensor.Dense, variant any, prepare func(meta any) error) ([]*tensor.Dense, any, error) {
	rg, err := r.graph(x, variant)
	if err != nil {
		return nil, nil, err
	}
	if prepare != nil {
		if err := prepare(rg.meta); err != nil {
			return nil, nil, err
		}
	}
	if err := rg.exec(x); err != nil {
		return nil, nil, err
	}
	out := make([]*tensor.Dense, len(rg.outs))
	for i, v := range rg.outs {
		d, ok := v.(*tensor.Dense)
		if !ok {
			return nil, nil, fmt.Errorf("output %d is a %T, not a dense tensor", i, v)
		}
		out[i] = d
	}
	return out, rg.meta, nil
}

// graph returns the graph of x's dtype and shape, built on its first use
// (and the least recently used one closed beyond maxRunnerGraphs).
func (r *runner) graph(x *tensor.Dense, variant any) (*runGraph, error) {
	if r == nil || r.graphs == nil {
		return nil, fmt.Errorf("the model is closed")
	}
	key := fmt.Sprintf("%v%v", x.Dtype(), x.Shape())
	if variant != nil {
		key += fmt.Sprintf(" %v", variant)
	}
	rg, ok := r.graphs[key]
	if !ok {
		var err error
		if rg, err = r.newGraph(x.Dtype(), x.Shape(), variant); err != nil {
			return nil, err
		}
		if len(r.graphs) >= maxRunnerGraphs {
			r.evict()
		}
		r.graphs[key] = rg
	}
	r.clock++
	rg.used = r.clock
	return rg, nil
}

// exec sets x as the graph's input and runs its machine: outs then hold
// the outputs (the machine's own values, valid until its next run).
func (rg *runGraph) exec(x *tensor.Dense) error {
	if err := gorgonia.Let(rg.x, x); err != nil {
		return fmt.Errorf("setting the input %v: %w", x.Shape(), err)
	}
	rg.m.Reset()
	if err := ad.RunAll(rg.m); err != nil {
		return fmt.Errorf("running the graph of input %v: %w", x.Shape(), err)
	}
	return nil
}

// evict closes and drops the least recently used graph.
func (r *runner) evict() {
	var oldest string
	for k, rg := range r.graphs {
		if oldest == "" || rg.used < r.graphs[oldest].used {
			oldest = k
		}
	}
	if rg, ok := r.graphs[oldest]; ok {
		_ = rg.m.Close() // as close, but nothing waits on the error here
		delete(r.graphs, oldest)
	}
}

// newGraph builds the graph and machine for inputs of dtype dt, shape s.
func (r *runner) newGraph(dt tensor.Dtype, s tensor.Shape, variant any) (*runGraph, error) {
	g := gorgonia.NewGraph()
	ad.ReuseResults(g, true)
	x := gorgonia.NewTensor(g, dt, s.Dims(), gorgonia.WithShape(s.Clone()...), gorgonia.WithName("images"))
	ys, meta, err := r.build(x, variant)
	if err != nil {
		return nil, fmt.Errorf("building the graph for input %v %v: %w", dt, s, err)
	}
	rg := &runGraph{x: x, outs: make([]gorgonia.Value, len(ys)), meta: meta}
	for i, y := range ys {
		gorgonia.Read(y, &rg.outs[i])
	}
	// nn.BitwiseEngine: Gorgonia's own Add (residual sums, a gradient's
	// terms: the heads' weights are shared by five levels) and Mul on the
	// worker team in vector loops, bitwise the default engine's values.
	vm, err := ad.NewTapeMachine(g, gorgonia.WithEngine(nn.BitwiseEngine{}))
	if err != nil {
		return nil, err
	}
	rg.m = vm
	return rg, nil
}

// close releases the machines; run fails after it.
func (r *runner) close() error {
	if r == nil {
		return nil
	}
	var first error
	for _, rg := range r.graphs {
		if err := rg.m.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.graphs = nil
	return first
}
