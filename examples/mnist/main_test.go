package main

import (
	"strings"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/datasets/mnist"
	"github.com/gops-dev/gops/nn"
	"github.com/gops-dev/gops/optim"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A short run (200 batches of 64, a fifth of an epoch) already classifies
// most of the test split: the training graph, Adam and the evaluation
// graph share one parameter set (the full default run reaches ~98%).
func TestTrainShort(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	var lines []string
	acc, err := Train(Config{Epochs: 1, Batch: 64, LR: 1e-3, Seed: 1, Limit: 200}, func(s string) { lines = append(lines, s) })
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.9 {
		t.Errorf("test accuracy %.4f after 200 batches, want ≥ 0.9", acc)
	}
	if len(lines) == 0 || !strings.Contains(lines[0], "mean cost") {
		t.Errorf("progress lines %q", lines)
	}
}

// The penalised cost's gradient agrees with central differences along a
// random direction at orders 1 and 2, and an untrained network's accuracy
// is chance: the check and the evaluator measure something.
func TestCheckPenaltyAndChance(t *testing.T) {
	rep, err := CheckPenalty(0.1, 1)
	if err != nil {
		t.Fatalf("%v\n%s", err, rep)
	}
	if !strings.Contains(rep, "order 2") {
		t.Errorf("report without order 2:\n%s", rep)
	}
	p, err := NewParams(tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := Accuracy(p)
	if err != nil {
		t.Fatal(err)
	}
	if acc > 0.3 {
		t.Errorf("untrained accuracy %.4f, want about 0.1", acc)
	}
}

// The training graph's parameter gradients change when the penalty is on
// (the penalty reaches every parameter through the second derivative).
func TestPenaltyChangesGradients(t *testing.T) {
	grads := func(r1 float64) [][]float64 {
		p, err := NewParams(tensor.Float64, 2)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewStep(p, 2, r1)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, 2*28*28)
		for i := range x {
			x[i] = float64(i%17) / 17
		}
		if err := letAll(s.X, tensor.New(tensor.WithShape(2, 1, 28, 28), tensor.WithBacking(x)), s.Y, tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{7, 2}))); err != nil {
			t.Fatal(err)
		}
		m := gorgonia.NewTapeMachine(s.Cost.Graph())
		defer m.Close()
		if err := ad.RunAll(m); err != nil {
			t.Fatal(err)
		}
		var out [][]float64
		for _, g := range s.Grads.Values() {
			out = append(out, append([]float64(nil), g.Data().([]float64)...))
		}
		return out
	}
	plain, pen := grads(0), grads(10)
	for i := range plain {
		same := true
		for j := range plain[i] {
			same = same && plain[i][j] == pen[i][j]
		}
		if same {
			t.Errorf("gradient %d is the same with and without the penalty", i)
		}
	}
}

// BenchmarkStep times one training step at batch 64, float32: the
// machine's run (forward and gradients; with r1 also the penalty's second
// derivatives) and Adam's update, as scripts/mnist_torch.py times torch's
// zero_grad, forward, backward and step.
func BenchmarkStep(b *testing.B) {
	for _, r1 := range []float64{0, 0.1} {
		name := "plain"
		if r1 > 0 {
			name = "r1"
		}
		b.Run(name, func(b *testing.B) {
			p, err := NewParams(tensor.Float32, 1)
			if err != nil {
				b.Fatal(err)
			}
			s, err := NewStep(p, 64, r1)
			if err != nil {
				b.Fatal(err)
			}
			d, err := mnist.Load("", false)
			if err != nil {
				b.Fatal(err)
			}
			l, err := mnist.NewLoader(d, mnist.LoaderOpts{BatchSize: 64, Transform: mnist.Transform{Normalize: true, Mean: mnist.Mean, Std: mnist.Std}})
			if err != nil {
				b.Fatal(err)
			}
			for x, y := range l.Epoch() {
				if err := letAll(s.X, x, s.Y, y); err != nil {
					b.Fatal(err)
				}
				break
			}
			m := gorgonia.NewTapeMachine(s.Cost.Graph())
			defer m.Close()
			opt, err := optim.NewAdam(p.Values(), optim.DefaultAdamOpts())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				m.Reset()
				if err := ad.RunAll(m); err != nil {
					b.Fatal(err)
				}
				if err := opt.Step(s.Grads.Values()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var _ nn.Model = Model // the network is an nn.Model
