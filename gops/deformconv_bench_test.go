package gops_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// deformBenchSize is one DeformConv2d benchmark of scripts/bench_torchvision.py:
// input [n, c, h, w], weight [c, c, 3, 3], padding 1, random offsets
// (standard normal), a mask in [0, 1) when masked, a bias.
type deformBenchSize struct {
	n, c, h, w int
	masked     bool
	dtype      tensor.Dtype // Float32 or Float64
}

// deformBenchGraph builds out = gops.DeformConv2d(...) and, with backward, the
// vector-Jacobian products ad.VJP(out, G, every input): torchvision's
// out.backward(G) with all five inputs requiring grad. It returns the
// machine.
func deformBenchGraph(tb testing.TB, s deformBenchSize, backward bool) gorgonia.VM {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	g := gorgonia.NewGraph()
	dt := s.dtype
	if dt != tensor.Float64 {
		dt = tensor.Float32
	}
	node := func(name string, shape ...int) *gorgonia.Node {
		d := make([]float64, tensor.Shape(shape).TotalSize())
		for i := range d {
			if name == "mask" {
				d[i] = float64(float32(r.Float64()))
			} else {
				d[i] = float64(float32(r.NormFloat64()))
			}
		}
		var backing any = d
		if dt == tensor.Float32 {
			f := make([]float32, len(d))
			for i, v := range d {
				f[i] = float32(v)
			}
			backing = f
		}
		return gorgonia.NewTensor(g, dt, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing))))
	}
	x := node("input", s.n, s.c, s.h, s.w)
	off := node("offset", s.n, 18, s.h, s.w)
	w := node("weight", s.c, s.c, 3, 3)
	bias := node("bias", s.c)
	wrt := gorgonia.Nodes{x, off, w, bias}
	var mask *gorgonia.Node
	if s.masked {
		mask = node("mask", s.n, 9, s.h, s.w)
		wrt = append(wrt, mask)
	}
	out, err := gops.DeformConv2d(x, off, w, bias, mask, gops.DeformConv2dOpts{Padding: [2]int{1, 1}})
	if err != nil {
		tb.Fatal(err)
	}
	if backward {
		gr := node("G", out.Shape()...)
		if _, err := ad.VJP(out, gr, wrt...); err != nil { // out.backward(G)
			tb.Fatal(err)
		}
	}
	return gorgonia.NewTapeMachine(g)
}

// BenchmarkDeformConv2d times DeformConv2d at the sizes of
// scripts/bench_torchvision.py, float32, on a TapeMachine; float64/v1 is v1
// in float64 (gops only, for the float64/float32 ratio).
func BenchmarkDeformConv2d(b *testing.B) {
	benchDeform(b, append(deformBenchSizes[:len(deformBenchSizes):len(deformBenchSizes)],
		namedDeformSize{"float64/v1", deformBenchSize{4, 64, 56, 56, false, tensor.Float64}}))
}

// namedDeformSize is a benchmark's name and size.
type namedDeformSize struct {
	name string
	s    deformBenchSize
}

// deformBenchSizes are scripts/bench_torchvision.py's DeformConv2d sizes,
// float32.
var deformBenchSizes = []namedDeformSize{
	{"v1", deformBenchSize{4, 64, 56, 56, false, tensor.Float32}},
	{"v2", deformBenchSize{4, 64, 56, 56, true, tensor.Float32}},
	{"v2-256", deformBenchSize{2, 256, 32, 32, true, tensor.Float32}},
}

// benchDeform times each size's forward and forward+backward graphs
// (deformBenchGraph) on the machine NewTapeMachine makes.
func benchDeform(b *testing.B, sizes []namedDeformSize) {
	for _, sz := range sizes {
		for _, backward := range []bool{false, true} {
			name := sz.name + "/forward"
			if backward {
				name += "+backward"
			}
			b.Run(name, func(b *testing.B) {
				m := deformBenchGraph(b, sz.s, backward)
				defer m.Close()
				timeVM(b, m)
			})
		}
	}
}

// secondOrderGraph is a small detection-style graph, float32:
// x [2, 16, 32, 32] → DeformConv2d v2 3×3 (weight [16, 16, 3, 3], given
// offsets and mask) → RoIAlign 7×7 of 64 boxes → L = Σ y². With order 1 it
// builds ∇L w.r.t. the weight, offsets and input; with order 2 also the
// gradient-penalty step ∇_w Σ‖∇_x L‖² (as in WGAN-GP or the demo's MAML).
func secondOrderGraph(tb testing.TB, order int) gorgonia.VM {
	tb.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	g := gorgonia.NewGraph()
	node := func(name string, scale float64, shape ...int) *gorgonia.Node {
		d := make([]float32, tensor.Shape(shape).TotalSize())
		for i := range d {
			d[i] = float32(scale * r.NormFloat64())
		}
		return gorgonia.NewTensor(g, tensor.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(d))))
	}
	x := node("x", 1, 2, 16, 32, 32)
	w := node("w", 0.1, 16, 16, 3, 3)
	off := node("offset", 1, 2, 18, 32, 32)
	mask := node("mask", 0.5, 2, 9, 32, 32)
	bd := make([]float32, 0, 64*5)
	for k := 0; k < 64; k++ {
		x1, y1 := 28*r.Float64(), 28*r.Float64()
		bd = append(bd, float32(k%2), float32(x1), float32(y1), float32(x1+2+2*r.Float64()*(30-x1)/2), float32(y1+2+2*r.Float64()*(30-y1)/2))
	}
	boxes := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(64, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(64, 5), tensor.WithBacking(bd))))
	f, err := gops.DeformConv2d(x, off, w, nil, mask, gops.DeformConv2dOpts{Padding: [2]int{1, 1}})
	if err != nil {
		tb.Fatal(err)
	}
	y, err := gops.RoIAlign(f, boxes, gops.RoIAlignOpts{OutputSize: [2]int{7, 7}, SamplingRatio: 2, Aligned: true})
	if err != nil {
		tb.Fatal(err)
	}
	loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(y))))
	g1, err := ad.Grad(loss, w, off, x)
	if err != nil {
		tb.Fatal(err)
	}
	if order == 2 {
		penalty := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.Square(g1[2]))))
		if _, err := ad.Grad(penalty, w); err != nil {
			tb.Fatal(err)
		}
	}
	return gorgonia.NewTapeMachine(g)
}

// BenchmarkSecondOrder times the first-order pass (forward and ∇L) and the
// pass that adds a second-order gradient of the same graph; issue 6 asks
// the second to cost at most 3× the first.
func BenchmarkSecondOrder(b *testing.B) {
	for _, order := range []int{1, 2} {
		name := "first-order"
		if order == 2 {
			name = "second-order"
		}
		b.Run(name, func(b *testing.B) {
			m := secondOrderGraph(b, order)
			defer m.Close()
			timeVM(b, m)
		})
	}
}
