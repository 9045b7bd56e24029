package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The benchmarks of package nn, at the sizes of scripts/bench_torchvision.py
// (float32; forward+backward: the gradients of Σ G·out w.r.t. every
// differentiable input, torch's out.backward(G)). They run on gops' own
// matrix product (this test binary does not call openblas.Use).

// benchNode is a float32 node of normal random values times scale.
func benchNode(g *gorgonia.ExprGraph, r *rand.Rand, name string, scale float64, shape ...int) *gorgonia.Node {
	d := make([]float32, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = float32(scale * r.NormFloat64())
	}
	return gorgonia.NewTensor(g, tensor.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
		gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))))
}

// benchReuse is how a benchmark's graph keeps its results: benchAlloc
// (Gorgonia's way: every run allocates every result), benchReuseTwo
// (ad.ReuseResults) or benchInPlace (ad.ReuseResultsInPlace).
type benchReuse int

const (
	benchAlloc benchReuse = iota
	benchReuseTwo
	benchInPlace
)

// set switches g's reuse to m.
func (m benchReuse) set(g *gorgonia.ExprGraph) {
	switch m {
	case benchReuseTwo:
		ad.ReuseResults(g, true)
	case benchInPlace:
		ad.ReuseResultsInPlace(g, true)
	default:
		ad.ReuseResults(g, false)
	}
}

// benchGraph times op on the inputs made by inputs, forward or forward and
// the vector-Jacobian product with a random G w.r.t. wrt (the indices of
// the inputs to differentiate), its results kept as reuse says.
func benchGraph(b *testing.B, reuse benchReuse, backward bool, inputs func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes, wrt []int,
	op func(in gorgonia.Nodes) (*gorgonia.Node, error)) {
	g := gorgonia.NewGraph()
	r := rand.New(rand.NewPCG(1, 2))
	in := inputs(g, r)
	out, err := op(in)
	if err != nil {
		b.Fatal(err)
	}
	if backward {
		var ws gorgonia.Nodes
		for _, i := range wrt {
			ws = append(ws, in[i])
		}
		gr := out
		if !out.IsScalar() {
			gr = benchNodeOf(g, r, out.Dtype(), "G", 1, out.Shape()...)
		} else if gr, err = ad.Constant(g, gorgonia.NewF32(1)); err != nil {
			b.Fatal(err)
		}
		if _, err := ad.VJP(out, gr, ws...); err != nil {
			b.Fatal(err)
		}
	}
	benchTape(b, g, reuse)
}

// benchBoth runs fn as name, Gorgonia's way (every run allocates every
// result), as reuse/name, with ad.ReuseResults on, and as inplace/name,
// with ad.ReuseResultsInPlace on (one array a result, torch's lifetime of
// a result its caller drops: what bench_torchvision.py times).
func benchBoth(b *testing.B, name string, fn func(b *testing.B, reuse benchReuse)) {
	b.Run(name, func(b *testing.B) { fn(b, benchAlloc) })
	b.Run("reuse/"+name, func(b *testing.B) { fn(b, benchReuseTwo) })
	b.Run("inplace/"+name, func(b *testing.B) { fn(b, benchInPlace) })
}

// benchPasses runs benchGraph of op as prefix+"forward" and
// prefix+"forward+backward" (the gradients w.r.t. the inputs at wrt), each
// through benchBoth.
func benchPasses(b *testing.B, prefix string, inputs func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes, wrt []int,
	op func(in gorgonia.Nodes) (*gorgonia.Node, error)) {
	for _, backward := range []bool{false, true} {
		name := prefix + "forward"
		if backward {
			name += "+backward"
		}
		benchBoth(b, name, func(b *testing.B, reuse benchReuse) { benchGraph(b, reuse, backward, inputs, wrt, op) })
	}
}

// benchTape times m.Reset(); m.RunAll() of g on a TapeMachine made with
// opts, its results kept as reuse says. Besides ns/op (the mean) it
// reports min-ns/op, the fastest single run: what bench_torchvision.py
// reports of torch (the least of its timed calls, each timed alone).
func benchTape(b *testing.B, g *gorgonia.ExprGraph, reuse benchReuse, opts ...gorgonia.VMOpt) {
	reuse.set(g)
	m := gorgonia.NewTapeMachine(g, opts...)
	defer m.Close()
	b.ReportAllocs()
	best := time.Duration(math.MaxInt64)
	for b.Loop() {
		t0 := time.Now()
		m.Reset()
		if err := m.RunAll(); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(t0))
	}
	b.ReportMetric(float64(best.Nanoseconds()), "min-ns/op")
}

// BenchmarkConv2d: 3×3 convolutions with padding 1 and bias at the
// DeformConv2d v1 size ("forward": [4, 64, 56, 56], 64 → 64, torch's
// Conv2d floor) and ResNet stages: resnet-64 [8, 64, 56, 56] 64 → 64,
// resnet-256 [8, 256, 14, 14] 256 → 256, pointwise-1024 the 1×1
// 256 → 1024 on [8, 256, 14, 14] (no padding), and stem the ResNet stem's
// 7×7, stride 2, padding 3, 3 → 64 on [4, 3, 224, 224]; mnist-16
// examples/mnist's second layer, 16 → 32 on [64, 16, 14, 14]; each also as
// reuse/... with ad.ReuseResults (benchPasses).
func BenchmarkConv2d(b *testing.B) {
	for _, c := range []struct {
		name                     string
		n, cin, h, cout, k, p, s int
	}{{"", 4, 64, 56, 64, 3, 1, 1}, {"resnet-64/", 8, 64, 56, 64, 3, 1, 1}, {"resnet-256/", 8, 256, 14, 256, 3, 1, 1},
		{"pointwise-1024/", 8, 256, 14, 1024, 1, 0, 1}, {"stem/", 4, 3, 224, 64, 7, 3, 2}, {"mnist-16/", 64, 16, 14, 32, 3, 1, 1}} {
		benchPasses(b, c.name, func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNode(g, r, "x", 1, c.n, c.cin, c.h, c.h), benchNode(g, r, "w", 0.05, c.cout, c.cin, c.k, c.k),
				benchNode(g, r, "b", 1, c.cout)}
		}, []int{0, 1, 2}, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.Conv2d(in[0], in[1], in[2], nn.Conv2dOpts{Padding: [2]int{c.p, c.p}, Stride: [2]int{c.s, c.s}})
		})
	}
}

// BenchmarkMaxPool2d and BenchmarkAvgPool2d: the ResNet stem's 3×3,
// stride 2, padding 1 pooling of [8, 64, 112, 112]; MaxPool2d's 2x2/ the
// 2×2 pooling of examples/mnist's first layer, [64, 16, 28, 28].
func BenchmarkMaxPool2d(b *testing.B) {
	benchPool(b, func(x *gorgonia.Node) (*gorgonia.Node, error) {
		return nn.MaxPool2d(x, nn.MaxPool2dOpts{KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})
	})
	benchPasses(b, "2x2/", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
		return gorgonia.Nodes{benchNode(g, r, "x", 1, 64, 16, 28, 28)}
	}, []int{0}, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		return nn.MaxPool2d(in[0], nn.MaxPool2dOpts{KernelSize: [2]int{2, 2}})
	})
}

func BenchmarkAvgPool2d(b *testing.B) {
	benchPool(b, func(x *gorgonia.Node) (*gorgonia.Node, error) {
		return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}})
	})
}

func benchPool(b *testing.B, op func(x *gorgonia.Node) (*gorgonia.Node, error)) {
	benchPasses(b, "", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
		return gorgonia.Nodes{benchNode(g, r, "x", 1, 8, 64, 112, 112)}
	}, []int{0}, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0]) })
}

// BenchmarkSoftmax: softmax over the 1000 classes of [256, 1000] logits;
// BenchmarkCrossEntropy: the mean cross-entropy of the same logits.
func BenchmarkSoftmax(b *testing.B) {
	benchLogits(b, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Softmax(in[0], 1) })
}

func BenchmarkCrossEntropy(b *testing.B) {
	benchLogits(b, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		t := make([]int, 256)
		for i := range t {
			t[i] = (i * 37) % 1000
		}
		tn := gorgonia.NewTensor(in[0].Graph(), tensor.Int, 1, gorgonia.WithShape(256), gorgonia.WithName("target"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(256), tensor.WithBacking(t))))
		return nn.CrossEntropy(in[0], tn, nn.CrossEntropyOpts{})
	})
}

func benchLogits(b *testing.B, op func(in gorgonia.Nodes) (*gorgonia.Node, error)) {
	benchPasses(b, "", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
		return gorgonia.Nodes{benchNode(g, r, "x", 2, 256, 1000)}
	}, []int{0}, op)
}

// BenchmarkRunAll: the fixed cost of one m.Reset(); m.RunAll() on a
// TapeMachine, a graph of one Softmax of [2, 8] under ad.ReuseResults
// (gops only): what every row above pays once per run besides its
// kernels. Gorgonia's RunAll locks its OS thread and runs the program on a
// goroutine of its own, so each run hands the processor to another thread
// and back.
func BenchmarkRunAll(b *testing.B) {
	b.Run("softmax-2x8", func(b *testing.B) {
		benchGraph(b, benchReuseTwo, false, func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNode(g, r, "x", 1, 2, 8)}
		}, nil, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Softmax(in[0], 1) })
	})
}

// BenchmarkInterpolate: nearest-fpn, FPN's top-down ×2 upsampling of
// [8, 256, 50, 68] (scale factor 2, "nearest"); bilinear, ×2 of
// [8, 64, 56, 56], AlignCorners false.
func BenchmarkInterpolate(b *testing.B) {
	for _, c := range []struct {
		name        string
		mode        string
		n, ch, h, w int
	}{{"nearest-fpn/", "nearest", 8, 256, 50, 68}, {"bilinear/", "bilinear", 8, 64, 56, 56}} {
		benchPasses(b, c.name, func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNode(g, r, "x", 1, c.n, c.ch, c.h, c.w)}
		}, []int{0}, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.Interpolate(in[0], nn.InterpolateOpts{ScaleFactor: [2]float64{2, 2}, Mode: c.mode})
		})
	}
}

// BenchmarkGroupNorm: 32 groups of [8, 256, 50, 68] (an FPN level), with
// weight and bias; forward+backward: the gradients w.r.t. input, weight
// and bias.
func BenchmarkGroupNorm(b *testing.B) {
	benchPasses(b, "", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
		return gorgonia.Nodes{benchNode(g, r, "x", 1, 8, 256, 50, 68), benchNode(g, r, "w", 1, 256), benchNode(g, r, "b", 1, 256)}
	}, []int{0, 1, 2}, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		return nn.GroupNorm(in[0], 32, in[1], in[2], 0)
	})
}

// convStackGraph is a small ResNet-like classifier, float32: x
// [8, 64, 28, 28] → Conv2d 3×3 64 → 64, padding 1, bias → ReLU → the same
// again → AdaptiveAvgPool2d(1) → Reshape [8, 64] → MatMul by [64, 10] →
// the mean CrossEntropy L with fixed targets. Order 1: ∇L w.r.t. the
// weights (w1, b1, w2, b2, fc). Order 2: also ∇_x L, and the gradient of
// the penalty Σ‖∇_x L‖² w.r.t. the weights (WGAN-GP's step).
func convStackGraph(b *testing.B, order int) *gorgonia.ExprGraph {
	g := gorgonia.NewGraph()
	r := rand.New(rand.NewPCG(5, 6))
	x := benchNode(g, r, "x", 1, 8, 64, 28, 28)
	w1, b1 := benchNode(g, r, "w1", 0.05, 64, 64, 3, 3), benchNode(g, r, "b1", 0.1, 64)
	w2, b2 := benchNode(g, r, "w2", 0.05, 64, 64, 3, 3), benchNode(g, r, "b2", 0.1, 64)
	fc := benchNode(g, r, "fc", 0.1, 64, 10)
	t := make([]int, 8)
	for i := range t {
		t[i] = (i * 3) % 10
	}
	target := gorgonia.NewTensor(g, tensor.Int, 1, gorgonia.WithShape(8), gorgonia.WithName("target"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(8), tensor.WithBacking(t))))
	must := func(n *gorgonia.Node, err error) *gorgonia.Node {
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	pad1 := nn.Conv2dOpts{Padding: [2]int{1, 1}}
	h := must(nn.ReLU(must(nn.Conv2d(x, w1, b1, pad1))))
	h = must(nn.ReLU(must(nn.Conv2d(h, w2, b2, pad1))))
	h = must(nn.Reshape(must(nn.AdaptiveAvgPool2d(h, [2]int{1, 1})), 8, 64))
	loss := must(nn.CrossEntropy(must(nn.MatMul(h, fc, false, false)), target, nn.CrossEntropyOpts{}))
	weights := gorgonia.Nodes{w1, b1, w2, b2, fc}
	if order == 1 {
		if _, err := ad.Grad(loss, weights...); err != nil {
			b.Fatal(err)
		}
		return g
	}
	g1, err := ad.Grad(loss, append(weights, x)...)
	if err != nil {
		b.Fatal(err)
	}
	penalty := must(gorgonia.Sum(must(gorgonia.Square(g1[len(weights)]))))
	if _, err := ad.Grad(penalty, weights...); err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkConvStackSecondOrder times convStackGraph's first-order pass
// (forward and the weights' gradients) and its second-order pass; issue 13
// asks the second to cost at most 3× the first.
func BenchmarkConvStackSecondOrder(b *testing.B) {
	for _, order := range []int{1, 2} {
		name := "first-order"
		if order == 2 {
			name = "second-order"
		}
		b.Run(name, func(b *testing.B) { benchTape(b, convStackGraph(b, order), benchAlloc) })
	}
}

// benchGrid is a float32 grid [n, ho, wo, 2] of uniform values in
// [−1.1, 1.1]: sample points over the whole image and a little outside.
func benchGrid(g *gorgonia.ExprGraph, r *rand.Rand, n, ho, wo int) *gorgonia.Node {
	d := make([]float32, n*ho*wo*2)
	for i := range d {
		d[i] = float32(2.2*r.Float64() - 1.1)
	}
	return gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(n, ho, wo, 2), gorgonia.WithName("grid"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(n, ho, wo, 2), tensor.WithBacking(d))))
}

// BenchmarkGridSample: bilinear sampling, zeros padding, of [8, 64, 64, 64]
// at a grid [8, 64, 64, 2] of points in [−1.1, 1.1]² (issue 16's size);
// forward+backward: the gradients w.r.t. input and grid.
// first-order/second-order: L = Σ G·out and ∇L w.r.t. input and grid, then
// also the gradient w.r.t. both of the penalty Σ‖∂L/∂grid‖² (a
// smoothness-of-flow term); issue 16 asks the second to cost at most 3×
// the first. torch has no double backward for grid_sampler_2d, so those
// two rows are gops' only.
func BenchmarkGridSample(b *testing.B) {
	inputs := func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
		return gorgonia.Nodes{benchNode(g, r, "x", 1, 8, 64, 64, 64), benchGrid(g, r, 8, 64, 64)}
	}
	op := func(in gorgonia.Nodes) (*gorgonia.Node, error) {
		return nn.GridSample(in[0], in[1], nn.GridSampleOpts{})
	}
	benchPasses(b, "", inputs, []int{0, 1}, op)
	for _, order := range []int{1, 2} {
		name := "first-order"
		if order == 2 {
			name = "second-order"
		}
		b.Run(name, func(b *testing.B) {
			g := gorgonia.NewGraph()
			r := rand.New(rand.NewPCG(1, 2))
			in := inputs(g, r)
			y, err := op(in)
			if err != nil {
				b.Fatal(err)
			}
			gr := benchNode(g, r, "G", 1, y.Shape()...)
			d, err := ad.VJP(y, gr, in...)
			if err != nil {
				b.Fatal(err)
			}
			if order == 2 {
				penalty := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(d[1]))))
				if _, err := ad.Grad(penalty, in...); err != nil {
					b.Fatal(err)
				}
			}
			benchTape(b, g, benchAlloc)
		})
	}
}

// BenchmarkBatchNorm: [8, 64, 56, 56] with weight and bias, training
// (batch statistics; running statistics updated every run) and eval, in
// float32 and float64; forward+backward: the gradients w.r.t. input,
// weight and bias (scripts/batchnorm_torch.py is torch's twin).
func BenchmarkBatchNorm(b *testing.B) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, training := range []bool{true, false} {
			mode := "eval/"
			if training {
				mode = "training/"
			}
			benchPasses(b, mode+dt.String()+"/", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
				return gorgonia.Nodes{benchNodeOf(g, r, dt, "x", 1, 8, 64, 56, 56), benchNodeOf(g, r, dt, "w", 1, 64), benchNodeOf(g, r, dt, "b", 1, 64)}
			}, []int{0, 1, 2}, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
				rm := tensor.New(tensor.WithShape(64), tensor.Of(dt))
				rv := tensor.New(tensor.WithShape(64), tensor.Of(dt))
				if err := rv.Memset(one(dt)); err != nil {
					return nil, err
				}
				return nn.BatchNorm(in[0], in[1], in[2], rm, rv, nn.BatchNormOpts{Training: training})
			})
		}
	}
}

// benchNodeOf is benchNode of element type dt (float32 or float64).
func benchNodeOf(g *gorgonia.ExprGraph, r *rand.Rand, dt tensor.Dtype, name string, scale float64, shape ...int) *gorgonia.Node {
	if dt == tensor.Float32 {
		return benchNode(g, r, name, scale, shape...)
	}
	d := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range d {
		d[i] = scale * r.NormFloat64()
	}
	return gorgonia.NewTensor(g, tensor.Float64, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
		gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))))
}

// one is 1 in dt.
func one(dt tensor.Dtype) any {
	if dt == tensor.Float32 {
		return float32(1)
	}
	return float64(1)
}

// BenchmarkLinear: [128, 784] → 256 features with bias (an MNIST MLP's
// first layer; scripts/bench_torchvision.py's Linear), forward+backward
// w.r.t. x, weight and bias.
func BenchmarkLinear(b *testing.B) {
	benchPasses(b, "", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
		return gorgonia.Nodes{benchNode(g, r, "x", 1, 128, 784), benchNode(g, r, "w", 0.03, 256, 784), benchNode(g, r, "b", 1, 256)}
	}, []int{0, 1, 2}, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Linear(in[0], in[1], in[2]) })
}
