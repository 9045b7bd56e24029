package optim

import (
	"errors"
	"math"
	"math/big"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

func f64(shape []int, v ...float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

func f32(shape []int, v ...float32) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

// threeParams are a [2, 2] and a [3] float64 parameter and a float32
// scalar.
func threeParams() []tensor.Tensor {
	return []tensor.Tensor{f64([]int{2, 2}, 1, 2, 3, 4), f64([]int{3}, 5, 6, 7), tensor.New(tensor.FromScalar(float32(8)))}
}

// wantErr fails unless err is an error containing want.
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want one containing %q", err, want)
	}
}

// TestConstructorErrors: bad hyper-parameters and parameters are errors.
func TestConstructorErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	shared := f64([]int{4}, 1, 2, 3, 4)
	view, err := shared.Slice(tensor.S(0, 2))
	if err != nil {
		t.Fatal(err)
	}
	strided, err := f64([]int{2, 2}, 1, 2, 3, 4).Slice(nil, tensor.S(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	ints := tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2}))
	p := threeParams()
	sgd := func(o SGDOpts) error { _, err := NewSGD(p, o); return err }
	adam := func(o AdamOpts) error { _, err := NewAdam(p, o); return err }
	adamw := func(o AdamOpts) error { _, err := NewAdamW(p, o); return err }
	with := func(f func(*AdamOpts)) AdamOpts { o := DefaultAdamOpts(); f(&o); return o }
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"sgd/negative lr", sgd(SGDOpts{LR: -0.1}), "lr = -0.1"},
		{"sgd/NaN lr", sgd(SGDOpts{LR: nan}), "lr = NaN"},
		{"sgd/Inf lr", sgd(SGDOpts{LR: inf}), "lr = +Inf"},
		{"sgd/negative momentum", sgd(SGDOpts{LR: 0.1, Momentum: -0.9}), "momentum = -0.9"},
		{"sgd/NaN momentum", sgd(SGDOpts{LR: 0.1, Momentum: nan}), "momentum = NaN"},
		{"sgd/negative weight decay", sgd(SGDOpts{LR: 0.1, WeightDecay: -1}), "weight_decay = -1"},
		{"sgd/NaN dampening", sgd(SGDOpts{LR: 0.1, Momentum: 0.9, Dampening: nan}), "dampening = NaN"},
		{"sgd/nesterov without momentum", sgd(SGDOpts{LR: 0.1, Nesterov: true}), "Nesterov momentum requires"},
		{"sgd/nesterov with dampening", sgd(SGDOpts{LR: 0.1, Momentum: 0.9, Dampening: 0.1, Nesterov: true}), "zero dampening"},
		{"adam/negative lr", adam(with(func(o *AdamOpts) { o.LR = -1e-3 })), "Adam: lr = -0.001"},
		{"adam/negative eps", adam(with(func(o *AdamOpts) { o.Eps = -1e-8 })), "eps = -1e-08"},
		{"adam/NaN eps", adam(with(func(o *AdamOpts) { o.Eps = nan })), "eps = NaN"},
		{"adam/beta1 1", adam(with(func(o *AdamOpts) { o.Beta1 = 1 })), "betas[0] = 1"},
		{"adam/beta2 negative", adam(with(func(o *AdamOpts) { o.Beta2 = -0.1 })), "betas[1] = -0.1"},
		{"adam/beta2 NaN", adam(with(func(o *AdamOpts) { o.Beta2 = nan })), "betas[1] = NaN"},
		{"adam/negative weight decay", adam(with(func(o *AdamOpts) { o.WeightDecay = -0.01 })), "weight_decay = -0.01"},
		{"adam/zero opts", adam(AdamOpts{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: inf}), "eps = +Inf"},
		{"adam/no betas, no eps", adam(AdamOpts{LR: 1e-3}), "Adam: AdamOpts has no betas and no eps (betas (0, 0), eps 0; its first step gives 0/0 = NaN where a gradient element is 0): start from DefaultAdamOpts()"},
		{"adamw/no betas, no eps", adamw(AdamOpts{LR: 1e-3, WeightDecay: 1e-2}), "AdamW: AdamOpts has no betas and no eps (betas (0, 0), eps 0; its first step gives 0/0 = NaN where a gradient element is 0): start from DefaultAdamWOpts()"},
		{"adamw/NaN lr", adamw(func() AdamOpts { o := DefaultAdamWOpts(); o.LR = nan; return o }()), "AdamW: lr = NaN"},
		{"adamw/NaN weight decay", adamw(func() AdamOpts { o := DefaultAdamWOpts(); o.WeightDecay = nan; return o }()), "weight_decay = NaN"},
		{"params/none", func() error { _, err := NewSGD(nil, SGDOpts{LR: 1}); return err }(), "no parameters"},
		{"params/nil", func() error { _, err := NewSGD([]tensor.Tensor{p[0], nil}, SGDOpts{LR: 1}); return err }(), "params[1]: nil tensor"},
		{"params/typed nil", func() error {
			_, err := NewAdam([]tensor.Tensor{(*tensor.Dense)(nil)}, DefaultAdamOpts())
			return err
		}(), "params[0]: want a *tensor.Dense"},
		{"params/int", func() error { _, err := NewSGD([]tensor.Tensor{p[0], ints}, SGDOpts{LR: 1}); return err }(), "params[1]: dtype int"},
		{"params/twice", func() error { _, err := NewSGD([]tensor.Tensor{p[0], p[1], p[0]}, SGDOpts{LR: 1}); return err }(), "params[2] is params[0] again"},
		{"params/shared data", func() error { _, err := NewAdam([]tensor.Tensor{shared, view}, DefaultAdamOpts()); return err }(), "params[1] shares its data with params[0]"},
		{"params/strided view", func() error { _, err := NewSGD([]tensor.Tensor{strided}, SGDOpts{LR: 1}); return err }(), "params[0]:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantErr(t, c.err, c.want) })
	}
	// Zero betas alone, or eps 0 alone, are torch's to take.
	for _, o := range []AdamOpts{{LR: 1e-3, Eps: 1e-8}, {LR: 1e-3, Beta1: 0.9, Beta2: 0.999}} {
		if _, err := NewAdam(p, o); err != nil {
			t.Errorf("NewAdam(%+v): %v", o, err)
		}
	}
}

// TestNilReceivers: methods on a nil *SGD, *Adam or *LRScheduler and a
// scheduler made on a nil (also a typed nil) optimizer are errors or zero
// values, never a panic.
func TestNilReceivers(t *testing.T) {
	var sgd *SGD
	var adam *Adam
	var sched *LRScheduler
	var picky *refusing
	grads := []tensor.Tensor{f64([]int{1}, 1)}
	made := func(_ *LRScheduler, err error) error { return err }
	cases := []struct {
		name string
		f    func() error
		want string
	}{
		{"SGD.Step", func() error { return sgd.Step(grads) }, "optim: SGD.Step: nil optimizer"},
		{"SGD.SetLR", func() error { return sgd.SetLR(0.1) }, "optim: SGD.SetLR: nil optimizer"},
		{"SGD.LoadState", func() error { return sgd.LoadState(State{LR: 0.1}) }, "optim: SGD.LoadState: nil optimizer"},
		{"Adam.Step", func() error { return adam.Step(grads) }, "optim: Adam.Step: nil optimizer"},
		{"Adam.SetLR", func() error { return adam.SetLR(0.1) }, "optim: Adam.SetLR: nil optimizer"},
		{"Adam.LoadState", func() error { return adam.LoadState(State{LR: 0.1}) }, "optim: Adam.LoadState: nil optimizer"},
		{"LRScheduler.Step", func() error { return sched.Step() }, "optim: LRScheduler.Step: nil scheduler"},
		{"zero LRScheduler.Step", func() error { return new(LRScheduler).Step() }, "optim: LRScheduler.Step: a zero LRScheduler"},
		{"StepLR on nil *SGD", func() error { return made(NewStepLR(sgd, 1, 0.5)) }, "optim: StepLR: nil optimizer (a nil *optim.SGD)"},
		{"MultiStepLR on nil *Adam", func() error { return made(NewMultiStepLR(adam, []int{2}, 0.5)) }, "optim: MultiStepLR: nil optimizer (a nil *optim.Adam)"},
		{"LinearLR on nil *SGD", func() error { return made(NewLinearLR(sgd, 0.5, 1, 2)) }, "optim: LinearLR: nil optimizer (a nil *optim.SGD)"},
		{"CosineAnnealingLR on nil *Adam", func() error { return made(NewCosineAnnealingLR(adam, 3, 0)) }, "optim: CosineAnnealingLR: nil optimizer (a nil *optim.Adam)"},
		{"StepLR on a nil LRSetter of the user's", func() error { return made(NewStepLR(picky, 1, 0.5)) }, "optim: StepLR: nil optimizer (a nil *optim.refusing)"},
		{"SequentialLR on nil *SGD", func() error { return made(NewSequentialLR(sgd, nil, nil)) }, "optim: SequentialLR: nil optimizer (a nil *optim.SGD)"},
		{"SequentialLR of a zero LRScheduler", func() error {
			return made(NewSequentialLR(testSGD(t, 1), []*LRScheduler{new(LRScheduler)}, nil))
		}, "optim: SequentialLR: schedulers[0] is a zero LRScheduler"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			wantErr(t, c.f(), c.want)
		})
	}
	if sgd.LR() != 0 || adam.LR() != 0 || sched.LastLR() != 0 || sched.LastEpoch() != 0 {
		t.Errorf("nil LR/LastLR/LastEpoch: %v %v %v %v, want 0", sgd.LR(), adam.LR(), sched.LastLR(), sched.LastEpoch())
	}
	if st := sgd.State(); st.LR != 0 || st.Params != nil {
		t.Errorf("nil SGD's State: %+v", st)
	}
	if st := adam.State(); st.LR != 0 || st.Params != nil {
		t.Errorf("nil Adam's State: %+v", st)
	}
}

// TestStepErrors: gradients that do not match the parameters are errors
// that change no parameter; SetLR refuses bad learning rates.
func TestStepErrors(t *testing.T) {
	for _, kind := range []string{"SGD", "Adam"} {
		t.Run(kind, func(t *testing.T) {
			p := threeParams()
			var o Optimizer
			var err error
			if kind == "SGD" {
				o, err = NewSGD(p, SGDOpts{LR: 0.1, Momentum: 0.9})
			} else {
				o, err = NewAdam(p, DefaultAdamOpts())
			}
			if err != nil {
				t.Fatal(err)
			}
			good := []tensor.Tensor{f64([]int{2, 2}, 1, 1, 1, 1), f64([]int{3}, 1, 1, 1)}
			before := [][]float64{values(p[0]), values(p[1]), values(p[2])}
			cases := []struct {
				name  string
				grads []tensor.Tensor
				want  string
			}{
				{"too few", good, "2 gradients for 3 parameters"},
				{"too many", append(good, nil, nil), "4 gradients for 3 parameters"},
				{"shape", append(good[:1:1], f64([]int{1, 3}, 1, 1, 1), nil), "grads[1]: shape (1, 3), its parameter's (3)"},
				{"dtype", append(good, tensor.New(tensor.FromScalar(1.0))), "grads[2]: dtype float64, its parameter's float32"},
				{"int", append(good, tensor.New(tensor.FromScalar(1))), "grads[2]: dtype int"},
			}
			for _, c := range cases {
				wantErr(t, o.Step(c.grads), kind+".Step: "+c.want)
				for i, b := range before {
					if deviation(values(p[i]), b) != 0 {
						t.Fatalf("%s: a failed Step changed params[%d]", c.name, i)
					}
				}
			}
			if st := o.State(); len(st.Params) != 0 {
				t.Fatalf("failed Steps left state %v", st.Params)
			}
			for _, lr := range []float64{-1, math.NaN(), math.Inf(1)} {
				wantErr(t, o.SetLR(lr), kind+".SetLR: lr =")
			}
			if o.LR() != 0.1 && o.LR() != 1e-3 {
				t.Fatalf("LR() = %v after refused SetLRs", o.LR())
			}
		})
	}
}

// TestNilGradients: a nil gradient (also a typed nil *tensor.Dense)
// leaves its parameter and its state as they were; the others move.
func TestNilGradients(t *testing.T) {
	p := threeParams()
	o, err := NewAdam(p, DefaultAdamOpts())
	if err != nil {
		t.Fatal(err)
	}
	g := []tensor.Tensor{f64([]int{2, 2}, 1, 1, 1, 1), (*tensor.Dense)(nil), nil}
	for k := 0; k < 3; k++ {
		if err := o.Step(g); err != nil {
			t.Fatal(err)
		}
	}
	if got := values(p[1]); deviation(got, []float64{5, 6, 7}) != 0 {
		t.Fatalf("params[1] = %v, want unchanged", got)
	}
	if got := values(p[2]); got[0] != 8 {
		t.Fatalf("params[2] = %v, want unchanged", got)
	}
	if got := values(p[0]); got[0] >= 1 {
		t.Fatalf("params[0] = %v did not decrease", got)
	}
	st := o.State()
	if len(st.Params) != 1 || st.Params[0].Step != 3 {
		t.Fatalf("state %+v, want only parameter 0 after 3 steps", st.Params)
	}
}

// TestLoadStateErrors: states that do not fit the optimizer are errors
// that change nothing.
func TestLoadStateErrors(t *testing.T) {
	p := threeParams()
	adam, err := NewAdam(p, AdamOpts{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, AMSGrad: true})
	if err != nil {
		t.Fatal(err)
	}
	sgd, err := NewSGD(p, SGDOpts{LR: 0.1, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	z := func() *tensor.Dense { return f64([]int{3}, 0, 0, 0) }
	adamState := func(step int, bufs map[string]tensor.Tensor) State {
		return State{LR: 1e-3, Params: map[int]ParamState{1: {Step: step, Buffers: bufs}}}
	}
	full := map[string]tensor.Tensor{ExpAvg: z(), ExpAvgSq: z(), MaxExpAvgSq: z()}
	if err := adam.LoadState(adamState(4, full)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"adam/index", adam.LoadState(State{LR: 1, Params: map[int]ParamState{3: {Step: 1, Buffers: full}}}), "Adam.LoadState: Params[3] for 3 parameters"},
		{"adam/NaN lr", adam.LoadState(State{LR: math.NaN()}), "Adam.LoadState: lr = NaN"},
		{"adam/step 0", adam.LoadState(adamState(0, full)), "Params[1].Step = 0, want >= 1"},
		{"adam/missing", adam.LoadState(adamState(1, map[string]tensor.Tensor{ExpAvg: z(), ExpAvgSq: z()})), `Params[1] lacks buffer "max_exp_avg_sq"`},
		{"adam/unknown", adam.LoadState(adamState(1, map[string]tensor.Tensor{ExpAvg: z(), ExpAvgSq: z(), MaxExpAvgSq: z(), MomentumBuffer: z()})), `Params[1] has buffer "momentum_buffer"`},
		{"adam/shape", adam.LoadState(adamState(1, map[string]tensor.Tensor{ExpAvg: z(), ExpAvgSq: f64([]int{1, 3}, 0, 0, 0), MaxExpAvgSq: z()})), `Params[1]["exp_avg_sq"]: shape (1, 3), its parameter's (3)`},
		{"adam/dtype", adam.LoadState(adamState(1, map[string]tensor.Tensor{ExpAvg: f32([]int{3}, 0, 0, 0), ExpAvgSq: z(), MaxExpAvgSq: z()})), `Params[1]["exp_avg"]: dtype float32, its parameter's float64`},
		{"sgd/step", sgd.LoadState(State{LR: 0.1, Params: map[int]ParamState{1: {Step: 2, Buffers: map[string]tensor.Tensor{MomentumBuffer: z()}}}}), "SGD.LoadState: Params[1].Step = 2, SGD keeps no step"},
		{"sgd/adam buffers", sgd.LoadState(adamState(0, full)), `SGD.LoadState: Params[1] has buffer`},
		{"sgd/nil buffer", sgd.LoadState(State{LR: 0.1, Params: map[int]ParamState{0: {Buffers: map[string]tensor.Tensor{MomentumBuffer: nil}}}}), `Params[0] lacks buffer "momentum_buffer"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantErr(t, c.err, c.want) })
	}
	st := adam.State()
	if adam.LR() != 1e-3 || len(st.Params) != 1 || st.Params[1].Step != 4 {
		t.Fatalf("failed LoadStates changed the state: lr %v, %+v", adam.LR(), st.Params)
	}
}

// refusing is an LRSetter that refuses learning rates below min.
type refusing struct{ lr, min float64 }

func (r *refusing) LR() float64 { return r.lr }
func (r *refusing) SetLR(lr float64) error {
	if lr < r.min {
		return errors.New("too small")
	}
	r.lr = lr
	return nil
}

// TestSchedulerErrors: bad scheduler arguments are errors, and so is an
// optimizer's refusal of a learning rate, named by scheduler and epoch.
func TestSchedulerErrors(t *testing.T) {
	nan := math.NaN()
	o := testSGD(t, 0.1)
	other := testSGD(t, 0.1)
	lin, err := NewLinearLR(o, 0.5, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	step, err := NewStepLR(o, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := NewStepLR(other, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := NewSequentialLR(o, []*LRScheduler{lin, step}, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	sched := func(_ *LRScheduler, err error) error { return err }
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"steplr/nil optimizer", sched(NewStepLR(nil, 1, 0.1)), "StepLR: nil optimizer"},
		{"steplr/step size 0", sched(NewStepLR(o, 0, 0.1)), "step_size = 0"},
		{"steplr/NaN gamma", sched(NewStepLR(o, 1, nan)), "gamma = NaN"},
		{"steplr/negative gamma", sched(NewStepLR(o, 1, -0.1)), "gamma = -0.1"},
		{"multisteplr/negative milestone", sched(NewMultiStepLR(o, []int{3, -1}, 0.1)), "milestones[1] = -1"},
		{"multisteplr/Inf gamma", sched(NewMultiStepLR(o, []int{3}, math.Inf(1))), "gamma = +Inf"},
		{"linearlr/start 0", sched(NewLinearLR(o, 0, 1, 5)), "start_factor = 0"},
		{"linearlr/start 1.5", sched(NewLinearLR(o, 1.5, 1, 5)), "start_factor = 1.5"},
		{"linearlr/NaN end", sched(NewLinearLR(o, 0.5, nan, 5)), "end_factor = NaN"},
		{"linearlr/total 0", sched(NewLinearLR(o, 0.5, 1, 0)), "total_iters = 0"},
		{"cosine/T_max 0", sched(NewCosineAnnealingLR(o, 0, 0)), "T_max = 0"},
		{"cosine/negative eta_min", sched(NewCosineAnnealingLR(o, 5, -1)), "eta_min = -1"},
		{"sequential/nil optimizer", sched(NewSequentialLR(nil, []*LRScheduler{step}, nil)), "SequentialLR: nil optimizer"},
		{"sequential/none", sched(NewSequentialLR(o, nil, nil)), "no schedulers"},
		{"sequential/nil", sched(NewSequentialLR(o, []*LRScheduler{step, nil}, []int{3})), "schedulers[1] is nil"},
		{"sequential/nested", sched(NewSequentialLR(o, []*LRScheduler{seq}, nil)), "schedulers[0] is a SequentialLR"},
		{"sequential/other optimizer", sched(NewSequentialLR(o, []*LRScheduler{step, foreign}, []int{3})), "schedulers[1] drives another optimizer"},
		{"sequential/twice", sched(NewSequentialLR(o, []*LRScheduler{step, lin, step}, []int{3, 5})), "schedulers[2] is schedulers[0] again"},
		{"sequential/milestones count", sched(NewSequentialLR(o, []*LRScheduler{lin, step}, []int{3, 5})), "2 milestones for 2 schedulers, want 1"},
		{"sequential/milestones order", sched(NewSequentialLR(o, []*LRScheduler{lin, step, foreignOK(t, o)}, []int{5, 3})), "milestones [5 3]"},
		{"sequential/milestone 0", sched(NewSequentialLR(o, []*LRScheduler{lin, step}, []int{0})), "milestones [0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantErr(t, c.err, c.want) })
	}

	r := &refusing{lr: 1, min: 0.2}
	s, err := NewStepLR(r, 2, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 6; k++ {
		err = s.Step()
		if err != nil {
			break
		}
	}
	wantErr(t, err, "StepLR.Step: epoch 6: too small")
	if s.LastEpoch() != 5 || s.LastLR() != 0.25 || r.lr != 0.25 {
		t.Fatalf("after the refused step: epoch %d, LastLR %v, lr %v; want 5, 0.25, 0.25", s.LastEpoch(), s.LastLR(), r.lr)
	}
	wantErr(t, sched(NewLinearLR(r, 0.1, 1, 3)), "LinearLR.Step: epoch 0: too small")
}

// TestSequentialLRChildren: NewSequentialLR refuses a scheduler already
// stepped or already run by a SequentialLR, naming it, and on any error
// leaves the optimizer and the schedulers as they were.
func TestSequentialLRChildren(t *testing.T) {
	type children struct {
		lrs    []float64
		epochs []int
	}
	state := func(ss ...*LRScheduler) children {
		var c children
		for _, s := range ss {
			c.lrs, c.epochs = append(c.lrs, s.LastLR()), append(c.epochs, s.LastEpoch())
		}
		return c
	}
	o := testSGD(t, 1)
	stepped, err := NewLinearLR(o, 0.5, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := stepped.Step(); err != nil {
			t.Fatal(err)
		}
	}
	fresh, err := NewStepLR(o, 2, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	before, lr := state(stepped, fresh), o.LR()
	_, err = NewSequentialLR(o, []*LRScheduler{stepped, fresh}, []int{4})
	wantErr(t, err, "optim: SequentialLR: schedulers[0] (LinearLR) was already stepped 2 times; make the schedulers just before NewSequentialLR")
	_, err = NewSequentialLR(o, []*LRScheduler{fresh, stepped}, []int{4})
	wantErr(t, err, "schedulers[1] (LinearLR) was already stepped 2 times")
	if got := state(stepped, fresh); !slices.Equal(got.lrs, before.lrs) || !slices.Equal(got.epochs, before.epochs) || o.LR() != lr {
		t.Fatalf("refused NewSequentialLRs changed the schedulers %+v → %+v or the lr %v → %v", before, got, lr, o.LR())
	}

	// Children of a SequentialLR cannot join another, the first (at epoch
	// 0) nor the others.
	o = testSGD(t, 1)
	warm, err := NewLinearLR(o, 0.5, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	decay, err := NewStepLR(o, 2, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewSequentialLR(o, []*LRScheduler{warm, decay}, []int{2}); err != nil {
		t.Fatal(err)
	}
	_, err = NewSequentialLR(o, []*LRScheduler{warm}, nil)
	wantErr(t, err, "optim: SequentialLR: schedulers[0] (LinearLR) is already run by a SequentialLR")
	_, err = NewSequentialLR(o, []*LRScheduler{decay}, nil)
	wantErr(t, err, "optim: SequentialLR: schedulers[0] (StepLR) is already run by a SequentialLR")

	// The optimizer refuses the first learning rate: nothing changes, and
	// the same schedulers make a SequentialLR once it takes it.
	r := &refusing{lr: 1, min: 0.2}
	warm, err = NewLinearLR(r, 0.5, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	decay, err = NewStepLR(r, 2, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	before = state(warm, decay)
	r.min = 0.6
	_, err = NewSequentialLR(r, []*LRScheduler{warm, decay}, []int{2})
	wantErr(t, err, "optim: SequentialLR: epoch 0: too small")
	if got := state(warm, decay); !slices.Equal(got.lrs, before.lrs) || !slices.Equal(got.epochs, before.epochs) || r.lr != 0.5 {
		t.Fatalf("a refused NewSequentialLR changed the schedulers %+v → %+v or the lr 0.5 → %v", before, got, r.lr)
	}
	r.min = 0
	seq, err := NewSequentialLR(r, []*LRScheduler{warm, decay}, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	// torch 1.13 (SGD lr 1, LinearLR(0.5, 1, 2), StepLR(2, 0.1), milestone
	// 2) gives 0.5, 0.75, 1, 1, 0.1: StepLR restarts at the milestone.
	for k, want := range []float64{0.5, 0.75, 1, 1, 0.1} {
		if k > 0 {
			if err := seq.Step(); err != nil {
				t.Fatal(err)
			}
		}
		if got := seq.LastLR(); math.Abs(got-want) > 1e-15 || r.lr != got {
			t.Fatalf("epoch %d: lr %v (optimizer %v), want %v", k, got, r.lr, want)
		}
	}
}

// foreignOK is a CosineAnnealingLR on o, for a third scheduler.
func foreignOK(t *testing.T, o LRSetter) *LRScheduler {
	s, err := NewCosineAnnealingLR(o, 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFMA32 compares fma[float32] with a·b + c computed exactly (math/big) and
// rounded once to float32, on random values and on halfway cases, where
// rounding the float64 FMA to float32 rounds twice.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(0).SetFloat64(float64(a))
		x.SetPrec(200).Mul(x, new(big.Float).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	check := func(a, b, c float32) {
		if got, want := fma(a, b, c), exact(a, b, c); got != want {
			t.Fatalf("fma(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for i := 0; i < 20000; i++ {
		a, b := float32(rng.NormFloat64()), float32(rng.NormFloat64())
		c := float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(60)-30)))
		check(a, b, c)
	}
	// c = 1 + 2^-24 (float32 halfway between 1 and 1 + 2^-23 at most),
	// a·b = 2^-24 ± tiny: the double rounding cases.
	half := float32(1)
	for i := 0; i < 2000; i++ {
		a := float32(1 + float64(rng.Intn(1<<20))*math.Pow(2, -23))
		b := float32(math.Pow(2, -24) / float64(a))
		check(a, b, half)
		check(a, -b, half)
		check(a, b, math.Nextafter32(half, 2))
	}
	// overflow, and products that lose all of c
	check(math.MaxFloat32, 2, -math.MaxFloat32)
	check(3e38, 3e38, 1)
	check(1e-30, 1e-30, 1)
}

// TestPowInt compares powInt with x^n computed exactly (math/big) and
// rounded once, for the betas and gammas of the schedulers.
func TestPowInt(t *testing.T) {
	for _, x := range []float64{0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1, 1.5, 3} {
		for n := 0; n <= 5000; n += 1 + n/10 {
			e := new(big.Float).SetPrec(20000).SetFloat64(1)
			bx := new(big.Float).SetPrec(20000).SetFloat64(x)
			for k := 0; k < n; k++ {
				e.Mul(e, bx)
			}
			want, _ := e.Float64()
			if got := powInt(x, n); got != want {
				t.Fatalf("powInt(%v, %d) = %v, want %v", x, n, got, want)
			}
		}
	}
}
