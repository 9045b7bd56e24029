package gops

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// reshapeSpec is a reshape that copies. Gorgonia's Reshape returns a view
// that its TapeMachine may later overwrite in place (GORGONIA.md), so the
// composite ops of this package reshape with this op instead. Its backward
// is the reverse reshape.
func reshapeSpec(from, to tensor.Shape) OpSpec {
	return OpSpec{
		Name:       "Reshape",
		Params:     fmt.Sprintf("%v→%v", from, to),
		gpu:        gpuReshape{},
		InputDims:  []int{from.Dims()},
		OutputDims: to.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !in[0].Eq(from) {
				return nil, fmt.Errorf("gops: Reshape: input shape %v, want %v", in[0], from)
			}
			return to.Clone(), nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			switch in[0].Dtype() {
			case tensor.Float32:
				return copyAs[float32](in[0], to)
			case tensor.Float64:
				return copyAs[float64](in[0], to)
			}
			return nil, fmt.Errorf("gops: Reshape: dtype %v", in[0].Dtype())
		},
		Backward: func(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := Apply(reshapeSpec(to, from), grad)
			return gorgonia.Nodes{d}, err
		},
	}
}

// reshape applies reshapeSpec.
func reshape(x *gorgonia.Node, to ...int) (*gorgonia.Node, error) {
	return Apply(reshapeSpec(x.Shape(), tensor.Shape(to)), x)
}

// swap01Spec reads its input (of shape in) as [a, b, rest...] and returns
// [b, a, rest...] reshaped to out: the grouped matrix product's
// [Cout, N, L] becomes [N, Cout, Ho, Wo] in one copy. With bias, a second
// input of shape [a] is added on the way, out[j, i, ...] = in[i, j, ...] +
// bias[i] (SwapAxes01AddBias: DeformConv2d's bias). Backward: the same
// exchange the other way, and for the bias the sum of the upstream gradient
// over all axes but axis 1.
func swap01Spec(in tensor.Shape, a, b int, out tensor.Shape, bias bool) OpSpec {
	name, dims := "SwapAxes01", []int{in.Dims()}
	if bias {
		name, dims = "SwapAxes01AddBias", []int{in.Dims(), 1}
	}
	return OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("%v as (%d,%d,...)→%v", in, a, b, out),
		gpu:        gpuSwap01{a: a, b: b, bias: bias},
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
		Forward: func(v []gorgonia.Value) (gorgonia.Value, error) {
			var bv gorgonia.Value
			if bias {
				bv = v[1]
			}
			switch v[0].Dtype() {
			case tensor.Float32:
				return swap01[float32](v[0], bv, a, b, out)
			case tensor.Float64:
				return swap01[float64](v[0], bv, a, b, out)
			}
			return nil, fmt.Errorf("gops: %s: dtype %v", name, v[0].Dtype())
		},
		Backward: func(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := Apply(swap01Spec(out, b, a, in, false), grad)
			if err != nil || !bias {
				return gorgonia.Nodes{d}, err
			}
			// grad read as [b, a, inner]: sum over axes 0 and 2.
			g3, err := reshape(grad, b, a, in.TotalSize()/max(a*b, 1))
			if err != nil {
				return nil, err
			}
			db, err := gorgonia.Sum(g3, 0, 2)
			if err != nil {
				return nil, fmt.Errorf("gops: %s backward: %w", name, err)
			}
			return gorgonia.Nodes{d, db}, nil
		},
	}
}

// swap01 reads v as [a, b, inner] and returns [b, a, inner] (shaped
// outShape), plus bias[i] on every element from row i when bias is not nil.
// Parallel over the b blocks of the result.
func swap01[T Float](v, bias gorgonia.Value, a, b int, outShape tensor.Shape) (*tensor.Dense, error) {
	src, _, err := tensorData[T](v)
	if err != nil {
		return nil, err
	}
	var bs []T
	if bias != nil {
		if bs, _, err = tensorData[T](bias); err != nil {
			return nil, err
		}
	}
	out, dst := newTensor[T](outShape...)
	inner := len(src) / max(a*b, 1)
	ParallelFor(b, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			for i := 0; i < a; i++ {
				d := dst[(j*a+i)*inner : (j*a+i+1)*inner]
				s := src[(i*b+j)*inner : (i*b+j+1)*inner]
				if bs == nil {
					copy(d, s)
					continue
				}
				s = s[:len(d)]
				for t := range d {
					d[t] = s[t] + bs[i]
				}
			}
		}
	})
	return out, nil
}

// copyAs returns a copy of v's elements as a tensor of shape to.
func copyAs[T Float](v gorgonia.Value, to tensor.Shape) (*tensor.Dense, error) {
	src, _, err := tensorData[T](v)
	if err != nil {
		return nil, err
	}
	out, dst := newTensor[T](to...)
	copy(dst, src)
	return out, nil
}
