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
func TestReuseResultsOverwrite(t *testing.T) { checkPoisoned(t, poisonNet) }

// TestReuseResultsOverwriteNarrow: TestReuseResultsOverwrite's check on
// poisonNetNarrow, the direct kernels of narrow-group convolutions and
// BatchNorm's fused ops.
func TestReuseResultsOverwriteNarrow(t *testing.T) { checkPoisoned(t, poisonNetNarrow) }

// poisonNetNarrow is a graph through the ops of narrow groups and
// BatchNorm that declare KernelOverwrites: a depthwise Conv2d with channel
// multiplier 2 and padding 3 (the in-place 3×3 kernels), training
// BatchNorm with weight and bias, a depthwise ConvTranspose2d, a strided,
// dilated Conv2d of two channels a group, eval BatchNorm (BatchNormEval)
// and training BatchNorm without parameters; with readWithPenalty's
// gradients (BatchNormStats, GradX, GradW, GradB and their gradients).
func poisonNetNarrow(t *testing.T, dt tensor.Dtype) (*gorgonia.ExprGraph, *gorgonia.Node, []*gorgonia.Value) {
	t.Helper()
	g := gorgonia.NewGraph()
	node := randNodes(g, dt, rand.New(rand.NewPCG(6, 1)))
	must := mustNode(t)
	x := node("x", 0.4, 2, 4, 7, 19)
	w1, bw, bb := node("w1", 0.4, 8, 1, 3, 3), node("bw", 0.4, 8), node("bb", 0.4, 8)
	wt, w3 := node("wt", 0.4, 8, 1, 3, 3), node("w3", 0.4, 8, 2, 3, 2)
	ew, eb := node("ew", 0.4, 8), node("eb", 0.4, 8)
	h := must(nn.Conv2d(x, w1, nil, nn.Conv2dOpts{Padding: [2]int{3, 3}, Groups: 4}))
	h = must(nn.BatchNorm(h, bw, bb, nil, nil, nn.BatchNormOpts{Training: true}))
	h = must(nn.Tanh(h))
	h = must(nn.ConvTranspose2d(h, wt, nil, nn.ConvTranspose2dOpts{Padding: [2]int{1, 1}, Groups: 8}))
	h = must(nn.Conv2d(h, w3, nil, nn.Conv2dOpts{Stride: [2]int{2, 3}, Padding: [2]int{2, 1}, Dilation: [2]int{2, 1}, Groups: 4}))
	rm, rv := tensor.New(tensor.WithShape(8), tensor.Of(dt)), tensor.New(tensor.WithShape(8), tensor.Of(dt))
	switch d := rv.Data().(type) { // variances 1 to 2.75, means 0
	case []float32:
		for i := range d {
			d[i] = 1 + float32(i)/4
		}
	case []float64:
		for i := range d {
			d[i] = 1 + float64(i)/4
		}
	}
	h = must(nn.BatchNorm(h, ew, eb, rm, rv, nn.BatchNormOpts{}))
	h = must(nn.BatchNorm(h, nil, nil, nil, nil, nn.BatchNormOpts{Training: true}))
	loss := must(gorgonia.Sum(must(gorgonia.Square(must(nn.Tanh(h))))))
	return g, x, readWithPenalty(t, loss, x, gorgonia.Nodes{w1, bw, bb, wt, w3, ew, eb}, h, loss)
}

// checkPoisoned builds net twice, one with ad.ReuseResults on, and runs
// TestReuseResultsOverwrite's check on them.
func checkPoisoned(t *testing.T, net func(*testing.T, tensor.Dtype) (*gorgonia.ExprGraph, *gorgonia.Node, []*gorgonia.Value)) {
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		gp, xp, plain := net(t, dt)
		gr, xr, reused := net(t, dt)
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
