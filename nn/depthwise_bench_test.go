package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkConv2dDepthwise: the depthwise 3×3 convolution of issue 26,
// x [8, 128, 28, 28], weight [128, 1, 3, 3], padding 1, Groups 128, with a
// bias, float32 and float64 (scripts/depthwise_torch.py times torch's);
// forward+backward: the gradients of Σ G·out w.r.t. x, weight and bias.
func BenchmarkConv2dDepthwise(b *testing.B) {
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, backward := range []bool{false, true} {
			name := dt.String() + "/forward"
			if backward {
				name += "+backward"
			}
			benchBoth(b, name, func(b *testing.B, reuse benchReuse) {
				g := gorgonia.NewGraph()
				r := rand.New(rand.NewPCG(1, 2))
				x, w, bias := benchNodeOf(g, r, dt, "x", 1, 8, 128, 28, 28), benchNodeOf(g, r, dt, "w", 0.3, 128, 1, 3, 3), benchNodeOf(g, r, dt, "b", 1, 128)
				out, err := nn.Conv2d(x, w, bias, nn.Conv2dOpts{Padding: [2]int{1, 1}, Groups: 128})
				if err != nil {
					b.Fatal(err)
				}
				if backward {
					if _, err := ad.VJP(out, benchNodeOf(g, r, dt, "G", 1, out.Shape()...), x, w, bias); err != nil {
						b.Fatal(err)
					}
				}
				benchTape(b, g, reuse)
			})
		}
	}
}
