package optim

import (
	"fmt"
	"math"
	"reflect"
	"sort"
)

// LRSetter is what a scheduler drives: an optimizer's learning rate
// (torch's param_groups[0]["lr"]). SGD and Adam implement it.
type LRSetter interface {
	// LR is the learning rate.
	LR() float64
	// SetLR sets the learning rate; it fails for a value the optimizer
	// does not take.
	SetLR(lr float64) error
}

// LRScheduler sets an optimizer's learning rate epoch by epoch, as the
// classes of torch.optim.lr_scheduler do (torch 1.13): NewStepLR,
// NewMultiStepLR, NewLinearLR, NewCosineAnnealingLR and NewSequentialLR
// make one. Like torch, a constructor takes the optimizer's learning rate
// as the base lr (torch's initial_lr) and performs the first step (epoch
// 0), which may already change the learning rate (LinearLR); then call
// Step once per epoch (or iteration), after the optimizer's Step. Each
// Step computes torch's chainable form (get_lr: from the optimizer's
// current learning rate), so that the values equal torch's. A nil (or
// zero) *LRScheduler has LastLR and LastEpoch 0, and its Step is an error.
type LRScheduler struct {
	name      string
	opt       LRSetter
	rule      lrRule // nil for SequentialLR
	base      float64
	lastEpoch int
	lastLR    float64
	// SequentialLR
	children   []*LRScheduler
	milestones []int
	// inSequence: a SequentialLR runs this scheduler (it cannot join
	// another).
	inSequence bool
}

// lrRule is a scheduler's learning rate at epoch e >= 0 in torch's two
// forms: chainable (get_lr, from the current lr lr) and closed
// (_get_closed_form_lr, which SequentialLR uses at its milestones).
type lrRule interface {
	chainable(e int, lr, base float64) float64
	closed(e int, base float64) float64
}

// newScheduler checks opt, takes its learning rate as the base lr and
// performs the first step, as torch's _LRScheduler.__init__.
func newScheduler(name string, opt LRSetter, rule lrRule) (*LRScheduler, error) {
	if err := checkSetter(name, opt); err != nil {
		return nil, err
	}
	s := &LRScheduler{name: name, opt: opt, rule: rule, base: opt.LR(), lastEpoch: -1}
	if err := s.step(); err != nil {
		return nil, err
	}
	return s, nil
}

// Step advances the scheduler by one epoch and sets the optimizer's
// learning rate (torch scheduler.step()). It fails if the optimizer
// refuses the new learning rate, and for a nil or zero *LRScheduler (not
// made by a constructor).
func (s *LRScheduler) Step() error {
	if s == nil {
		return fmt.Errorf("optim: LRScheduler.Step: nil scheduler")
	}
	if s.opt == nil {
		return fmt.Errorf("optim: LRScheduler.Step: a zero LRScheduler; make one with NewStepLR, NewMultiStepLR, NewLinearLR, NewCosineAnnealingLR or NewSequentialLR")
	}
	if s.children == nil {
		return s.step()
	}
	e := s.lastEpoch + 1
	idx := sort.SearchInts(s.milestones, e+1) // bisect_right(milestones, e)
	c := s.children[idx]
	var err error
	if idx > 0 && s.milestones[idx-1] == e {
		err = c.stepTo(0)
	} else {
		err = c.step()
	}
	if err != nil {
		return err
	}
	s.lastEpoch, s.lastLR = e, c.lastLR
	return nil
}

// LastLR is the learning rate the last step set (torch get_last_lr()[0]);
// 0 for a nil scheduler.
func (s *LRScheduler) LastLR() float64 {
	if s == nil {
		return 0
	}
	return s.lastLR
}

// LastEpoch is the number of Steps since construction (torch last_epoch:
// 0 after the constructor's step); 0 for a nil scheduler.
func (s *LRScheduler) LastEpoch() int {
	if s == nil {
		return 0
	}
	return s.lastEpoch
}

// step is torch's step(): the next epoch's chainable form.
func (s *LRScheduler) step() error {
	e := s.lastEpoch + 1
	return s.set(e, s.rule.chainable(e, s.opt.LR(), s.base))
}

// stepTo is torch's step(epoch): epoch e's closed form.
func (s *LRScheduler) stepTo(e int) error {
	return s.set(e, s.rule.closed(e, s.base))
}

func (s *LRScheduler) set(e int, lr float64) error {
	if err := s.opt.SetLR(lr); err != nil {
		return fmt.Errorf("optim: %s.Step: epoch %d: %w", s.name, e, err)
	}
	s.lastEpoch, s.lastLR = e, s.opt.LR()
	return nil
}

// NewStepLR multiplies the learning rate by gamma every stepSize epochs
// (torch.optim.lr_scheduler.StepLR(optimizer, step_size, gamma); torch's
// default gamma is 0.1): lr = base·gamma^⌊epoch/stepSize⌋. It fails for
// stepSize < 1 and a negative, infinite or NaN gamma.
func NewStepLR(opt LRSetter, stepSize int, gamma float64) (*LRScheduler, error) {
	if stepSize < 1 {
		return nil, fmt.Errorf("optim: StepLR: step_size = %d, want >= 1", stepSize)
	}
	if err := checkNonNegative("StepLR", "gamma", gamma); err != nil {
		return nil, err
	}
	return newScheduler("StepLR", opt, stepRule{stepSize, gamma})
}

type stepRule struct {
	stepSize int
	gamma    float64
}

func (r stepRule) chainable(e int, lr, _ float64) float64 {
	if e == 0 || e%r.stepSize != 0 {
		return lr
	}
	return lr * r.gamma
}

func (r stepRule) closed(e int, base float64) float64 {
	return base * powInt(r.gamma, e/r.stepSize)
}

// NewMultiStepLR multiplies the learning rate by gamma at each milestone
// epoch (torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones,
// gamma); torch's default gamma is 0.1): lr = base·gamma^(number of
// milestones <= epoch). Milestones may come in any order; one listed k
// times multiplies by gamma^k, as torch's Counter does. It fails for a
// negative milestone and a negative, infinite or NaN gamma.
func NewMultiStepLR(opt LRSetter, milestones []int, gamma float64) (*LRScheduler, error) {
	if err := checkNonNegative("MultiStepLR", "gamma", gamma); err != nil {
		return nil, err
	}
	r := multiStepRule{counts: map[int]int{}, sorted: append([]int(nil), milestones...), gamma: gamma}
	for i, m := range milestones {
		if m < 0 {
			return nil, fmt.Errorf("optim: MultiStepLR: milestones[%d] = %d, want >= 0", i, m)
		}
		r.counts[m]++
	}
	sort.Ints(r.sorted)
	return newScheduler("MultiStepLR", opt, r)
}

type multiStepRule struct {
	counts map[int]int
	sorted []int
	gamma  float64
}

func (r multiStepRule) chainable(e int, lr, _ float64) float64 {
	k := r.counts[e]
	if k == 0 {
		return lr
	}
	return lr * powInt(r.gamma, k)
}

func (r multiStepRule) closed(e int, base float64) float64 {
	return base * powInt(r.gamma, sort.SearchInts(r.sorted, e+1))
}

// NewLinearLR scales the learning rate by a factor that goes linearly from
// startFactor at epoch 0 to endFactor at epoch totalIters and stays there
// (torch.optim.lr_scheduler.LinearLR(optimizer, start_factor, end_factor,
// total_iters); torch's defaults 1/3, 1.0, 5): the linear warm-up. The
// constructor already sets base·startFactor. It fails for startFactor
// outside (0, 1] (torch 1.13 takes 0 and then divides by zero at the
// first step), endFactor outside [0, 1] or totalIters < 1.
func NewLinearLR(opt LRSetter, startFactor, endFactor float64, totalIters int) (*LRScheduler, error) {
	if !(startFactor > 0 && startFactor <= 1) {
		return nil, fmt.Errorf("optim: LinearLR: start_factor = %v, want a value in (0, 1]", startFactor)
	}
	if !(endFactor >= 0 && endFactor <= 1) {
		return nil, fmt.Errorf("optim: LinearLR: end_factor = %v, want a value in [0, 1]", endFactor)
	}
	if totalIters < 1 {
		return nil, fmt.Errorf("optim: LinearLR: total_iters = %d, want >= 1", totalIters)
	}
	return newScheduler("LinearLR", opt, linearRule{startFactor, endFactor, totalIters})
}

type linearRule struct {
	start, end float64
	total      int
}

func (r linearRule) chainable(e int, lr, _ float64) float64 {
	if e == 0 {
		return lr * r.start
	}
	if e > r.total {
		return lr
	}
	d := r.end - r.start
	return lr * (1 + d/(float64(float64(r.total)*r.start)+float64(float64(e-1)*d)))
}

func (r linearRule) closed(e int, base float64) float64 {
	return base * (r.start + (r.end-r.start)*float64(min(r.total, e))/float64(r.total))
}

// NewCosineAnnealingLR anneals the learning rate from the base lr to
// etaMin along a half cosine over tMax epochs (then back up, periodically)
// (torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max, eta_min);
// torch's default eta_min is 0): lr = etaMin + (base − etaMin)·(1 +
// cos(π·epoch/tMax))/2, computed by torch's recursive form. It fails for
// tMax < 1 and a negative, infinite or NaN etaMin.
func NewCosineAnnealingLR(opt LRSetter, tMax int, etaMin float64) (*LRScheduler, error) {
	if tMax < 1 {
		return nil, fmt.Errorf("optim: CosineAnnealingLR: T_max = %d, want >= 1", tMax)
	}
	if err := checkNonNegative("CosineAnnealingLR", "eta_min", etaMin); err != nil {
		return nil, err
	}
	return newScheduler("CosineAnnealingLR", opt, cosineRule{tMax, etaMin})
}

type cosineRule struct {
	tMax   int
	etaMin float64
}

// chainable is torch's get_lr (its branch for resuming with last_epoch >
// 0 at the first step cannot occur: schedulers here always start at -1).
func (r cosineRule) chainable(e int, lr, base float64) float64 {
	t := float64(r.tMax)
	if e == 0 {
		return lr
	}
	if m := (e - 1 - r.tMax) % (2 * r.tMax); m == 0 { // Python's % is 0 where Go's is
		return lr + (base-r.etaMin)*(1-math.Cos(math.Pi/t))/2
	}
	q := (1 + math.Cos(math.Pi*float64(e)/t)) / (1 + math.Cos(math.Pi*float64(e-1)/t))
	return float64(q*(lr-r.etaMin)) + r.etaMin
}

func (r cosineRule) closed(e int, base float64) float64 {
	return r.etaMin + (base-r.etaMin)*(1+math.Cos(math.Pi*float64(e)/float64(r.tMax)))/2
}

// NewSequentialLR runs schedulers one after another, switching from
// schedulers[i] to schedulers[i+1] at epoch milestones[i]
// (torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers,
// milestones)): e.g. NewLinearLR (warm-up) then NewMultiStepLR (decay),
// the detection models' recipe. As in torch, the schedulers must have
// been made on opt, in order, just before (they all take the first one's
// base lr, torch's initial_lr); construction resets the learning rate to
// that base lr and redoes the first scheduler's first step; at a
// milestone the next scheduler restarts at its epoch 0 (its closed form),
// so its own epochs (a MultiStepLR's milestones) count from there. The
// schedulers then belong to the SequentialLR: do not Step them yourself.
// It fails for a nil optimizer, no schedulers, a nil one, a SequentialLR
// among them, one listed twice, driving another optimizer, already
// stepped (LastEpoch != 0; torch takes it and starts off its schedule) or
// already run by a SequentialLR, len(milestones) != len(schedulers) − 1,
// milestones that are not increasing or < 1, and the optimizer's refusal
// of the first learning rate. On an error the optimizer and the
// schedulers are left as they were.
func NewSequentialLR(opt LRSetter, schedulers []*LRScheduler, milestones []int) (*LRScheduler, error) {
	const who = "SequentialLR"
	if err := checkSetter(who, opt); err != nil {
		return nil, err
	}
	if len(schedulers) == 0 {
		return nil, fmt.Errorf("optim: %s: no schedulers", who)
	}
	for i, c := range schedulers {
		switch {
		case c == nil:
			return nil, fmt.Errorf("optim: %s: schedulers[%d] is nil", who, i)
		case c.children != nil:
			return nil, fmt.Errorf("optim: %s: schedulers[%d] is a SequentialLR", who, i)
		case c.opt == nil:
			return nil, fmt.Errorf("optim: %s: schedulers[%d] is a zero LRScheduler", who, i)
		case !sameSetter(c.opt, opt):
			return nil, fmt.Errorf("optim: %s: schedulers[%d] drives another optimizer", who, i)
		}
		for j := 0; j < i; j++ {
			if schedulers[j] == c {
				return nil, fmt.Errorf("optim: %s: schedulers[%d] is schedulers[%d] again", who, i, j)
			}
		}
	}
	if len(milestones) != len(schedulers)-1 {
		return nil, fmt.Errorf("optim: %s: %d milestones for %d schedulers, want %d", who, len(milestones), len(schedulers), len(schedulers)-1)
	}
	for i, m := range milestones {
		if m < 1 || i > 0 && m <= milestones[i-1] {
			return nil, fmt.Errorf("optim: %s: milestones %v, want increasing values >= 1", who, milestones)
		}
	}
	for i, c := range schedulers {
		switch {
		case c.inSequence:
			return nil, fmt.Errorf("optim: %s: schedulers[%d] (%s) is already run by a SequentialLR", who, i, c.name)
		case c.lastEpoch != 0:
			return nil, fmt.Errorf("optim: %s: schedulers[%d] (%s) was already stepped %d times; make the schedulers just before NewSequentialLR", who, i, c.name, c.lastEpoch)
		}
	}
	// torch resets the lr to initial_lr, then redoes the first scheduler's
	// step 0 from there: one SetLR, before anything changes.
	first, initial := schedulers[0], schedulers[0].base
	if err := opt.SetLR(first.rule.chainable(0, initial, initial)); err != nil {
		return nil, fmt.Errorf("optim: %s: epoch 0: %w", who, err)
	}
	for _, c := range schedulers {
		c.base, c.lastEpoch, c.inSequence = initial, -1, true
	}
	first.lastEpoch, first.lastLR = 0, opt.LR()
	return &LRScheduler{name: who, opt: opt, base: initial, lastEpoch: 0, lastLR: first.lastLR,
		children: append([]*LRScheduler(nil), schedulers...), milestones: append([]int(nil), milestones...)}, nil
}

// checkSetter fails for a nil optimizer, also a typed nil ((*SGD)(nil) as
// an LRSetter is not == nil).
func checkSetter(who string, opt LRSetter) error {
	if opt == nil {
		return fmt.Errorf("optim: %s: nil optimizer", who)
	}
	switch v := reflect.ValueOf(opt); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		if v.IsNil() {
			return fmt.Errorf("optim: %s: nil optimizer (a nil %T)", who, opt)
		}
	}
	return nil
}

// sameSetter says whether a and b are the same optimizer (false where
// their type cannot be compared).
func sameSetter(a, b LRSetter) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}
