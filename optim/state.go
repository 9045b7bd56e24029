package optim

import (
	"fmt"
	"slices"
	"sort"

	"gorgonia.org/tensor"
)

// Buffer names of ParamState.Buffers: torch's keys of optimizer.state[p].
const (
	// MomentumBuffer is SGD's velocity (torch "momentum_buffer").
	MomentumBuffer = "momentum_buffer"
	// ExpAvg is Adam's first moment, the running mean of the gradients
	// (torch "exp_avg").
	ExpAvg = "exp_avg"
	// ExpAvgSq is Adam's second moment, the running mean of the squared
	// gradients (torch "exp_avg_sq").
	ExpAvgSq = "exp_avg_sq"
	// MaxExpAvgSq is AMSGrad's running maximum of ExpAvgSq (torch
	// "max_exp_avg_sq").
	MaxExpAvgSq = "max_exp_avg_sq"
)

// State is an optimizer's state for a checkpoint, what torch's
// optimizer.state_dict() holds for one parameter group:
//
//	torch state_dict()                       State
//	["param_groups"][0]["lr"]                LR
//	["state"][i]                             Params[i]
//	["state"][i]["step"] (a float tensor)     Params[i].Step
//	["state"][i]["exp_avg"], ...              Params[i].Buffers["exp_avg"], ...
//
// Index i is the parameter's position in the slice given to the
// optimizer's constructor, as in torch. A parameter that never had a
// gradient has no entry (as in torch); nor has any with SGD without
// momentum (torch keeps {"momentum_buffer": None} there). The other
// hyper-parameters of param_groups are not part of State: they are the
// constructor's. The buffers are copies: changing them changes neither
// the optimizer nor a State taken from it.
type State struct {
	// LR is the learning rate (param_groups[0]["lr"]).
	LR float64
	// Params is the state of each parameter that has one, by index.
	Params map[int]ParamState
}

// ParamState is one parameter's state (torch's optimizer.state[p]).
type ParamState struct {
	// Step is the number of steps that updated the parameter (torch
	// "step"; Adam and AdamW only, 0 for SGD).
	Step int
	// Buffers are the parameter's buffers by torch's name (MomentumBuffer,
	// ExpAvg, ExpAvgSq, MaxExpAvgSq), each of the parameter's shape and
	// dtype.
	Buffers map[string]tensor.Tensor
}

// copyBuffers is the State entry of the buffers named names (all set).
func copyBuffers(step int, names []string, bufs []*tensor.Dense) ParamState {
	ps := ParamState{Step: step, Buffers: make(map[string]tensor.Tensor, len(names))}
	for k, name := range names {
		ps.Buffers[name] = bufs[k].Clone().(*tensor.Dense)
	}
	return ps
}

// loadBuffers checks the State entry of parameter i of params against the
// buffer names the optimizer keeps (all needed, no other) and returns
// copies of them in the order of names.
func loadBuffers(who string, i int, p *tensor.Dense, ps ParamState, names []string) ([]*tensor.Dense, error) {
	for name := range ps.Buffers {
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("optim: %s.LoadState: Params[%d] has buffer %q, want only %q", who, i, name, names)
		}
	}
	out := make([]*tensor.Dense, len(names))
	for k, name := range names {
		b, ok := ps.Buffers[name]
		if !ok || b == nil {
			return nil, fmt.Errorf("optim: %s.LoadState: Params[%d] lacks buffer %q", who, i, name)
		}
		d, err := denseFloat(b)
		if err == nil {
			err = sameLayout(p, d)
		}
		if err != nil {
			return nil, fmt.Errorf("optim: %s.LoadState: Params[%d][%q]: %w", who, i, name, err)
		}
		out[k] = d.Clone().(*tensor.Dense)
	}
	return out, nil
}

// checkStateIndices checks that every index of st.Params names a
// parameter (of n) and st.LR is a valid learning rate; it returns the
// indices in increasing order.
func checkStateIndices(who string, st State, n int) ([]int, error) {
	if err := checkLR(who+".LoadState", st.LR); err != nil {
		return nil, err
	}
	idx := make([]int, 0, len(st.Params))
	for i := range st.Params {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("optim: %s.LoadState: Params[%d] for %d parameters", who, i, n)
		}
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return idx, nil
}
