package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// normInput is a node of shape s and dtype dt holding 3·N(0, 1) + 1 values
// from r (inputs of the normalisations away from zero mean).
func normInput(g *gorgonia.ExprGraph, r *rand.Rand, dt tensor.Dtype, name string, s tensor.Shape) *gorgonia.Node {
	data := make([]float64, s.TotalSize())
	for i := range data {
		data[i] = 3*r.NormFloat64() + 1
	}
	var v *tensor.Dense
	if dt == tensor.Float32 {
		d := make([]float32, len(data))
		for i, x := range data {
			d[i] = float32(x)
		}
		v = tensor.New(tensor.WithShape(s...), tensor.WithBacking(d))
	} else {
		v = tensor.New(tensor.WithShape(s...), tensor.WithBacking(data))
	}
	return gorgonia.NewTensor(g, dt, s.Dims(), gorgonia.WithShape(s...), gorgonia.WithName(name), gorgonia.WithValue(v))
}

// bnWays are the two ways of building BatchNorm that bnDerivatives
// compares: training, fused (batchNormTrain) or composed
// (batchNormComposed); eval's affine step, w and b standing for its
// scale and shift, BatchNormEval or ChannelAffine.
const (
	trainFused = iota
	trainComposed
	evalFused
	evalAffine
	maskedFused    // training with a Mask: the fused ops
	maskedComposed // and the composed graph (the cuda build's)
)

// bnMask is the masked ways' mask for n samples: samples 0, 2, 3, 5, 6, …
// kept (i mod 3 ≠ 1).
func bnMask(n int) []float64 {
	m := make([]float64, n)
	for i := range m {
		if i%3 != 1 {
			m[i] = 1
		}
	}
	return m
}

// bnDerivatives builds, in a new graph, BatchNorm of x (shape s) with a
// weight and a bias as hasW and hasB say, the way way says (bnWays), and
// returns the graph and its nodes:
// the output y; the gradients of Σ G·y² w.r.t. x, w and b (those
// present); the VJPs, for fixed V, of the gradient w.r.t. x w.r.t. x and
// w, and with a weight, of the gradient w.r.t. w w.r.t. x and w (orders 1
// and 2). The same seed gives the same values either way.
func bnDerivatives(t *testing.T, s tensor.Shape, dt tensor.Dtype, hasW, hasB bool, way int, seed uint64) (*gorgonia.ExprGraph, gorgonia.Nodes) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	g := gorgonia.NewGraph()
	n, c := s[0], s[1]
	geom := bnGeom{s: s.Clone(), n: n, c: c, l: s.TotalSize() / (n * c), eps: defaultEps}
	x := normInput(g, r, dt, "x", s)
	wrt := gorgonia.Nodes{x}
	var w, b *gorgonia.Node
	if hasW {
		w = normInput(g, r, dt, "w", tensor.Shape{c})
		wrt = append(wrt, w)
	}
	if hasB {
		b = normInput(g, r, dt, "b", tensor.Shape{c})
		wrt = append(wrt, b)
	}
	gOut, v, vw := normInput(g, r, dt, "G", s), normInput(g, r, dt, "V", s), normInput(g, r, dt, "Vw", tensor.Shape{c})
	var y *gorgonia.Node
	var err error
	switch way {
	case trainFused:
		y, err = batchNormTrain(x, w, b, nil, geom, nil)
	case trainComposed:
		y, err = ad.Reshape(x, geom.n, geom.c, geom.l)
		if err == nil {
			y, err = batchNormComposed(y, w, b, geom, nil)
		}
		if err == nil {
			y, err = ad.Reshape(y, s...)
		}
	case maskedFused, maskedComposed:
		mask := gorgonia.NewTensor(g, dt, 1, gorgonia.WithShape(n), gorgonia.WithName("mask"),
			gorgonia.WithValue(tensorOf(dt, bnMask(n), n)))
		if way == maskedFused {
			mg := geom
			mg.masked = true
			y, err = batchNormTrain(x, w, b, mask, mg, nil)
			break
		}
		y, err = ad.Reshape(x, geom.n, geom.c, geom.l)
		if err == nil {
			y, err = batchNormMasked(y, w, b, mask, geom, nil)
		}
		if err == nil {
			y, err = ad.Reshape(y, s...)
		}
	case evalFused:
		y, err = ad.Apply(batchNormEvalSpec(geom), x, w, b)
	default:
		y, err = channelAffine(s, geom.chans(), x, w, b)
	}
	if err != nil {
		t.Fatal(err)
	}
	bu := ad.NewBuilder(y)
	u := bu.Scale(bu.HadamardProd(gOut, y), 2)
	if err := bu.Err(); err != nil {
		t.Fatal(err)
	}
	first, err := ad.VJP(y, u, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	out := append(gorgonia.Nodes{y}, first...)
	second := wrt[:1] // x, and w when present
	if hasW {
		second = wrt[:2]
	}
	hv, err := ad.VJP(first[0], v, second...)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, hv...)
	if hasW {
		hw, err := ad.VJP(first[1], vw, second...)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, hw...)
	}
	return g, out
}

// bnShapes are the corners: rank 2 (L = 1), one sample, one channel,
// odd sizes, trailing axes of size 1. Each channel has at least three
// values: with two, x̂ = ±1 whatever x, and the gradient w.r.t. x is zero
// up to rounding (both ways' noise, not comparable).
var bnShapes = []tensor.Shape{{3, 3}, {7, 1}, {3, 4, 5}, {2, 3, 4, 5}, {1, 2, 7, 1}, {5, 1, 3}, {3, 2, 1, 1}, {3, 2, 9, 11}}

// TestBatchNormFusedMatchesComposed: training BatchNorm's fused ops give
// the composed graph's output, gradients (order 1) and gradients of
// gradients (order 2), with and without weight and bias, and with a Mask
// (batchNormMasked, the cuda build's graph); eval's
// BatchNormEval gives ChannelAffine's (scale and shift both present).
// Each element within rtol of the largest magnitude of its tensor: 1e-10
// in float64, 2e-4 in float32.
func TestBatchNormFusedMatchesComposed(t *testing.T) {
	for _, s := range bnShapes {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			for _, c := range []struct {
				ways   [2]int
				hasW   bool
				hasB   bool
				prefix string
			}{
				{[2]int{trainFused, trainComposed}, true, true, "training"}, {[2]int{trainFused, trainComposed}, true, false, "training"},
				{[2]int{trainFused, trainComposed}, false, true, "training"}, {[2]int{trainFused, trainComposed}, false, false, "training"},
				{[2]int{evalFused, evalAffine}, true, true, "eval"},
				{[2]int{maskedFused, maskedComposed}, true, true, "masked"}, {[2]int{maskedFused, maskedComposed}, false, false, "masked"},
			} {
				kept := 0
				for _, m := range bnMask(s[0]) {
					kept += int(m)
				}
				if c.prefix == "masked" && kept*s.TotalSize()/(s[0]*s[1]) < 3 {
					continue // (two values or fewer per channel: see bnShapes)
				}
				t.Run(fmt.Sprintf("%s/%v/%v/w=%v,b=%v", c.prefix, s, dt, c.hasW, c.hasB), func(t *testing.T) {
					rtol := 1e-10
					if dt == tensor.Float32 {
						rtol = 2e-4
					}
					var got [2][][]float64
					for i, way := range c.ways {
						g, nodes := bnDerivatives(t, s, dt, c.hasW, c.hasB, way, 3)
						var err error
						if got[i], err = graphtest.Eval(g, nodes...); err != nil {
							t.Fatal(err)
						}
					}
					for k := range got[0] {
						var scale float64
						for _, e := range got[1][k] {
							scale = max(scale, math.Abs(e))
						}
						for e, a := range got[0][k] {
							if want := got[1][k][e]; !(math.Abs(a-want) <= rtol*scale) {
								t.Fatalf("node %d element %d: fused %v, composed %v (scale %v)", k, e, a, want, scale)
							}
						}
					}
				})
			}
		}
	}
}

// TestBatchNormFusedProcs: the fused ops' results of orders 0 to 2,
// training and eval, are bitwise the same for GOMAXPROCS 1, 2 and 4, on a
// shape big enough for the kernels to split their channels.
func TestBatchNormFusedProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, way := range []int{trainFused, evalFused} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			var ref [][]float64
			for _, p := range []int{1, 2, 4} {
				runtime.GOMAXPROCS(p)
				g, nodes := bnDerivatives(t, tensor.Shape{4, 6, 40, 40}, dt, true, true, way, 5)
				got, err := graphtest.Eval(g, nodes...)
				if err != nil {
					t.Fatal(err)
				}
				if ref == nil {
					ref = got
					continue
				}
				for k := range got {
					for e, v := range got[k] {
						if math.Float64bits(v) != math.Float64bits(ref[k][e]) {
							t.Fatalf("way %d %v GOMAXPROCS=%d: node %d element %d is %v, %v with 1", way, dt, p, k, e, v, ref[k][e])
						}
					}
				}
			}
		}
	}
}

// tensorOf is a [n] tensor of dtype dt holding v.
func tensorOf(dt tensor.Dtype, v []float64, n int) *tensor.Dense {
	if dt == tensor.Float32 {
		d := make([]float32, n)
		for i, x := range v {
			d[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(n), tensor.WithBacking(d))
	}
	return tensor.New(tensor.WithShape(n), tensor.WithBacking(append([]float64(nil), v...)))
}
