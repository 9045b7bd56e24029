package detection

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Weights is a detection model's tensors by torchvision state_dict key, in
// one dtype (float32 or float64): Params holds the trainable parameters
// (torch's parameters with requires_grad set; nn.Params.Grad and the
// optimizers of package optim take it as it is), Frozen the rest of the
// state dict (parameters of layers outside trainable_layers,
// FrozenBatchNorm2d's four buffers, BatchNorm2d's running_mean and
// running_var). A key lives in exactly one of the two. num_batches_tracked
// is not kept (torchvision's FrozenBatchNorm2d drops it too; BatchNorm2d's
// momentum update does not read it).
type Weights struct {
	Params *nn.Params
	Frozen *nn.Params
	dtype  tensor.Dtype
	// at are nodes that Node returns instead of the parameters' own (a
	// view made by paramsAt for LossAt), by key.
	at map[string]*gorgonia.Node
}

// NewWeights returns empty weights of dtype dt. Errors: dt is not float32
// or float64.
func NewWeights(dt tensor.Dtype) (*Weights, error) {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("detection: NewWeights: dtype %v is not float32 or float64", dt)
	}
	return &Weights{Params: nn.NewParams(), Frozen: nn.NewParams(), dtype: dt}, nil
}

// Dtype returns the weights' dtype.
func (w *Weights) Dtype() tensor.Dtype { return w.dtype }

// Add registers a zero tensor of the given shape under name, in Params if
// trainable and in Frozen otherwise, and returns the owned tensor for its
// initialisation (writes into it are the weights' values).
//
// Errors: w is nil; name is already in either set; shape has no elements.
func (w *Weights) Add(name string, trainable bool, shape ...int) (*tensor.Dense, error) {
	if w == nil || w.Params == nil || w.Frozen == nil {
		return nil, fmt.Errorf("detection: Weights.Add: the weights are nil or not made by NewWeights")
	}
	if w.Has(name) {
		return nil, fmt.Errorf("detection: Weights.Add: %q is already in the weights", name)
	}
	set := w.Frozen
	if trainable {
		set = w.Params
	}
	if err := set.Add(name, tensor.New(tensor.Of(w.dtype), tensor.WithShape(slices.Clone(shape)...))); err != nil {
		return nil, fmt.Errorf("detection: Weights.Add: %w", err)
	}
	return w.Value(name)
}

// Has reports whether name is in either set.
func (w *Weights) Has(name string) bool {
	if w == nil {
		return false
	}
	_, err := w.set(name)
	return err == nil
}

// set returns the set that holds name.
func (w *Weights) set(name string) (*nn.Params, error) {
	for _, s := range []*nn.Params{w.Params, w.Frozen} {
		if s == nil {
			continue
		}
		if _, err := s.Value(name); err == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("detection: no tensor %q in the weights", name)
}

// Value returns the owned tensor called name (not a copy), from whichever
// set holds it. Errors: no such tensor.
func (w *Weights) Value(name string) (*tensor.Dense, error) {
	if w == nil {
		return nil, fmt.Errorf("detection: Weights.Value: the weights are nil")
	}
	s, err := w.set(name)
	if err != nil {
		return nil, err
	}
	v, err := s.Value(name)
	if err != nil {
		return nil, err
	}
	return v.(*tensor.Dense), nil
}

// Node returns name's input node in g (nn.Params.Node of the set that
// holds it: the node's value is the owned tensor). Errors: no such tensor;
// as nn.Params.Node's.
func (w *Weights) Node(g *gorgonia.ExprGraph, name string) (*gorgonia.Node, error) {
	if w == nil {
		return nil, fmt.Errorf("detection: Weights.Node: the weights are nil")
	}
	if n, ok := w.at[name]; ok {
		if n.Graph() != g {
			return nil, fmt.Errorf("detection: the node given for %q is in another graph than the model's input", name)
		}
		return n, nil
	}
	s, err := w.set(name)
	if err != nil {
		return nil, err
	}
	return s.Node(g, name)
}

// StateDict returns a copy of every tensor by key, as torch's
// model.state_dict() without num_batches_tracked.
func (w *Weights) StateDict() map[string]tensor.Tensor {
	out := map[string]tensor.Tensor{}
	if w == nil {
		return out
	}
	for _, s := range []*nn.Params{w.Params, w.Frozen} {
		for k, v := range s.StateDict() {
			out[k] = v
		}
	}
	return out
}

// paramsAt returns a view of w whose Node gives the nodes of at for their
// keys (the parameters at other values: adapted ones θ − α·g in MAML) and
// w's own nodes for the rest; the view shares w's tensors. fn names the
// caller in errors.
//
// Errors: a key that is not a trainable parameter (in Params); a nil
// node; a node of another shape or dtype than its parameter.
func (w *Weights) paramsAt(fn string, at map[string]*gorgonia.Node) (*Weights, error) {
	if w == nil || w.Params == nil {
		return nil, fmt.Errorf("detection: %s: the weights are nil", fn)
	}
	for _, name := range slices.Sorted(maps.Keys(at)) {
		n := at[name]
		v, err := w.Params.Value(name)
		if err != nil {
			return nil, fmt.Errorf("detection: %s: %q is not a trainable parameter of the model", fn, name)
		}
		if n == nil {
			return nil, fmt.Errorf("detection: %s: the node for %q is nil", fn, name)
		}
		if !slices.Equal(n.Shape(), v.Shape()) || n.Dtype() != w.dtype {
			return nil, fmt.Errorf("detection: %s: the node for %q is %v %v, the parameter %v %v",
				fn, name, n.Dtype(), n.Shape(), w.dtype, v.Shape())
		}
	}
	view := *w
	view.at = at
	return &view, nil
}
