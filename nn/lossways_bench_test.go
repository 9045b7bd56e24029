package nn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkLossWays times one run of a compiled TapeMachine graph, the
// forward and the gradient w.r.t. every differentiable input, of four of
// nn's ops (float32) with the upstream gradient R a random tensor, written
// two ways: grad, the loss the ordinary way, ad.Grad(Sum(y ⊙ R)); vjp,
// ad.VJP(y, R); engine, grad run by a TapeMachine with nn.Engine. Issue
// 25 asks grad to cost at most 1.3× vjp. Sizes:
// Softmax over the 1000 classes of [512, 1000]; GroupNorm, 32 groups of
// [8, 64, 56, 56] with weight and bias; GridSample of [8, 64, 64, 64] at a
// grid [8, 64, 64, 2] (BenchmarkGridSample's); bilinear Interpolate ×2 of
// [8, 64, 56, 56] (BenchmarkInterpolate's).
func BenchmarkLossWays(b *testing.B) {
	for _, c := range []struct {
		name   string
		inputs func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes
		op     func(in gorgonia.Nodes) (*gorgonia.Node, error)
	}{
		{"softmax", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNode(g, r, "x", 2, 512, 1000)}
		}, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.Softmax(in[0], 1) }},
		{"groupnorm", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNode(g, r, "x", 1, 8, 64, 56, 56), benchNode(g, r, "w", 1, 64), benchNode(g, r, "b", 1, 64)}
		}, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return nn.GroupNorm(in[0], 32, in[1], in[2], 0) }},
		{"gridsample", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNode(g, r, "x", 1, 8, 64, 64, 64), benchGrid(g, r, 8, 64, 64)}
		}, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.GridSample(in[0], in[1], nn.GridSampleOpts{})
		}},
		{"interpolate-bilinear", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNode(g, r, "x", 1, 8, 64, 56, 56)}
		}, func(in gorgonia.Nodes) (*gorgonia.Node, error) {
			return nn.Interpolate(in[0], nn.InterpolateOpts{ScaleFactor: [2]float64{2, 2}, Mode: "bilinear"})
		}},
	} {
		for _, way := range []string{"grad", "engine", "vjp"} {
			b.Run(c.name+"/"+way, func(b *testing.B) {
				g := gorgonia.NewGraph()
				r := rand.New(rand.NewPCG(1, 2))
				in := c.inputs(g, r)
				y, err := c.op(in)
				if err != nil {
					b.Fatal(err)
				}
				gr := benchNode(g, r, "R", 1, y.Shape()...)
				if way == "vjp" {
					_, err = ad.VJP(y, gr, in...)
				} else {
					_, err = lossWayGrad(y, gr, in)
				}
				if err != nil {
					b.Fatal(err)
				}
				var opts []gorgonia.VMOpt
				if way == "engine" {
					opts = append(opts, gorgonia.WithEngine(nn.Engine{}))
				}
				benchTape(b, g, benchAlloc, opts...)
			})
		}
	}
}

// lossWayGrad is ad.Grad(Sum(y ⊙ r), wrt...).
func lossWayGrad(y, r *gorgonia.Node, wrt gorgonia.Nodes) (gorgonia.Nodes, error) {
	p, err := gorgonia.HadamardProd(y, r)
	if err != nil {
		return nil, err
	}
	cost, err := gorgonia.Sum(p)
	if err != nil {
		return nil, err
	}
	return ad.Grad(cost, wrt...)
}

// BenchmarkEngine times the loss's forward alone, Mul (a new result) and
// Sum over every axis of float32 tensors of Softmax's [512, 1000] and
// Interpolate's [8, 64, 112, 112], under tensor's StdEng and nn.Engine.
func BenchmarkEngine(b *testing.B) {
	for _, shape := range [][]int{{512, 1000}, {8, 64, 112, 112}} {
		r := rand.New(rand.NewPCG(1, 2))
		n := tensor.Shape(shape).TotalSize()
		y, g := make([]float32, n), make([]float32, n)
		for i := range y {
			y[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		for _, eng := range []struct {
			name string
			e    tensor.Engine
		}{{"std", tensor.StdEng{}}, {"engine", nn.Engine{}}} {
			yt := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(y), tensor.WithEngine(eng.e))
			gt := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(g), tensor.WithEngine(eng.e))
			name := fmt.Sprintf("%v/%s", tensor.Shape(shape), eng.name)
			b.Run(name+"/mul", func(b *testing.B) {
				for b.Loop() {
					if _, err := tensor.Mul(yt, gt); err != nil {
						b.Fatal(err)
					}
				}
			})
			axes := make([]int, len(shape)) // every axis, as gorgonia.Sum passes them
			for i := range axes {
				axes[i] = i
			}
			b.Run(name+"/sum", func(b *testing.B) {
				for b.Loop() {
					if _, err := yt.Sum(axes...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
