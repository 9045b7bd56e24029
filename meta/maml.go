package meta

import (
	"fmt"
	"math"
	"slices"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// LossAt builds a model's scalar loss at the parameter nodes params: one
// node per parameter of θ, in θ's order, each of its parameter's shape
// and dtype, in θ's graph. MAML calls it with θ itself and with adapted
// parameters θ − α·g (nodes computed in the graph), so a LossAt must take
// every parameter from params, never from the model's own nodes. It
// returns a scalar node of θ's graph and dtype, or an error.
//
// A LossAt that feeds data through input nodes it makes (a batch, loss
// targets) is called once per MAML inner step (support) and once for the
// query: each call may make its own inputs, to be set before the graph
// runs.
type LossAt func(params gorgonia.Nodes) (*gorgonia.Node, error)

// MAMLOpts are the options of MAML.
type MAMLOpts struct {
	// InnerLR is α, the step size of the inner SGD steps: finite and not
	// zero.
	InnerLR float64
	// InnerSteps is K, the number of inner steps: at least 1; 0 means 1.
	InnerSteps int
	// FirstOrder treats the inner gradients as constants (first-order
	// MAML, "FOMAML"): the meta-gradient is ∇L_q at θ_K, without the
	// second derivatives of the support loss. The graph holds no
	// derivative of an inner gradient and is much smaller.
	FirstOrder bool
}

// MAMLGraph are the nodes MAML adds to θ's graph. Read their values with
// gorgonia.Read (bound before the machine is made), not Value after a
// run: a TapeMachine may have reused an intermediate node's memory by
// then.
type MAMLGraph struct {
	// SupportLosses are L_s(θ_k) for k = 0 … K−1, the support loss at the
	// start of each inner step (scalars).
	SupportLosses []*gorgonia.Node
	// InnerGrads are g_k = ∇L_s(θ_k), the gradient of the support loss
	// w.r.t. the parameters of step k, one node per parameter of θ.
	InnerGrads []gorgonia.Nodes
	// Adapted is θ_K, the parameters after the inner steps, one node per
	// parameter of θ, of its shape.
	Adapted gorgonia.Nodes
	// QueryLoss is L_q(θ_K), the MAML objective of the task (a scalar).
	QueryLoss *gorgonia.Node
	// MetaGrads is the meta-gradient dL_q(θ_K)/dθ, one node per
	// parameter of θ, of its shape: second order (through the inner
	// gradients) unless MAMLOpts.FirstOrder, then ∂L_q/∂θ_K.
	MetaGrads gorgonia.Nodes
}

// MAML adds a MAML task to θ's graph: K inner SGD steps of step size α on
// the support loss from θ_0 = θ,
//
//	g_k     = ∇L_s(θ_k)            (ad.Grad, k = 0 … K−1)
//	θ_{k+1} = θ_k − α·g_k,
//
// the query loss L_q(θ_K) and its gradient w.r.t. θ, the meta-gradient.
// Second order (the default) differentiates through the inner gradients:
// for one step
//
//	dL_q(θ − α∇L_s(θ))/dθ = (I − α·∇²L_s(θ))·∇L_q(θ_1),
//
// a Hessian-vector product of the support loss, by ad.Grad of the graph
// of g_0; for K steps the product of K such factors. First order
// (MAMLOpts.FirstOrder) takes every g_k as a constant: dθ_K/dθ = I and
// the meta-gradient is ∇L_q(θ_K) itself, the gradient w.r.t. the adapted
// nodes (Gorgonia has no stop-gradient op; differentiating w.r.t. θ_K
// instead of θ stops there). θ are the parameter nodes (inputs of the
// graph, as nn.Params.Nodes gives them), support and query the loss
// builders (see LossAt), support called once per step. Run the graph to
// get the values; a meta-training step then updates θ by MetaGrads
// (package optim).
//
// In torch (torch.autograd.grad, the functional form of learn2learn's
// and higher's MAML):
//
//	params = [p for p in model.parameters() if p.requires_grad]
//	fast = params
//	for _ in range(K):
//	    g = torch.autograd.grad(L_s(fast), fast, create_graph=not first_order)
//	    fast = [p - alpha * gi for p, gi in zip(fast, g)]
//	meta_grads = torch.autograd.grad(L_q(fast), params)
//
// with L_s and L_q the model called at the parameters fast
// (torch.func.functional_call; torch 1.13:
// torch.nn.utils.stateless.functional_call).
//
// Errors: θ empty, a nil node, nodes in different graphs or not float32
// or float64; α not finite or zero; K negative; support or query nil; a
// LossAt's error or a loss that is not a scalar of θ's graph and dtype;
// an ad.Grad error (an op of the model without the derivative needed,
// such as Gorgonia's Conv2d at order 2).
func MAML(theta gorgonia.Nodes, support, query LossAt, opts MAMLOpts) (*MAMLGraph, error) {
	if err := checkMAML(theta, support, query, opts); err != nil {
		return nil, err
	}
	steps := max(opts.InnerSteps, 1)
	out := &MAMLGraph{}
	at := theta
	for k := 0; k < steps; k++ {
		loss, err := lossAt(support, at, theta, fmt.Sprintf("support loss of inner step %d", k))
		if err != nil {
			return nil, err
		}
		g, err := ad.Grad(loss, at...)
		if err != nil {
			return nil, fmt.Errorf("meta: MAML: gradient of the support loss of inner step %d: %w", k, err)
		}
		next, err := sgdStep(at, g, opts.InnerLR)
		if err != nil {
			return nil, fmt.Errorf("meta: MAML: inner step %d: %w", k, err)
		}
		out.SupportLosses = append(out.SupportLosses, loss)
		out.InnerGrads = append(out.InnerGrads, g)
		at = next
	}
	out.Adapted = at
	var err error
	if out.QueryLoss, err = lossAt(query, at, theta, "query loss"); err != nil {
		return nil, err
	}
	wrt := theta
	if opts.FirstOrder {
		wrt = at
	}
	if out.MetaGrads, err = ad.Grad(out.QueryLoss, wrt...); err != nil {
		return nil, fmt.Errorf("meta: MAML: meta-gradient: %w", err)
	}
	return out, nil
}

// checkMAML checks MAML's arguments.
func checkMAML(theta gorgonia.Nodes, support, query LossAt, opts MAMLOpts) error {
	if len(theta) == 0 {
		return fmt.Errorf("meta: MAML: no parameters (theta is empty)")
	}
	for i, n := range theta {
		if n == nil {
			return fmt.Errorf("meta: MAML: theta[%d] is nil", i)
		}
		if n.Graph() != theta[0].Graph() {
			return fmt.Errorf("meta: MAML: theta[%d] (%s) is in another graph than theta[0]", i, n.Name())
		}
		if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
			return fmt.Errorf("meta: MAML: theta[%d] (%s) is %v, want float32 or float64", i, n.Name(), dt)
		}
	}
	if a := opts.InnerLR; a == 0 || math.IsNaN(a) || math.IsInf(a, 0) {
		return fmt.Errorf("meta: MAML: InnerLR %v, want a finite non-zero step size", a)
	}
	if opts.InnerSteps < 0 {
		return fmt.Errorf("meta: MAML: InnerSteps %d, want at least 1 (0 for 1)", opts.InnerSteps)
	}
	if support == nil || query == nil {
		return fmt.Errorf("meta: MAML: the support or query LossAt is nil")
	}
	return nil
}

// lossAt calls f at the parameters at and checks that the loss is a
// scalar of θ's graph and dtype.
func lossAt(f LossAt, at, theta gorgonia.Nodes, what string) (*gorgonia.Node, error) {
	loss, err := f(at)
	if err != nil {
		return nil, fmt.Errorf("meta: MAML: %s: %w", what, err)
	}
	if loss == nil || loss.Graph() != theta[0].Graph() || !loss.IsScalar() || loss.Dtype() != theta[0].Dtype() {
		return nil, fmt.Errorf("meta: MAML: %s: want a scalar %v node of theta's graph, got %v", what, theta[0].Dtype(), describe(loss))
	}
	return loss, nil
}

// describe names a loss node's type and shape for an error.
func describe(n *gorgonia.Node) string {
	if n == nil {
		return "nil"
	}
	return fmt.Sprintf("%v of shape %v", n.Type(), n.Shape())
}

// sgdStep is θ − α·g for each parameter, in the parameters' dtype.
func sgdStep(theta, g gorgonia.Nodes, alpha float64) (gorgonia.Nodes, error) {
	b := ad.NewBuilder(theta[0])
	next := make(gorgonia.Nodes, len(theta))
	for i, p := range theta {
		if !slices.Equal(g[i].Shape(), p.Shape()) {
			return nil, fmt.Errorf("gradient of %s has shape %v, the parameter %v", p.Name(), g[i].Shape(), p.Shape())
		}
		next[i] = b.Sub(p, b.Scale(g[i], alpha))
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	return next, nil
}
