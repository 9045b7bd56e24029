package ad

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

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
// result's first entry is replaced. If either sets BackwardFor instead,
// both results have BackwardFor (the transpose, too, is built only when
// wanted). Without one, the remaining inputs get no gradient: zero if
// DiffWRT excludes them (an index input), otherwise Grad reports an error
// should a gradient have to flow into them.
//
// The two specs must fit: the same number of inputs, the same ranks and
// dtypes for the remaining ones, f's result of the rank of ft's first input
// and the other way round. If they do not, both Backwards return an error
// that says why, so Grad reports it where a gradient needs the pair.
func LinearPair(f, ft OpSpec) (OpSpec, OpSpec) {
	fb, ftb := restOf(&f), restOf(&ft)
	mismatch := pairMismatch(&f, &ft)
	fr, ftr := transposeRule(&ft, fb, mismatch), transposeRule(&f, ftb, mismatch)
	if f.BackwardFor != nil || ft.BackwardFor != nil {
		f.Backward, f.BackwardFor = nil, fr
		ft.Backward, ft.BackwardFor = nil, ftr
		return f, ft
	}
	f.Backward = func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
		return fr(in, out, grad, nil)
	}
	ft.Backward = func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
		return ftr(in, out, grad, nil)
	}
	return f, ft
}

// backwardFor is OpSpec.BackwardFor's signature; a nil want means every
// input.
type backwardFor = func(in gorgonia.Nodes, out, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error)

// restOf is s's own Backward or BackwardFor as a backwardFor, or nil.
func restOf(s *OpSpec) backwardFor {
	switch {
	case s.BackwardFor != nil:
		bf, diff := s.BackwardFor, s.DiffWRT
		return func(in gorgonia.Nodes, out, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			if want == nil {
				want = make([]bool, len(in))
				for i := range want {
					want[i] = diff == nil || diff[i]
				}
			}
			return bf(in, out, grad, want)
		}
	case s.Backward != nil:
		b := s.Backward
		return func(in gorgonia.Nodes, out, grad *gorgonia.Node, _ []bool) (gorgonia.Nodes, error) {
			return b(in, out, grad)
		}
	}
	return nil
}

// pairMismatch says why f and ft cannot be each other's transpose, or nil.
func pairMismatch(f, ft *OpSpec) error {
	n := len(f.InputDims)
	bad := func(why string) error {
		return fmt.Errorf("ad: LinearPair(%s, %s): %s", f.Name, ft.Name, why)
	}
	switch {
	case n == 0 || len(ft.InputDims) != n:
		return bad(fmt.Sprintf("%d and %d inputs", n, len(ft.InputDims)))
	case f.OutputDims != ft.InputDims[0] || ft.OutputDims != f.InputDims[0]:
		return bad(fmt.Sprintf("results of rank %d and %d for first inputs of rank %d and %d", f.OutputDims, ft.OutputDims, ft.InputDims[0], f.InputDims[0]))
	case f.inputDtype(0).Type != nil || ft.inputDtype(0).Type != nil || f.OutputDtype.Type != nil || ft.OutputDtype.Type != nil:
		return bad("the first input and the result must have the float dtype")
	case f.DiffWRT != nil && !f.DiffWRT[0] || ft.DiffWRT != nil && !ft.DiffWRT[0]:
		return bad("DiffWRT excludes the first input, in which the ops are linear")
	}
	for i := 1; i < n; i++ {
		if f.InputDims[i] != ft.InputDims[i] || f.inputDtype(i) != ft.inputDtype(i) {
			return bad(fmt.Sprintf("input %d differs (rank %d, %d; dtype %v, %v)", i, f.InputDims[i], ft.InputDims[i], f.inputDtype(i), ft.inputDtype(i)))
		}
	}
	return nil
}

// transposeRule is the Backward of one op of a linear pair: other applied
// to the upstream gradient and the op's remaining inputs, plus rest's
// gradients for those inputs.
func transposeRule(other *OpSpec, rest backwardFor, mismatch error) backwardFor {
	return func(in gorgonia.Nodes, out, grad *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
		if mismatch != nil {
			return nil, mismatch
		}
		grads := make(gorgonia.Nodes, len(in))
		if rest != nil {
			gs, err := rest(in, out, grad, want)
			if err != nil {
				return nil, err
			}
			if len(gs) != len(in) {
				return nil, fmt.Errorf("ad: Backward returned %d gradients for %d inputs", len(gs), len(in))
			}
			copy(grads, gs)
		}
		if want != nil && !want[0] {
			grads[0] = nil
			return grads, nil
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
