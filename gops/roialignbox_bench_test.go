package gops_test

import (
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// benchBoxGrad times op's gradients w.r.t. the input and the boxes at the
// RoIAlign benchmark size (c channels, k boxes), float32, on a
// TapeMachine: with second false, the forward and <G, out>'s gradients
// w.r.t. x and boxes (out.backward(G) with boxes.requires_grad in torch);
// with second, also the gradient w.r.t. x and boxes of
// <∂<G, out>/∂boxes, V>, a Hessian-vector product through the boxes.
func benchBoxGrad(b *testing.B, op func(x, bx *gorgonia.Node) (*gorgonia.Node, error), c, k, outLen int, second bool) {
	d := newRoIBenchData[float32](c, k, outLen)
	g := gorgonia.NewGraph()
	x := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(benchN, c, benchH, benchW), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(benchN, c, benchH, benchW), tensor.WithBacking(d.x))))
	bx := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(k, 5), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(d.boxes))))
	out, err := op(x, bx)
	if err != nil {
		b.Fatal(err)
	}
	gr := gorgonia.NewTensor(g, tensor.Float32, out.Dims(), gorgonia.WithShape(out.Shape()...), gorgonia.WithName("G"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(out.Shape()...), tensor.WithBacking(d.grad))))
	grads, err := ad.VJP(out, gr, x, bx)
	if err != nil {
		b.Fatal(err)
	}
	if second {
		v := make([]float32, 5*k)
		for i := range v {
			v[i] = float32(i%7) - 3
		}
		vn := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(k, 5), gorgonia.WithName("V"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(k, 5), tensor.WithBacking(v))))
		if _, err := ad.VJP(grads[1], vn, x, bx); err != nil {
			b.Fatal(err)
		}
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	timeVM(b, m)
}

// BenchmarkBoxGradients times the gradients w.r.t. boxes (issue 14's
// section 1), float32, at the sizes of the ops' own benchmarks:
//
//   - RoIAlign/forward+backward: RoIAlign with the gradients w.r.t. input
//     and boxes (F_10, F_01 and the transpose); scripts/bench_torchvision.py
//     times the same on torch autograd over a gather-based roi_align (the
//     only way to get these gradients with torchvision's sampling in torch);
//   - RoIAlign/second-order: also the gradient of <∂L/∂boxes, V> w.r.t.
//     input and boxes (F_11, F_20 = 0, transposes);
//   - PSRoIAlign/forward+backward: the same for PSRoIAlign at its benchmark
//     size (490 channels, 256 boxes).
func BenchmarkBoxGradients(b *testing.B) {
	outLen := benchK * benchC * 49
	roi := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) { return gops.RoIAlign(x, bx, benchOpts) }
	b.Run("RoIAlign/forward+backward", func(b *testing.B) { benchBoxGrad(b, roi, benchC, benchK, outLen, false) })
	b.Run("RoIAlign/second-order", func(b *testing.B) { benchBoxGrad(b, roi, benchC, benchK, outLen, true) })
	ps := func(x, bx *gorgonia.Node) (*gorgonia.Node, error) {
		return gops.PSRoIAlign(x, bx, gops.PSRoIAlignOpts{OutputSize: [2]int{7, 7}, SpatialScale: 1.0 / 16, SamplingRatio: 2})
	}
	b.Run("PSRoIAlign/forward+backward", func(b *testing.B) { benchBoxGrad(b, ps, 490, 256, 256*10*49, false) })
}
