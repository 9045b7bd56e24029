package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// poisonNet is a graph through the ops whose kernels overwrite their
// results under ad.ReuseResults (KernelOverwrites): Conv2d with bias and
// groups, a pointwise Conv2d, ConvTranspose2d with bias (BiasAdd), MatMul,
// Tanh; its loss's gradient w.r.t. x and the weights (the weight
// gradient, ChannelSum) and a gradient penalty's gradient (ChannelSum's
// transpose ChannelBroadcast, Conv2d's second-order members).
func poisonNet(t *testing.T, dt tensor.Dtype) (*gorgonia.ExprGraph, *gorgonia.Node, []*gorgonia.Value) {
	t.Helper()
	g := gorgonia.NewGraph()
	node := randNodes(g, dt, rand.New(rand.NewPCG(6, 1)))
	must := mustNode(t)
	x := node("x", 0.4, 3, 4, 9, 8)
	w1, b1 := node("w1", 0.4, 6, 2, 3, 3), node("b1", 0.4, 6)
	w2 := node("w2", 0.4, 4, 6, 1, 1)
	wt, bt := node("wt", 0.4, 4, 3, 2, 2), node("bt", 0.4, 3)
	fc := node("fc", 0.4, 5, 3*10*8)
	h := must(nn.Conv2d(x, w1, b1, nn.Conv2dOpts{Padding: [2]int{1, 2}, Dilation: [2]int{1, 2}, Groups: 2}))
	h = must(nn.Tanh(h))
	h = must(nn.Conv2d(h, w2, nil, nn.Conv2dOpts{Stride: [2]int{2, 2}}))
	h = must(nn.ConvTranspose2d(h, wt, bt, nn.ConvTranspose2dOpts{Stride: [2]int{2, 2}}))
	logits := must(nn.MatMul(must(nn.Flatten(h, 1)), fc, false, true))
	loss := must(gorgonia.Sum(must(gorgonia.Square(must(nn.Tanh(logits))))))
	weights := gorgonia.Nodes{w1, b1, w2, wt, bt, fc}
	return g, x, readWithPenalty(t, loss, x, weights, h, logits, loss)
}

// TestReuseResultsOverwrite: with ad.ReuseResults on, runs on an input
// of NaNs leave NaN in every element of the kept result arrays; later
// runs on finite inputs, which write into those arrays without clearing
// them where the kernel is said to overwrite every element, give bitwise
// the values of a graph without reuse (no NaN left behind).
func TestReuseResultsOverwrite(t *testing.T) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		gp, xp, plain := poisonNet(t, dt)
		gr, xr, reused := poisonNet(t, dt)
		ad.ReuseResults(gr, true)
		mp, mr := gorgonia.NewTapeMachine(gp), gorgonia.NewTapeMachine(gr)
		for run := range 5 {
			xv := tensor.New(tensor.WithShape(xp.Shape()...), tensor.Of(dt))
			r := rand.New(rand.NewPCG(uint64(run), 3))
			switch d := xv.Data().(type) {
			case []float64:
				for i := range d {
					d[i] = r.NormFloat64()
					if run < 2 {
						d[i] = math.NaN()
					}
				}
			case []float32:
				for i := range d {
					d[i] = float32(r.NormFloat64())
					if run < 2 {
						d[i] = float32(math.NaN())
					}
				}
			}
			if err := gorgonia.Let(xp, xv.Clone().(*tensor.Dense)); err != nil {
				t.Fatal(err)
			}
			if err := gorgonia.Let(xr, xv); err != nil {
				t.Fatal(err)
			}
			for _, m := range []gorgonia.VM{mp, mr} {
				m.Reset()
				if err := m.RunAll(); err != nil {
					t.Fatal(err)
				}
			}
			for i := range plain {
				a, b := valueFloats(*plain[i]), valueFloats(*reused[i])
				if run < 2 {
					continue // NaN either way
				}
				if !bitsEqual(a, b) {
					t.Fatalf("%v run %d value %d: without reuse %v, with %v", dt, run, i, a, b)
				}
			}
		}
		mp.Close()
		mr.Close()
	}
}
