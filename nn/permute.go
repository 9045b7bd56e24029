package nn

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Permute is torch.permute(input, dims) as a copy: the result's axis i is
// input's axis dims[i] (negative entries count from the end), so input
// [N, A, K, H, W] with dims (0, 3, 4, 1, 2) gives [N, H, W, A, K], the
// layout of torchvision's detection heads. One pass over the data
// (cpu.Permute); Permute by dims and Permute by their inverse are a
// linear pair, each the other's gradient, so the result is differentiable
// to every order. It has no CUDA twin: in the cuda build it runs on the
// host, Gorgonia copying its input and result. An input without elements
// gives an empty result.
//
// Errors when the node is built: nil input, a dtype other than float32 or
// float64, a scalar input, len(dims) not the input's rank, an entry out of
// range or repeated.
func Permute(input *gorgonia.Node, dims ...int) (*gorgonia.Node, error) {
	if _, err := checkAxis("Permute", input, 0); err != nil {
		return nil, err
	}
	s := input.Shape().Clone()
	r := s.Dims()
	if len(dims) != r {
		return nil, fmt.Errorf("nn: Permute: dims %v has %d entries, input %v has rank %d", dims, len(dims), s, r)
	}
	perm, inv := make([]int, r), make([]int, r)
	seen := make([]bool, r)
	for i, d := range dims {
		if d < -r || d >= r {
			return nil, fmt.Errorf("nn: Permute: dims[%d] = %d out of range for input %v", i, d, s)
		}
		if d < 0 {
			d += r
		}
		if seen[d] {
			return nil, fmt.Errorf("nn: Permute: dims %v repeats axis %d", dims, d)
		}
		seen[d] = true
		perm[i], inv[d] = d, i
	}
	out := make(tensor.Shape, r)
	for i, p := range perm {
		out[i] = s[p]
	}
	there, _ := ad.LinearPair(permuteSpec(s, out, perm), permuteSpec(out, s, inv))
	return ad.Apply(there, input)
}

// permuteSpec is Permute by perm from shape in to shape out.
func permuteSpec(in, out tensor.Shape, perm []int) ad.OpSpec {
	f := func(src, dst []float64) { cpu.Permute(src, dst, in, perm) }
	f32 := func(src, dst []float32) { cpu.Permute(src, dst, in, perm) }
	return ad.OpSpec{
		Name: "Permute", Params: fmt.Sprintf("%v dims %v", in, perm), InputDims: []int{in.Dims()}, OutputDims: out.Dims(),
		Shape:            ad.FixedShape("nn: Permute", in, out),
		Kernel:           ad.Floats(linearKernel(true, f32, nil), linearKernel(true, f, nil)),
		KernelOverwrites: true,
	}
}
