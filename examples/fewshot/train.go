package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gops-dev/gops/datasets/mnist/scenes"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/tensor"
)

// BaseClasses are the digits the detector is pre-trained and meta-trained
// on; NovelClasses those of the few-shot tasks.
var (
	BaseClasses  = []int{0, 1, 2, 3, 4, 5}
	NovelClasses = []int{6, 7, 8, 9}
)

// Pretrain trains m on scenes of the base digits of train (c.Batch
// canvases of c.Scene.PerCanvas digits a step, each labelled by its digit)
// for c.Steps steps with torchvision's detection recipe: SGD with momentum
// 0.9 and weight decay 1e-4, a linear warm-up from 0.001·LR over
// c.Warmup steps, and the rate divided by 10 at 2/3 and 8/9 of the run.
// It reports the mean loss every c.Every steps and returns the mean loss
// of the first and the last c.Every steps.
func Pretrain(c Config, m *Model, train *scenes.Digits, rng *rand.Rand, report func(string)) (first, last float64, err error) {
	lg, err := NewLossGraph(m, c.Batch, c.Scene.Canvas, c.Scene.PerCanvas)
	if err != nil {
		return 0, 0, err
	}
	defer lg.Close()
	sgd, err := optim.NewSGD(m.Weights().Params.Values(), optim.SGDOpts{LR: c.LR, Momentum: 0.9, WeightDecay: 1e-4})
	if err != nil {
		return 0, 0, err
	}
	warm, err := optim.NewLinearLR(sgd, 0.001, 1, max(c.Warmup, 1))
	if err != nil {
		return 0, 0, err
	}
	decay, err := optim.NewMultiStepLR(sgd, []int{c.Steps * 2 / 3, c.Steps * 8 / 9}, 0.1)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	every := max(c.Every, 1)
	sum, n := 0.0, 0
	for step := 1; step <= c.Steps; step++ {
		sc, err := scenes.SampleScene(rng, train, BaseClasses, c.Batch*c.Scene.PerCanvas, c.Scene)
		if err != nil {
			return 0, 0, err
		}
		loss, err := lg.Run(sc, byDigit(sc))
		if err != nil {
			return 0, 0, err
		}
		if err := sgd.Step(lg.Grads()); err != nil {
			return 0, 0, err
		}
		if err := warm.Step(); err != nil {
			return 0, 0, err
		}
		if err := decay.Step(); err != nil {
			return 0, 0, err
		}
		sum += loss
		n++
		if n == every || step == c.Steps {
			mean := sum / float64(n)
			if first == 0 {
				first = mean
			}
			last = mean
			report(fmt.Sprintf("pre-train step %4d/%d  loss %.3f  lr %.4f  %5.1fs", step, c.Steps, mean, sgd.LR(), time.Since(start).Seconds()))
			sum, n = 0, 0
		}
	}
	return first, last, nil
}

// snapshot is a copy of the detector's trainable weights, by name.
type snapshot map[string]tensor.Tensor

// save copies m's trainable weights.
func save(m *Model) snapshot { return m.Weights().Params.StateDict() }

// restore copies s into m's trainable weights.
func restore(m *Model, s snapshot) error {
	_, _, err := m.Weights().Params.LoadStateDict(s, true)
	return err
}
