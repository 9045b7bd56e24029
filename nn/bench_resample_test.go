package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// benchDtypes runs benchPasses of op on one input of shape for float32
// and float64, as prefix+"float32/" and prefix+"float64/".
func benchDtypes(b *testing.B, prefix string, shape []int, op func(x *gorgonia.Node) (*gorgonia.Node, error)) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		benchPasses(b, prefix+dt.String()+"/", func(g *gorgonia.ExprGraph, r *rand.Rand) gorgonia.Nodes {
			return gorgonia.Nodes{benchNodeOf(g, r, dt, "x", 1, shape...)}
		}, []int{0}, func(in gorgonia.Nodes) (*gorgonia.Node, error) { return op(in[0]) })
	}
}

// BenchmarkResample: issue 26's workloads of the resampling ops, forward
// and forward+backward (ad.VJP with a random upstream gradient), float32
// and float64: nearest-x2, Interpolate "nearest" with scale factor 2 of
// [2, 256, 50, 68]; avgpool-2x2, AvgPool2d with a 2×2 kernel (stride 2)
// of [8, 256, 28, 28].
func BenchmarkResample(b *testing.B) {
	benchDtypes(b, "nearest-x2/", []int{2, 256, 50, 68}, func(x *gorgonia.Node) (*gorgonia.Node, error) {
		return nn.Interpolate(x, nn.InterpolateOpts{ScaleFactor: [2]float64{2, 2}, Mode: "nearest"})
	})
	benchDtypes(b, "avgpool-2x2/", []int{8, 256, 28, 28}, func(x *gorgonia.Node) (*gorgonia.Node, error) {
		return nn.AvgPool2d(x, nn.AvgPool2dOpts{KernelSize: [2]int{2, 2}})
	})
}

// BenchmarkReLU: ReLU of [8, 64, 112, 112] (the ResNet stem's), and
// BenchmarkAdaptiveAvgPool2d: AdaptiveAvgPool2d(1) of [8, 2048, 7, 7]
// (ResNet-50's head), forward and forward+backward, float32 and float64.
func BenchmarkReLU(b *testing.B) {
	benchDtypes(b, "", []int{8, 64, 112, 112}, nn.ReLU)
}

func BenchmarkAdaptiveAvgPool2d(b *testing.B) {
	benchDtypes(b, "", []int{8, 2048, 7, 7}, func(x *gorgonia.Node) (*gorgonia.Node, error) {
		return nn.AdaptiveAvgPool2d(x, [2]int{1, 1})
	})
}
