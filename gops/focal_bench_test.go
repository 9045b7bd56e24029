package gops_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkSigmoidFocalLoss times RetinaNet's classification loss at the
// size of its training step at 256 × 256 (scripts/bench_torchvision.py's
// SigmoidFocalLoss rows): logits [2, 12276, 91] (9 anchors on 1364
// positions of five levels, 91 classes), targets 0 but one class of one
// anchor in 100, α 0.25, γ 2, float32; forward, the loss weighted per
// element and summed (sum(l ⊙ w)), and forward+backward, its gradient
// w.r.t. the logits (as loss.backward()), with ad.ReuseResults on (as
// detection's Trainer).
func BenchmarkSigmoidFocalLoss(b *testing.B) {
	for _, backward := range []bool{false, true} {
		name := "forward"
		if backward {
			name = "forward+backward"
		}
		b.Run(name, func(b *testing.B) {
			shape := []int{2, 12276, 91}
			n := tensor.Shape(shape).TotalSize()
			r := rand.New(rand.NewPCG(1, 2))
			x, t, w := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 3)
				w[i] = 1
			}
			for a := 0; a < n/91; a += 100 {
				t[a*91+r.IntN(91)] = 1
			}
			g := gorgonia.NewGraph()
			ad.ReuseResults(g, true) // as detection's Trainer
			in := func(name string, v []float32) *gorgonia.Node {
				return gorgonia.NewTensor(g, tensor.Float32, 3, gorgonia.WithShape(shape...), gorgonia.WithName(name),
					gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))))
			}
			xn, tn, wn := in("x", x), in("t", t), in("w", w)
			l, err := gops.SigmoidFocalLoss(xn, tn, 0.25, 2, ad.ReductionNone)
			if err != nil {
				b.Fatal(err)
			}
			p, err := gorgonia.HadamardProd(l, wn)
			if err != nil {
				b.Fatal(err)
			}
			cost, err := gorgonia.Sum(p)
			if err != nil {
				b.Fatal(err)
			}
			if backward {
				if _, err := ad.Grad(cost, xn); err != nil {
					b.Fatal(err)
				}
			}
			m, err := ad.NewTapeMachine(g)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			timeVM(b, m)
		})
	}
}
