package optim

import (
	"fmt"
	"math"

	"github.com/gops-dev/gops/internal/par"
	"gorgonia.org/tensor"
)

// AdamOpts are the hyper-parameters of Adam and AdamW, torch.optim.Adam's
// and torch.optim.AdamW's arguments (Beta1, Beta2 = betas). Start from
// DefaultAdamOpts or DefaultAdamWOpts: unlike SGDOpts, the zero value is
// not torch's default (it has betas (0, 0) and eps 0, whose first step
// divides 0 by 0 where a gradient element is 0), and NewAdam and NewAdamW
// refuse betas (0, 0) together with eps 0.
type AdamOpts struct {
	// LR is the learning rate (torch lr, default 1e-3): >= 0.
	LR float64
	// Beta1 and Beta2 are the decay rates of the running means of the
	// gradient and of its square (torch betas, default (0.9, 0.999)):
	// each in [0, 1).
	Beta1, Beta2 float64
	// Eps is added to the denominator (torch eps, default 1e-8): >= 0.
	Eps float64
	// WeightDecay is the L2 penalty added to the gradient (Adam, torch
	// default 0) or the decoupled decay p·(1 − LR·WeightDecay) (AdamW,
	// torch default 1e-2): >= 0.
	WeightDecay float64
	// AMSGrad normalises with the running maximum of the second moment
	// (torch amsgrad, default false).
	AMSGrad bool
	// Maximize maximises the objective: the update uses −g (torch
	// maximize, default false).
	Maximize bool
}

// DefaultAdamOpts are torch.optim.Adam's defaults: lr 1e-3, betas (0.9,
// 0.999), eps 1e-8, weight_decay 0, amsgrad and maximize false.
func DefaultAdamOpts() AdamOpts {
	return AdamOpts{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// DefaultAdamWOpts are torch.optim.AdamW's defaults: those of Adam but
// weight_decay 1e-2.
func DefaultAdamWOpts() AdamOpts {
	o := DefaultAdamOpts()
	o.WeightDecay = 1e-2
	return o
}

// Adam is the Adam algorithm (NewAdam: torch.optim.Adam) or AdamW, Adam
// with decoupled weight decay (NewAdamW: torch.optim.AdamW), torch 1.13's
// single-tensor algorithm (foreach=False), update for update. For each
// parameter p with gradient g, at its t-th Step (t counts the steps that
// gave p a gradient):
//
//	g = −g if Maximize else g
//	p = p·(1 − LR·WeightDecay)                     AdamW
//	g = g + WeightDecay·p                          Adam, if WeightDecay != 0
//	m = Beta1·m + (1 − Beta1)·g                    State's ExpAvg
//	v = Beta2·v + (1 − Beta2)·g·g                  State's ExpAvgSq
//	vmax = max(vmax, v); use vmax for v below      AMSGrad (MaxExpAvgSq)
//	p = p − (LR / (1 − Beta1^t)) · m / (√v / √(1 − Beta2^t) + Eps)
//
// in p's dtype with torch's order of operations and roundings (the bias
// corrections in float64 as Python computes them; the additions with a
// factor fused as torch's CPU kernels fuse them). p is updated in place.
type Adam struct {
	name      string // "Adam" or "AdamW", for errors
	decoupled bool   // AdamW
	params    []*tensor.Dense
	opts      AdamOpts
	steps     []int
	bufs      [][]*tensor.Dense // per parameter: exp_avg, exp_avg_sq[, max_exp_avg_sq]; nil before its first step
}

// NewAdam returns an Adam (torch.optim.Adam) updating params (each a
// dense float32 or float64 tensor, contiguous, none listed twice) with
// the hyper-parameters o. It fails as torch does for a negative LR, Eps
// or WeightDecay and for betas outside [0, 1), and also for a NaN or
// infinite hyper-parameter and for a parameter that is not a dense float
// tensor. It also refuses Beta1 = Beta2 = Eps = 0, what an AdamOpts
// literal that sets only LR holds (torch's users never get that by
// accident): start from DefaultAdamOpts.
func NewAdam(params []tensor.Tensor, o AdamOpts) (*Adam, error) {
	return newAdam("Adam", false, params, o)
}

// NewAdamW returns an AdamW (torch.optim.AdamW: Adam with decoupled weight
// decay) updating params with the hyper-parameters o; see NewAdam for the
// requirements and errors (betas (0, 0) with eps 0: start from
// DefaultAdamWOpts). Mind that AdamW's default WeightDecay is 1e-2
// (DefaultAdamWOpts).
func NewAdamW(params []tensor.Tensor, o AdamOpts) (*Adam, error) {
	return newAdam("AdamW", true, params, o)
}

func newAdam(who string, decoupled bool, params []tensor.Tensor, o AdamOpts) (*Adam, error) {
	if err := checkLR(who, o.LR); err != nil {
		return nil, err
	}
	if err := checkNonNegative(who, "eps", o.Eps); err != nil {
		return nil, err
	}
	for k, b := range []float64{o.Beta1, o.Beta2} {
		if !(b >= 0 && b < 1) {
			return nil, fmt.Errorf("optim: %s: betas[%d] = %v, want a value in [0, 1)", who, k, b)
		}
	}
	if o.Beta1 == 0 && o.Beta2 == 0 && o.Eps == 0 {
		return nil, fmt.Errorf("optim: %s: AdamOpts has no betas and no eps (betas (0, 0), eps 0; its first step gives 0/0 = NaN where a gradient element is 0): start from Default%sOpts()", who, who)
	}
	if err := checkNonNegative(who, "weight_decay", o.WeightDecay); err != nil {
		return nil, err
	}
	ps, err := checkParams(who, params)
	if err != nil {
		return nil, err
	}
	return &Adam{name: who, decoupled: decoupled, params: ps, opts: o,
		steps: make([]int, len(ps)), bufs: make([][]*tensor.Dense, len(ps))}, nil
}

// who is the optimizer's name for errors: "Adam" or "AdamW" ("Adam" for
// a nil or zero Adam).
func (o *Adam) who() string {
	if o == nil || o.name == "" {
		return "Adam"
	}
	return o.name
}

// LR is the learning rate (torch param_groups[0]["lr"]); 0 for a nil
// *Adam.
func (o *Adam) LR() float64 {
	if o == nil {
		return 0
	}
	return o.opts.LR
}

// SetLR sets the learning rate, as a scheduler does; it fails for a
// negative, infinite or NaN lr and for a nil *Adam.
func (o *Adam) SetLR(lr float64) error {
	if o == nil {
		return errNilOptimizer("Adam.SetLR")
	}
	if err := checkLR(o.who()+".SetLR", lr); err != nil {
		return err
	}
	o.opts.LR = lr
	return nil
}

// bufferNames are the names of the buffers the optimizer keeps per
// parameter, in the order of its bufs.
func (o *Adam) bufferNames() []string {
	if o.opts.AMSGrad {
		return []string{ExpAvg, ExpAvgSq, MaxExpAvgSq}
	}
	return []string{ExpAvg, ExpAvgSq}
}

// Step updates each parameter in place from its gradient grads[i] (same
// shape and dtype as params[i]; nil: the parameter is skipped and its
// step count stays, as torch skips p.grad None). The gradients are only
// read. It fails, changing nothing, if len(grads) differs from the
// number of parameters or a gradient's shape or dtype differs from its
// parameter's, and for a nil *Adam.
func (o *Adam) Step(grads []tensor.Tensor) error {
	if o == nil {
		return errNilOptimizer("Adam.Step")
	}
	return stepEach(o.who(), o.params, grads, func(i int, p, g *tensor.Dense) {
		if o.bufs[i] == nil {
			for range o.bufferNames() {
				o.bufs[i] = append(o.bufs[i], zerosLike(p))
			}
		}
		o.steps[i]++
		if p.Dtype() == tensor.Float32 {
			adamUpdate[float32](p, g, o.bufs[i], o.steps[i], o.opts, o.decoupled)
		} else {
			adamUpdate[float64](p, g, o.bufs[i], o.steps[i], o.opts, o.decoupled)
		}
	})
}

// adamUpdate is the step-th torch Adam (AdamW if decoupled) update of p;
// bufs are exp_avg, exp_avg_sq and, with AMSGrad, max_exp_avg_sq.
func adamUpdate[T float](p, g *tensor.Dense, bufs []*tensor.Dense, step int, o AdamOpts, decoupled bool) {
	ps, gs := elems[T](p), elems[T](g)
	ms, vs := elems[T](bufs[0]), elems[T](bufs[1])
	var vmax []T
	if o.AMSGrad {
		vmax = elems[T](bufs[2])
	}
	// Python floats, as torch's _single_tensor_adam computes them.
	bc1 := 1 - powInt(o.Beta1, step)
	bc2 := 1 - powInt(o.Beta2, step)
	negStepSize := T(-(o.LR / bc1))
	bc2Sqrt := T(math.Sqrt(bc2))
	b1, omb1, b2, omb2 := T(o.Beta1), T(1-o.Beta1), T(o.Beta2), T(1-o.Beta2)
	wd, decay, eps := T(o.WeightDecay), T(1-float64(o.LR*o.WeightDecay)), T(o.Eps)
	par.ForGrains(len(ps), grain, func(lo, hi int) { // elementwise: bitwise the same for any GOMAXPROCS
		for j := lo; j < hi; j++ {
			gj := gs[j]
			if o.Maximize {
				gj = -gj
			}
			if decoupled {
				ps[j] = T(ps[j] * decay)
			} else if o.WeightDecay != 0 {
				gj = fma(wd, ps[j], gj)
			}
			ms[j] = fma(omb1, gj, T(ms[j]*b1))
			vs[j] = fma(T(omb2*gj), gj, T(vs[j]*b2))
			v := vs[j]
			if vmax != nil {
				if v > vmax[j] || v != v {
					vmax[j] = v
				}
				v = vmax[j]
			}
			denom := T(T(math.Sqrt(float64(v)))/bc2Sqrt) + eps
			ps[j] += T(negStepSize*ms[j]) / denom
		}
	})
}

// State is a copy of the optimizer's state: LR and, for each parameter
// that has one, its Step and its ExpAvg, ExpAvgSq and (AMSGrad)
// MaxExpAvgSq (see State for torch's names). A nil *Adam has the zero
// State.
func (o *Adam) State() State {
	if o == nil {
		return State{}
	}
	st := State{LR: o.opts.LR, Params: map[int]ParamState{}}
	for i, b := range o.bufs {
		if b != nil {
			st.Params[i] = copyBuffers(o.steps[i], o.bufferNames(), b)
		}
	}
	return st
}

// LoadState replaces the optimizer's state with a copy of st (from State,
// possibly of another Adam or AdamW over parameters of the same shapes
// and dtypes). Each entry needs Step >= 1 and exactly the buffers this
// optimizer keeps (ExpAvg, ExpAvgSq, and MaxExpAvgSq with AMSGrad). It
// fails, changing nothing, for an index that names no parameter, a
// missing or unknown buffer, a buffer whose shape or dtype differs from
// its parameter's, a Step < 1 or an invalid LR, and for a nil *Adam.
func (o *Adam) LoadState(st State) error {
	if o == nil {
		return errNilOptimizer("Adam.LoadState")
	}
	idx, err := checkStateIndices(o.who(), st, len(o.params))
	if err != nil {
		return err
	}
	steps := make([]int, len(o.params))
	bufs := make([][]*tensor.Dense, len(o.params))
	for _, i := range idx {
		ps := st.Params[i]
		if ps.Step < 1 {
			return fmt.Errorf("optim: %s.LoadState: Params[%d].Step = %d, want >= 1", o.who(), i, ps.Step)
		}
		if bufs[i], err = loadBuffers(o.who(), i, o.params[i], ps, o.bufferNames()); err != nil {
			return err
		}
		steps[i] = ps.Step
	}
	o.steps, o.bufs, o.opts.LR = steps, bufs, st.LR
	return nil
}
