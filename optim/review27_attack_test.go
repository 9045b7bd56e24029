package optim_test

// Review 27 attacks on package optim. A failure is a finding in
// /work/wt/notes-review27.md.

import (
	"math"
	"strings"
	"testing"

	"github.com/gops-dev/gops/optim"
	"gorgonia.org/tensor"
)

func r27vec(vals ...float64) *tensor.Dense {
	return tensor.New(tensor.WithShape(len(vals)), tensor.WithBacking(append([]float64(nil), vals...)))
}

func r27try(t *testing.T, what string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panic: %v", what, r)
			err = nil
		}
	}()
	return f()
}

// Typed nil optimizers: a nil *SGD passed where an LRSetter is wanted gets
// past the scheduler's nil check and panics inside; methods on a nil
// receiver panic too, where Params' methods return errors.
func TestReview27NilOptimizer(t *testing.T) {
	var sgd *optim.SGD
	var adam *optim.Adam
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"NewStepLR(typed nil *SGD)", func() error { _, err := optim.NewStepLR(sgd, 1, 0.5); return err }},
		{"NewCosineAnnealingLR(typed nil *Adam)", func() error { _, err := optim.NewCosineAnnealingLR(adam, 3, 0); return err }},
		{"(*SGD)(nil).Step", func() error { return sgd.Step([]tensor.Tensor{nil}) }},
		{"(*Adam)(nil).SetLR", func() error { return adam.SetLR(0.1) }},
		{"(*Adam)(nil).LoadState", func() error { return adam.LoadState(optim.State{LR: 1}) }},
	} {
		err := r27try(t, c.name, c.f)
		t.Logf("%s: %v", c.name, err)
	}
	var s *optim.LRScheduler
	r27try(t, "(*LRScheduler)(nil).Step", func() error { return s.Step() })
}

// A 0-d parameter (torch has them: nn.Parameter(torch.tensor(1.))): is it
// updated, or silently skipped because its shape's TotalSize is 0?
func TestReview27ScalarParam(t *testing.T) {
	p := tensor.New(tensor.FromScalar(1.0))
	g := tensor.New(tensor.FromScalar(1.0))
	opt, err := optim.NewSGD([]tensor.Tensor{p}, optim.SGDOpts{LR: 0.5})
	if err != nil {
		t.Logf("NewSGD on a 0-d parameter: %v", err)
		return
	}
	if err := r27try(t, "Step", func() error { return opt.Step([]tensor.Tensor{g}) }); err != nil {
		t.Logf("Step: %v", err)
		return
	}
	if v := p.Data().(float64); v != 0.5 {
		t.Errorf("SGD on a 0-d parameter: p = %v after one step of lr 0.5 with g = 1, want 0.5 (silently skipped)", v)
	}
}

// NaN/Inf gradients are taken silently (as torch does); a parameter goes
// NaN with no error. Not a defect against torch, logged for the notes.
func TestReview27NaNGradient(t *testing.T) {
	p := r27vec(1, 2)
	opt, err := optim.NewAdam([]tensor.Tensor{p}, optim.DefaultAdamOpts())
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Step([]tensor.Tensor{r27vec(math.NaN(), math.Inf(1))}); err != nil {
		t.Logf("NaN gradient: %v", err)
		return
	}
	t.Logf("Adam with a NaN/Inf gradient: no error, p = %v", p.Data())
}

// Hyper-parameter edge values: every bad one must name the argument.
func TestReview27HyperParams(t *testing.T) {
	ps := func() []tensor.Tensor { return []tensor.Tensor{r27vec(1, 2)} }
	for _, c := range []struct {
		name string
		f    func() error
		want string
	}{
		{"SGD lr NaN", func() error { _, err := optim.NewSGD(ps(), optim.SGDOpts{LR: math.NaN()}); return err }, "lr"},
		{"SGD momentum +Inf", func() error { _, err := optim.NewSGD(ps(), optim.SGDOpts{LR: 1, Momentum: math.Inf(1)}); return err }, "momentum"},
		{"SGD dampening NaN", func() error { _, err := optim.NewSGD(ps(), optim.SGDOpts{LR: 1, Dampening: math.NaN()}); return err }, "dampening"},
		{"Adam eps NaN", func() error {
			o := optim.DefaultAdamOpts()
			o.Eps = math.NaN()
			_, err := optim.NewAdam(ps(), o)
			return err
		}, "eps"},
		{"Adam beta2 1", func() error {
			o := optim.DefaultAdamOpts()
			o.Beta2 = 1
			_, err := optim.NewAdam(ps(), o)
			return err
		}, "betas[1]"},
		{"Adam zero opts (no betas)", func() error { _, err := optim.NewAdam(ps(), optim.AdamOpts{LR: 1e-3}); return err }, ""},
		{"no params", func() error { _, err := optim.NewSGD(nil, optim.SGDOpts{LR: 1}); return err }, "no parameters"},
		{"int param", func() error {
			_, err := optim.NewSGD([]tensor.Tensor{tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2}))}, optim.SGDOpts{LR: 1})
			return err
		}, "params[0]"},
		{"StepLR gamma NaN", func() error {
			o, _ := optim.NewSGD(ps(), optim.SGDOpts{LR: 1})
			_, err := optim.NewStepLR(o, 1, math.NaN())
			return err
		}, "gamma"},
		{"LinearLR start 0", func() error {
			o, _ := optim.NewSGD(ps(), optim.SGDOpts{LR: 1})
			_, err := optim.NewLinearLR(o, 0, 1, 3)
			return err
		}, "start_factor"},
		{"Cosine eta_min > lr", func() error {
			o, _ := optim.NewSGD(ps(), optim.SGDOpts{LR: 0.1})
			_, err := optim.NewCosineAnnealingLR(o, 3, 1)
			return err
		}, ""},
	} {
		err := r27try(t, c.name, c.f)
		t.Logf("%s: %v", c.name, err)
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// Zero AdamOpts: NewAdam(params, AdamOpts{LR: 1e-3}) is Beta1 = Beta2 = 0,
// Eps = 0: accepted (valid for torch too), and the first step with a zero
// gradient element divides 0 by 0.
func TestReview27AdamZeroOptsNaN(t *testing.T) {
	p := r27vec(1, 2)
	opt, err := optim.NewAdam([]tensor.Tensor{p}, optim.AdamOpts{LR: 1e-3})
	if err != nil {
		return
	}
	if err := opt.Step([]tensor.Tensor{r27vec(0, 1)}); err != nil {
		t.Fatal(err)
	}
	if v := p.Float64s()[0]; math.IsNaN(v) {
		t.Errorf("AdamOpts{LR: 1e-3} (a user who skipped DefaultAdamOpts) is accepted and turns a zero-gradient parameter into NaN on the first step")
	}
}

// Gradient slices shorter and longer, a gradient of another shape of the
// same size ([2] vs [1, 2]), a gradient that is the parameter itself.
func TestReview27GradSlices(t *testing.T) {
	p := r27vec(1, 2)
	opt, err := optim.NewSGD([]tensor.Tensor{p}, optim.SGDOpts{LR: 0.5, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		grads []tensor.Tensor
		want  string
	}{
		{"none", nil, "0 gradients for 1 parameters"},
		{"two", []tensor.Tensor{r27vec(1, 1), r27vec(1, 1)}, "2 gradients"},
		{"[1, 2]", []tensor.Tensor{tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float64{1, 1}))}, "shape"},
		{"float32", []tensor.Tensor{tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 1}))}, "dtype"},
	} {
		err := r27try(t, c.name, func() error { return opt.Step(c.grads) })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if got := p.Float64s(); got[0] != 1 || got[1] != 2 {
		t.Errorf("failed steps changed p: %v", got)
	}
	// The parameter as its own gradient: torch computes p − lr·p.
	if err := opt.Step([]tensor.Tensor{p}); err != nil {
		t.Fatal(err)
	}
	if got := p.Float64s(); got[0] != 0.5 || got[1] != 1 {
		t.Errorf("p as its own gradient: %v, want [0.5 1]", got)
	}
}

// SequentialLR over schedulers not made "just before" (the first already
// stepped twice): accepted, and the epochs are off.
func TestReview27SequentialStaleChild(t *testing.T) {
	o, _ := optim.NewSGD([]tensor.Tensor{r27vec(1)}, optim.SGDOpts{LR: 1})
	warm, _ := optim.NewLinearLR(o, 0.5, 1, 4)
	_ = warm.Step()
	_ = warm.Step()
	decay, _ := optim.NewStepLR(o, 2, 0.1)
	seq, err := optim.NewSequentialLR(o, []*optim.LRScheduler{warm, decay}, []int{4})
	if err != nil {
		t.Logf("stale child refused: %v", err)
		return
	}
	t.Logf("SequentialLR over a LinearLR stepped twice: accepted, epoch %d, lr %v (a fresh one: 0.5)", seq.LastEpoch(), o.LR())
	if o.LR() != 0.5 {
		t.Errorf("SequentialLR over a child already stepped: lr %v at epoch 0, want 0.5 or an error", o.LR())
	}
}
