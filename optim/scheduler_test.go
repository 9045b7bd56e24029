package optim

import (
	"math"
	"testing"

	"gorgonia.org/tensor"
)

// goldenSchedulers builds the scheduler of each golden case on opt, as
// scripts/gen_optim_golden.py's SCHEDULERS do.
var goldenSchedulers = map[string]func(opt LRSetter) (*LRScheduler, error){
	"steplr/3/0.5": func(o LRSetter) (*LRScheduler, error) { return NewStepLR(o, 3, 0.5) },
	"steplr/7/0.1": func(o LRSetter) (*LRScheduler, error) { return NewStepLR(o, 7, 0.1) },
	"multisteplr/5,9,9,14/0.1": func(o LRSetter) (*LRScheduler, error) {
		return NewMultiStepLR(o, []int{5, 9, 9, 14}, 0.1)
	},
	"multisteplr/20,4/0.3": func(o LRSetter) (*LRScheduler, error) { return NewMultiStepLR(o, []int{20, 4}, 0.3) },
	"linearlr/default":     func(o LRSetter) (*LRScheduler, error) { return NewLinearLR(o, 1.0/3, 1, 5) },
	"linearlr/0.001,1,10":  func(o LRSetter) (*LRScheduler, error) { return NewLinearLR(o, 0.001, 1, 10) },
	"linearlr/0.9,0.2,7":   func(o LRSetter) (*LRScheduler, error) { return NewLinearLR(o, 0.9, 0.2, 7) },
	"cosine/10/0":          func(o LRSetter) (*LRScheduler, error) { return NewCosineAnnealingLR(o, 10, 0) },
	"cosine/7/0.003":       func(o LRSetter) (*LRScheduler, error) { return NewCosineAnnealingLR(o, 7, 0.003) },
	"sequential/warmup5+multistep8,16": func(o LRSetter) (*LRScheduler, error) {
		return sequential(o, []int{5},
			func() (*LRScheduler, error) { return NewLinearLR(o, 0.001, 1, 5) },
			func() (*LRScheduler, error) { return NewMultiStepLR(o, []int{8, 16}, 0.1) })
	},
	"sequential/warmup4+cosine20": func(o LRSetter) (*LRScheduler, error) {
		return sequential(o, []int{4},
			func() (*LRScheduler, error) { return NewLinearLR(o, 0.25, 1, 4) },
			func() (*LRScheduler, error) { return NewCosineAnnealingLR(o, 20, 0.001) })
	},
	"sequential/linear3+step4+cosine6": func(o LRSetter) (*LRScheduler, error) {
		return sequential(o, []int{3, 12},
			func() (*LRScheduler, error) { return NewLinearLR(o, 0.5, 1, 3) },
			func() (*LRScheduler, error) { return NewStepLR(o, 4, 0.5) },
			func() (*LRScheduler, error) { return NewCosineAnnealingLR(o, 6, 0) })
	},
}

// sequential makes the schedulers in order, then a SequentialLR of them.
func sequential(o LRSetter, milestones []int, makes ...func() (*LRScheduler, error)) (*LRScheduler, error) {
	var ss []*LRScheduler
	for _, m := range makes {
		s, err := m()
		if err != nil {
			return nil, err
		}
		ss = append(ss, s)
	}
	return NewSequentialLR(o, ss, milestones)
}

// testSGD is an SGD over one float64 parameter with learning rate lr.
func testSGD(t testing.TB, lr float64) *SGD {
	t.Helper()
	p := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{0}))
	o, err := NewSGD([]tensor.Tensor{p}, SGDOpts{LR: lr})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestSchedulersGolden compares each scheduler's learning rate after
// construction and after each step with torch's get_last_lr(), and the
// optimizer's learning rate with it.
func TestSchedulersGolden(t *testing.T) {
	d := loadGolden(t)
	for _, c := range d.Schedulers {
		t.Run(c.Name, func(t *testing.T) {
			mk, ok := goldenSchedulers[c.Name]
			if !ok {
				t.Fatalf("no scheduler for %q", c.Name)
			}
			o := testSGD(t, c.LR)
			s, err := mk(o)
			if err != nil {
				t.Fatal(err)
			}
			dev := 0.0
			for k, want := range c.LRs {
				if k > 0 {
					if err := s.Step(); err != nil {
						t.Fatal(err)
					}
				}
				if s.LastEpoch() != k {
					t.Fatalf("step %d: LastEpoch() = %d", k, s.LastEpoch())
				}
				got := s.LastLR()
				if o.LR() != got {
					t.Fatalf("step %d: optimizer lr %v, LastLR %v", k, o.LR(), got)
				}
				e := math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
				if !(e <= 1e-12) {
					t.Fatalf("step %d: lr %.17g, torch %.17g (relative %.3g)", k, got, want, e)
				}
				dev = math.Max(dev, e)
			}
			t.Logf("largest relative deviation %.3g over %d values", dev, len(c.LRs))
		})
	}
}
