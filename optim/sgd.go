package optim

import (
	"fmt"

	"github.com/gops-dev/gops/internal/par"
	"gorgonia.org/tensor"
)

// SGDOpts are the hyper-parameters of SGD, torch.optim.SGD's arguments.
// The zero value of each but LR is torch's default.
type SGDOpts struct {
	// LR is the learning rate (torch lr, required): >= 0.
	LR float64
	// Momentum is the momentum factor (torch momentum, default 0): >= 0.
	Momentum float64
	// Dampening damps the gradient's share of the momentum buffer (torch
	// dampening, default 0).
	Dampening float64
	// WeightDecay is the L2 penalty added to the gradient, g + wd·p (torch
	// weight_decay, default 0): >= 0.
	WeightDecay float64
	// Nesterov enables Nesterov momentum (torch nesterov, default false);
	// it needs Momentum > 0 and Dampening = 0.
	Nesterov bool
	// Maximize maximises the objective: the update uses −g (torch
	// maximize, default false).
	Maximize bool
}

// SGD is stochastic gradient descent with optional momentum, Nesterov
// momentum, dampening and weight decay: torch.optim.SGD (torch 1.13's
// single-tensor algorithm, foreach=False), update for update. For each
// parameter p with gradient g, at every Step:
//
//	d = −g if Maximize else g
//	d = d + WeightDecay·p                      if WeightDecay != 0
//	b = d (first step), else b = Momentum·b + (1 − Dampening)·d
//	                                           if Momentum != 0
//	d = d + Momentum·b if Nesterov else b     if Momentum != 0
//	p = p − LR·d
//
// computed in p's dtype with torch's roundings (the additions with a
// factor fused as torch's CPU kernels fuse them). p is updated in place.
// The momentum buffer b is State's MomentumBuffer.
type SGD struct {
	params []*tensor.Dense
	opts   SGDOpts
	bufs   []*tensor.Dense // momentum_buffer per parameter; nil before its first step
}

// NewSGD returns an SGD updating params (each a dense float32 or float64
// tensor, contiguous, none listed twice) with the hyper-parameters o.
// It fails as torch does for a negative LR, Momentum or WeightDecay and
// for Nesterov without momentum or with dampening, and also for a NaN or
// infinite hyper-parameter and for a parameter that is not a dense float
// tensor.
func NewSGD(params []tensor.Tensor, o SGDOpts) (*SGD, error) {
	const who = "SGD"
	if err := checkLR(who, o.LR); err != nil {
		return nil, err
	}
	if err := checkNonNegative(who, "momentum", o.Momentum); err != nil {
		return nil, err
	}
	if err := checkNonNegative(who, "weight_decay", o.WeightDecay); err != nil {
		return nil, err
	}
	if err := checkFinite(who, "dampening", o.Dampening); err != nil {
		return nil, err
	}
	if o.Nesterov && (o.Momentum <= 0 || o.Dampening != 0) {
		return nil, fmt.Errorf("optim: SGD: Nesterov momentum requires a momentum and zero dampening (momentum %v, dampening %v)", o.Momentum, o.Dampening)
	}
	ps, err := checkParams(who, params)
	if err != nil {
		return nil, err
	}
	return &SGD{params: ps, opts: o, bufs: make([]*tensor.Dense, len(ps))}, nil
}

// LR is the learning rate (torch param_groups[0]["lr"]); 0 for a nil
// *SGD.
func (o *SGD) LR() float64 {
	if o == nil {
		return 0
	}
	return o.opts.LR
}

// SetLR sets the learning rate, as a scheduler does; it fails for a
// negative, infinite or NaN lr and for a nil *SGD.
func (o *SGD) SetLR(lr float64) error {
	if o == nil {
		return errNilOptimizer("SGD.SetLR")
	}
	if err := checkLR("SGD.SetLR", lr); err != nil {
		return err
	}
	o.opts.LR = lr
	return nil
}

// Step updates each parameter in place from its gradient grads[i] (same
// shape and dtype as params[i]; nil: the parameter is skipped, as torch
// skips p.grad None). The gradients are only read. It fails, changing
// nothing, if len(grads) differs from the number of parameters or a
// gradient's shape or dtype differs from its parameter's, and for a nil
// *SGD.
func (o *SGD) Step(grads []tensor.Tensor) error {
	if o == nil {
		return errNilOptimizer("SGD.Step")
	}
	return stepEach("SGD", o.params, grads, func(i int, p, g *tensor.Dense) {
		first := false
		if o.opts.Momentum != 0 && o.bufs[i] == nil {
			o.bufs[i], first = zerosLike(p), true
		}
		if p.Dtype() == tensor.Float32 {
			sgdUpdate[float32](p, g, o.bufs[i], first, o.opts)
		} else {
			sgdUpdate[float64](p, g, o.bufs[i], first, o.opts)
		}
	})
}

// sgdUpdate is one torch SGD step of parameter p (buf nil without
// momentum; first: buf is new, torch's buf = clone(d)).
func sgdUpdate[T float](p, g, buf *tensor.Dense, first bool, o SGDOpts) {
	ps, gs := elems[T](p), elems[T](g)
	var bs []T
	if buf != nil {
		bs = elems[T](buf)
	}
	wd, mom, damp1, negLR := T(o.WeightDecay), T(o.Momentum), T(1-o.Dampening), T(-o.LR)
	vec := bs != nil && !o.Nesterov && !o.Maximize
	par.ForGrains(len(ps), grain, func(lo, hi int) { // elementwise: bitwise the same for any GOMAXPROCS
		if vec {
			lo += sgdMomVec(ps[lo:hi], gs[lo:hi], bs[lo:hi], wd, mom, damp1, negLR, o.WeightDecay != 0, first)
		}
		for j := lo; j < hi; j++ {
			d := gs[j]
			if o.Maximize {
				d = -d
			}
			if o.WeightDecay != 0 {
				d = fma(wd, ps[j], d)
			}
			if bs != nil {
				if first {
					bs[j] = d
				} else {
					bs[j] = fma(damp1, d, T(bs[j]*mom))
				}
				if o.Nesterov {
					d = fma(mom, bs[j], d)
				} else {
					d = bs[j]
				}
			}
			ps[j] = fma(negLR, d, ps[j])
		}
	})
}

// State is a copy of the optimizer's state: LR and, for each parameter
// that has one, its MomentumBuffer (see State for torch's names). A nil
// *SGD has the zero State.
func (o *SGD) State() State {
	if o == nil {
		return State{}
	}
	st := State{LR: o.opts.LR, Params: map[int]ParamState{}}
	for i, b := range o.bufs {
		if b != nil {
			st.Params[i] = copyBuffers(0, []string{MomentumBuffer}, []*tensor.Dense{b})
		}
	}
	return st
}

// LoadState replaces the optimizer's state with a copy of st (from State,
// possibly of another SGD over parameters of the same shapes and dtypes).
// It fails, changing nothing, for an index that names no parameter, a
// buffer other than MomentumBuffer (or one without momentum), a buffer
// whose shape or dtype differs from its parameter's, or an invalid LR,
// and for a nil *SGD.
func (o *SGD) LoadState(st State) error {
	if o == nil {
		return errNilOptimizer("SGD.LoadState")
	}
	idx, err := checkStateIndices("SGD", st, len(o.params))
	if err != nil {
		return err
	}
	names := []string{MomentumBuffer}
	if o.opts.Momentum == 0 {
		names = nil
	}
	bufs := make([]*tensor.Dense, len(o.params))
	for _, i := range idx {
		ps := st.Params[i]
		if ps.Step != 0 {
			return fmt.Errorf("optim: SGD.LoadState: Params[%d].Step = %d, SGD keeps no step", i, ps.Step)
		}
		b, err := loadBuffers("SGD", i, o.params[i], ps, names)
		if err != nil {
			return err
		}
		if len(b) > 0 {
			bufs[i] = b[0]
		}
	}
	o.bufs, o.opts.LR = bufs, st.LR
	return nil
}
