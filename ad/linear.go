package ad

import "gorgonia.org/gorgonia"

// LinearPair declares two ops that are linear in their first input and
// each other's transpose in it, F(x, aux...) and Fᵀ(g, aux...) with the
// same remaining inputs (JAX's deflinear2), and returns their specs with
// Backward set: the gradient of F w.r.t. x, for an upstream gradient G, is
// Fᵀ(G, aux...), and the gradient of Fᵀ w.r.t. g is F(G, aux...). Both are
// then differentiable to every order with two kernels (RoIAlign and its
// scatter-add transpose, a gather and its scatter, a layout change and its
// inverse).
//
// A Backward already set in f or ft is kept for the remaining inputs: its
// result's first entry is replaced. Without one, the remaining inputs get
// no gradient: zero if DiffWRT excludes them (an index input), otherwise
// Grad reports an error should a gradient have to flow into them.
func LinearPair(f, ft OpSpec) (OpSpec, OpSpec) {
	fb, ftb := f.Backward, ft.Backward
	f.Backward = transposeRule(&ft, fb)
	ft.Backward = transposeRule(&f, ftb)
	return f, ft
}

// transposeRule is the Backward of one op of a linear pair: other applied
// to the upstream gradient and the op's remaining inputs, plus rest's
// gradients for those inputs.
func transposeRule(other *OpSpec, rest func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error)) func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
		grads := make(gorgonia.Nodes, len(in))
		if rest != nil {
			gs, err := rest(in, out, grad)
			if err != nil {
				return nil, err
			}
			copy(grads, gs)
		}
		args := append(gorgonia.Nodes{grad}, in[1:]...)
		d, err := Apply(*other, args...)
		if err != nil {
			return nil, err
		}
		grads[0] = d
		return grads, nil
	}
}
