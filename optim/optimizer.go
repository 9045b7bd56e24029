package optim

import "gorgonia.org/tensor"

// Optimizer is what SGD and Adam (made by NewAdam or NewAdamW) share,
// torch.optim.Optimizer's interface for one parameter group: Step with
// the gradients of one run, the learning rate (so a scheduler can drive
// it) and the state for checkpoints.
type Optimizer interface {
	LRSetter
	// Step updates the parameters in place from grads (one per parameter,
	// in the constructor's order, nil for none), which it only reads.
	Step(grads []tensor.Tensor) error
	// State is a copy of the optimizer's state (torch state_dict()).
	State() State
	// LoadState replaces the state with a copy of st (torch
	// load_state_dict()).
	LoadState(st State) error
}

var (
	_ Optimizer = (*SGD)(nil)
	_ Optimizer = (*Adam)(nil)
)
