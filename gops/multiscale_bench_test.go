package gops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/gops"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Mask R-CNN's box-head pooler at the size of scripts/bench_torchvision.py
// (MultiScaleRoIAlign/...): the four FPN levels of one 800x1088 image,
// [1, 256, 200, 272], [1, 256, 100, 136], [1, 256, 50, 68] and
// [1, 256, 25, 34] (strides 4 to 32, scales inferred), 512 boxes, 7x7
// output, 2x2 samples per bin, float32.
var benchPyramidShapes = [][]int{{1, 256, 200, 272}, {1, 256, 100, 136}, {1, 256, 50, 68}, {1, 256, 25, 34}}

const benchPyramidK = 512

// benchPyramidBoxes are the benchmark's boxes, the same numbers as
// bench_torchvision.py's pyramid_boxes: box i has size s = 32·28^u (u the
// fractional part of i·0.618...) and aspect ratio 2^(2v−1), centred at a
// point of a low-discrepancy sequence, clipped to the image. About 37% of
// them pool from map 0 (s < 112), 21% from each of the others.
func benchPyramidBoxes() []float32 {
	frac := func(x float64) float64 { return x - math.Floor(x) }
	d := make([]float32, 0, 4*benchPyramidK)
	for i := 0; i < benchPyramidK; i++ {
		fi := float64(i)
		s := 32 * math.Pow(28, frac(fi*0.6180339887498949))
		a := math.Sqrt(math.Pow(2, 2*frac(fi*1.4142135623730951)-1))
		w, h := s*a, s/a
		cx, cy := frac(fi*0.7548776662466927)*benchImgW, frac(fi*0.5698402909980532)*benchImgH
		d = append(d, float32(max(cx-w/2, 0)), float32(max(cy-h/2, 0)), float32(min(cx+w/2, benchImgW)), float32(min(cy+h/2, benchImgH)))
	}
	return d
}

// benchMultiScale times MultiScaleRoIAlign (with backward, the gradients
// w.r.t. all four maps of <G, out>, as out.backward(G)) on a TapeMachine.
func benchMultiScale(b *testing.B, backward bool) {
	r := rand.New(rand.NewPCG(benchSeed, benchSeed))
	randn := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		return s
	}
	g := gorgonia.NewGraph()
	var feats gorgonia.Nodes
	for l, s := range benchPyramidShapes {
		feats = append(feats, gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(s...), gorgonia.WithName("p"+string(rune('2'+l))),
			gorgonia.WithValue(tensor.New(tensor.WithShape(s...), tensor.WithBacking(randn(tensor.Shape(s).TotalSize()))))))
	}
	boxes := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(benchPyramidK, 4), gorgonia.WithName("boxes"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(benchPyramidK, 4), tensor.WithBacking(benchPyramidBoxes()))))
	out, err := gops.MultiScaleRoIAlign(feats, gorgonia.Nodes{boxes}, [][2]int{{benchImgH, benchImgW}},
		gops.MultiScaleRoIAlignOpts{OutputSize: [2]int{7, 7}, SamplingRatio: 2})
	if err != nil {
		b.Fatal(err)
	}
	if backward {
		ys := out.Shape().Clone()
		gr := gorgonia.NewTensor(g, tensor.Float32, 4, gorgonia.WithShape(ys...), gorgonia.WithName("G"),
			gorgonia.WithValue(tensor.New(tensor.WithShape(ys...), tensor.WithBacking(randn(ys.TotalSize())))))
		if _, err := ad.VJP(out, gr, feats...); err != nil { // out.backward(G)
			b.Fatal(err)
		}
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	timeVM(b, m)
}

// BenchmarkMultiScaleRoIAlign times Mask R-CNN's box-head pooler:
// forward, and forward+backward (gradients w.r.t. the four maps).
func BenchmarkMultiScaleRoIAlign(b *testing.B) {
	b.Run("forward", func(b *testing.B) { benchMultiScale(b, false) })
	b.Run("forward+backward", func(b *testing.B) { benchMultiScale(b, true) })
}
