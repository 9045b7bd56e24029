package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The per-channel affine step of the normalisations, y·w[c] + b[c], and
// its family, on a tensor of any shape s seen as [outer, C, inner]
// (GroupNorm: [N, C, H·W]; LayerNorm: [rows, normalised size, 1]):
//
//	ChannelAffine(x, w, b) = x·w[c] + b[c] (w or b may be absent)
//	ChannelDot(u, y)       = Σ_{outer, inner} u·y, [C]
//	ChannelTotal(u)        = Σ_{outer, inner} u, [C], with ChannelSpread
//	                         (v[c] everywhere) its transpose
//
// With upstream U (V for the [C] results): ChannelAffine's gradients are
// ChannelAffine(U, w) (U without w), ChannelDot(U, x) and ChannelTotal(U);
// ChannelDot's are ChannelAffine(y, V) and ChannelAffine(u, V); the sum
// and its spread are a linear pair. So the family is closed under
// differentiation. Every op works on the whole tensor in one pass, without
// the broadcast copies that composite ops need.

// chanGeom is a shape seen as [outer, c, inner], contiguous.
type chanGeom struct{ outer, c, inner int }

func (g chanGeom) String() string { return fmt.Sprintf("%d×%d×%d", g.outer, g.c, g.inner) }

// kern is g as the kernels' geometry.
func (g chanGeom) kern() cpu.ChanGeom { return cpu.ChanGeom{Outer: g.outer, C: g.c, Inner: g.inner} }

// channelAffine is ChannelAffine(x, weight, bias) on s seen as g; weight
// or bias (not both) may be nil.
func channelAffine(s tensor.Shape, g chanGeom, x, weight, bias *gorgonia.Node) (*gorgonia.Node, error) {
	in := gorgonia.Nodes{x}
	for _, p := range []*gorgonia.Node{weight, bias} {
		if p != nil {
			in = append(in, p)
		}
	}
	return ad.Apply(channelAffineSpec(s, g, weight != nil, bias != nil), in...)
}

// channelAffineSpec is ChannelAffine on s seen as g: inputs x (shape s),
// then w [C] if hasW, then b [C] if hasB.
func channelAffineSpec(s tensor.Shape, g chanGeom, hasW, hasB bool) ad.OpSpec {
	s = s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "ChannelAffine", Params: fmt.Sprintf("%v as %v weight %v bias %v", s, g, hasW, hasB),
		InputDims: affineDims(s, hasW, hasB), OutputDims: s.Dims(), Shape: affineShape("ChannelAffine", s, g.c),
		Kernel:           ad.Floats(channelAffineKernel[float32](g, hasW, hasB), channelAffineKernel[float64](g, hasW, hasB)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			x := in[0]
			grads := gorgonia.Nodes{u}
			if hasW {
				dx, err := ad.Apply(channelAffineSpec(s, g, true, false), u, in[1])
				if err != nil {
					return nil, err
				}
				dw, err := ad.Apply(channelDotSpec(s, g), u, x)
				if err != nil {
					return nil, err
				}
				grads = gorgonia.Nodes{dx, dw}
			}
			if hasB {
				total, _ := channelTotalSpecs(s, g)
				db, err := ad.Apply(total, u)
				if err != nil {
					return nil, err
				}
				grads = append(grads, db)
			}
			return grads, nil
		},
	}, channelAffineGPU{g, hasW, hasB})
}

// channelAffineKernel writes x·w[c] + b[c] (w = 1 or b = 0 when absent;
// cpu.ChannelAffine).
func channelAffineKernel[T ad.Float](g chanGeom, hasW, hasB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		w, b := affineParams(g.c, in, hasW, hasB)
		cpu.ChannelAffine(g.kern(), out.Data, in[0].Data, w, b)
		return nil
	}
}

// affineDims are the input ranks of an affine op on s: s's, then 1 for the
// weight and the bias when present.
func affineDims(s tensor.Shape, hasW, hasB bool) []int {
	dims := []int{s.Dims()}
	if hasW {
		dims = append(dims, 1)
	}
	if hasB {
		dims = append(dims, 1)
	}
	return dims
}

// affineShape is the shape rule of an affine op named name: x of shape s,
// parameters of shape [c].
func affineShape(name string, s tensor.Shape, c int) func([]tensor.Shape) (tensor.Shape, error) {
	return func(in []tensor.Shape) (tensor.Shape, error) {
		if !slices.Equal(in[0], s) {
			return nil, fmt.Errorf("nn: %s: input %v, want %v", name, in[0], s)
		}
		for _, p := range in[1:] {
			if !slices.Equal(p, tensor.Shape{c}) {
				return nil, fmt.Errorf("nn: %s: parameter %v, want (%d)", name, p, c)
			}
		}
		return s.Clone(), nil
	}
}

// affineParams are the weight and bias of an affine op's inputs (after the
// first, in that order, each present or not), 1 and 0 where absent.
func affineParams[T ad.Float](c int, in []ad.Tensor[T], hasW, hasB bool) (w, b []T) {
	w, b = make([]T, c), make([]T, c)
	for i := range w {
		w[i] = 1
	}
	next := 1
	if hasW {
		copy(w, in[next].Data)
		next++
	}
	if hasB {
		copy(b, in[next].Data)
	}
	return w, b
}

// channelDotSpec is ChannelDot(u, y) = Σ over outer and inner of u·y, per
// channel of s seen as g.
func channelDotSpec(s tensor.Shape, g chanGeom) ad.OpSpec {
	s = s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "ChannelDot", Params: fmt.Sprintf("%v as %v", s, g), InputDims: []int{s.Dims(), s.Dims()}, OutputDims: 1,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for _, t := range in {
				if !slices.Equal(t, s) {
					return nil, fmt.Errorf("nn: ChannelDot: input %v, want %v", t, s)
				}
			}
			return tensor.Shape{g.c}, nil
		},
		Kernel: ad.Floats(channelReduceKernel[float32](g, true), channelReduceKernel[float64](g, true)),
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			scaleBy := channelAffineSpec(s, g, true, false)
			du, err := ad.Apply(scaleBy, in[1], v)
			if err != nil {
				return nil, err
			}
			dy, err := ad.Apply(scaleBy, in[0], v)
			return gorgonia.Nodes{du, dy}, err
		},
	}, channelReduceGPU{g, true})
}

// channelTotalSpecs are ChannelTotal (Σ over outer and inner, per channel
// of s seen as g) and ChannelSpread back, a linear pair. (ChannelSum of
// conv.go sums in the element type in one scalar chain; ChannelTotal sums
// whole planes with vmath.Sum, in float64 across planes.)
func channelTotalSpecs(s tensor.Shape, g chanGeom) (total, spread ad.OpSpec) {
	s = s.Clone()
	params := fmt.Sprintf("%v as %v", s, g)
	total = ad.OpSpec{
		Name: "ChannelTotal", Params: params, InputDims: []int{s.Dims()}, OutputDims: 1,
		Shape:  ad.FixedShape("nn: ChannelTotal", s, tensor.Shape{g.c}),
		Kernel: ad.Floats(channelReduceKernel[float32](g, false), channelReduceKernel[float64](g, false)),
	}
	spread = ad.OpSpec{
		Name: "ChannelSpread", Params: params, InputDims: []int{1}, OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], tensor.Shape{g.c}) {
				return nil, fmt.Errorf("nn: ChannelSpread: input %v, want (%d)", in[0], g.c)
			}
			return s.Clone(), nil
		},
		Kernel: ad.Floats(channelSpreadKernel[float32](g), channelSpreadKernel[float64](g)),
	}
	return ad.LinearPair(withCUDA(total, channelReduceGPU{g, false}), withCUDA(spread, channelGPU{g.outer, g.c, g.inner, channelBroadcast}))
}

// channelReduceKernel is ChannelDot (dot: cpu.ChannelDot) or
// ChannelTotal (cpu.ChannelTotal).
func channelReduceKernel[T ad.Float](g chanGeom, dot bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if dot {
			cpu.ChannelDot(g.kern(), out.Data, in[0].Data, in[1].Data)
			return nil
		}
		cpu.ChannelTotal(g.kern(), out.Data, in[0].Data)
		return nil
	}
}

// channelSpreadKernel writes v[c] to every element of channel c.
func channelSpreadKernel[T ad.Float](g chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.ChannelBroadcast(in[0].Data, out.Data, g.outer, g.c, g.inner)
		return nil
	}
}

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// channelAffineGPU is ChannelAffine on g, with a weight and a bias input
// as hasW and hasB say (norm_cuda.go).
type channelAffineGPU struct {
	g          chanGeom
	hasW, hasB bool
}

// channelReduceGPU is ChannelDot (dot) or ChannelTotal on g (norm_cuda.go).
type channelReduceGPU struct {
	g   chanGeom
	dot bool
}
