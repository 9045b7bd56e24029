package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The copying layout ops of DeformConv2d's composite. Gorgonia's Reshape
// returns a view that its TapeMachine may later overwrite in place
// (docs/GORGONIA.md), so the composite reshapes with ad's copying reshape,
// here with a CUDA twin, instead.

// reshapeSpecs are ad's copying reshape from one shape to another and
// back, a linear pair, with their CUDA twins.
func reshapeSpecs(from, to tensor.Shape) (there, back ad.OpSpec) {
	spec := func(from, to tensor.Shape) ad.OpSpec {
		s := ad.ReshapeSpec(from, to)
		s.Params += ", gops" // not merged with an ad.Reshape node, which has no CUDA twin
		return withCUDA(s, reshapeGPU{})
	}
	return ad.LinearPair(spec(from, to), spec(to, from))
}

// reshape applies reshapeSpecs.
func reshape(x *gorgonia.Node, to ...int) (*gorgonia.Node, error) {
	there, _ := reshapeSpecs(x.Shape(), tensor.Shape(to))
	return ad.Apply(there, x)
}

// swap01Spec reads its input (of shape in) as [a, b, rest...] and returns
// [b, a, rest...] reshaped to out: the grouped matrix product's
// [Cout, N, L] becomes [N, Cout, Ho, Wo] in one copy. With bias, a second
// input of shape [a] is added on the way: out[j, i, ...] = in[i, j, ...] +
// bias[i].
func swap01Spec(in tensor.Shape, a, b int, out tensor.Shape, bias bool) ad.OpSpec {
	name, dims := "SwapAxes01", []int{in.Dims()}
	if bias {
		name, dims = "SwapAxes01AddBias", []int{in.Dims(), 1}
	}
	return withCUDA(ad.OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("%v as (%d,%d,...)→%v", in, a, b, out),
		InputDims:  dims,
		OutputDims: out.Dims(),
		Shape: func(s []tensor.Shape) (tensor.Shape, error) {
			if !s[0].Eq(in) {
				return nil, fmt.Errorf("gops: %s: input shape %v, want %v", name, s[0], in)
			}
			if bias && !s[1].Eq(tensor.Shape{a}) {
				return nil, fmt.Errorf("gops: %s: bias shape %v, want (%d)", name, s[1], a)
			}
			return out.Clone(), nil
		},
		Kernel: ad.Floats(swap01Kernel[float32](a, b), swap01Kernel[float64](a, b)),
	}, swap01GPU{a: a, b: b, bias: bias})
}

func swap01Kernel[T ad.Float](a, b int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		var bias []T
		if len(in) == 2 {
			bias = in[1].Data
		}
		cpu.Swap01(in[0].Data, bias, out.Data, a, b)
		return nil
	}
}

// swap01Specs are SwapAxes01 and the exchange back: a linear pair.
func swap01Specs(in tensor.Shape, a, b int, out tensor.Shape) (there, back ad.OpSpec) {
	return ad.LinearPair(swap01Spec(in, a, b, out, false), swap01Spec(out, b, a, in, false))
}

// swap01BiasSpec is SwapAxes01AddBias (DeformConv2d's bias). Backward: the
// exchange back, and for the bias the sum of the upstream gradient over
// all axes but axis 1.
func swap01BiasSpec(in tensor.Shape, a, b int, out tensor.Shape) ad.OpSpec {
	spec := swap01Spec(in, a, b, out, true)
	spec.Backward = func(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
		_, back := swap01Specs(in, a, b, out)
		d, err := ad.Apply(back, grad)
		if err != nil {
			return nil, err
		}
		// grad read as [b, a, inner]: sum over axes 0 and 2.
		g3, err := reshape(grad, b, a, in.TotalSize()/max(a*b, 1))
		if err != nil {
			return nil, err
		}
		db, err := gorgonia.Sum(g3, 0, 2)
		if err != nil {
			return nil, fmt.Errorf("gops: SwapAxes01AddBias backward: %w", err)
		}
		return gorgonia.Nodes{d, db}, nil
	}
	return spec
}

// reshapeGPU and swap01GPU are what the layout ops' CUDA twins need
// (layout_cuda.go).
type (
	reshapeGPU struct{}
	swap01GPU  struct {
		a, b int
		bias bool // SwapAxes01AddBias: a second input of [a]
	}
)
