package detection

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/gemm"
	"github.com/gops-dev/gops/internal/matprod"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The fused inference ops of the models' forward-only graphs (the runner's,
// which Forward runs): a convolution with the elementwise passes after it
// (FrozenBatchNorm2d's or eval BatchNorm2d's affine step, a residual sum,
// ReLU) done on each
// block of its output while the block is in cache (cpu.ConvEpilogue), and
// GroupNorm with its ReLU (cpu.GroupNormAffineReLU). Their results are
// bitwise those of the ops they replace; they have no gradient: Build
// (and every part's exported Forward) builds the differentiable graph of
// separate ops.

// errNoGradient is the fused ops' Backward.
func errNoGradient(name string) func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
	return func(gorgonia.Nodes, *gorgonia.Node, *gorgonia.Node) (gorgonia.Nodes, error) {
		return nil, fmt.Errorf("detection: %s is a fused inference op without a gradient; Build builds the differentiable graph", name)
	}
}

// fusedConv is nn.Conv2d(x, wt, bias, opts) (bias may be nil), then
// x·scale[c] + shift[c] if scale is not nil (FrozenBatchNorm2d's
// ChannelAffine; shift with it), then + residual if not nil (gorgonia.Add
// of the result and residual), then ReLU if relu: one op, bitwise the
// chain.
func fusedConv(x, wt, bias *gorgonia.Node, opts nn.Conv2dOpts, scale, shift, residual *gorgonia.Node, relu bool) (*gorgonia.Node, error) {
	g, err := fusedGeom(x.Shape(), wt.Shape(), opts)
	if err != nil {
		return nil, err
	}
	in := gorgonia.Nodes{x, wt}
	for _, n := range []*gorgonia.Node{bias, scale, shift, residual} {
		if n != nil {
			in = append(in, n)
		}
	}
	return ad.Apply(fusedConvSpec(g, bias != nil, scale != nil, residual != nil, relu), in...)
}

// fusedGeom is the geometry of Conv2d on an input of shape xs with a
// weight of shape ws; an error where Conv2d's would be one.
func fusedGeom(xs, ws tensor.Shape, opts nn.Conv2dOpts) (cpu.ConvGeom, error) {
	one := func(v int) int { return max(v, 1) }
	if xs.Dims() != 4 || ws.Dims() != 4 {
		return cpu.ConvGeom{}, fmt.Errorf("fused Conv2d: input %v and weight %v must be 4-D", xs, ws)
	}
	g := cpu.ConvGeom{N: xs[0], C: xs[1], H: xs[2], W: xs[3], Cout: ws[0], Groups: one(opts.Groups), KH: ws[2], KW: ws[3],
		SH: one(opts.Stride[0]), SW: one(opts.Stride[1]), PH: opts.Padding[0], PW: opts.Padding[1],
		DH: one(opts.Dilation[0]), DW: one(opts.Dilation[1])}
	if g.C%g.Groups != 0 || g.Cout%g.Groups != 0 || ws[1] != g.C/g.Groups || g.PH < 0 || g.PW < 0 {
		return cpu.ConvGeom{}, fmt.Errorf("fused Conv2d: weight %v, groups %d and padding %v do not fit input %v", ws, g.Groups, opts.Padding, xs)
	}
	var err error
	if g.HO, err = cpu.OutSize(g.H, g.KH, g.SH, g.PH, g.DH); err != nil {
		return cpu.ConvGeom{}, fmt.Errorf("fused Conv2d: %w", err)
	}
	if g.WO, err = cpu.OutSize(g.W, g.KW, g.SW, g.PW, g.DW); err != nil {
		return cpu.ConvGeom{}, fmt.Errorf("fused Conv2d: %w", err)
	}
	return g, nil
}

// fusedConvSpec is fusedConv's op: inputs x, weight, then the bias, scale
// and shift, residual that it has.
func fusedConvSpec(g cpu.ConvGeom, hasBias, hasAffine, hasResidual bool, relu bool) ad.OpSpec {
	out := tensor.Shape{g.N, g.Cout, g.HO, g.WO}
	want := []tensor.Shape{{g.N, g.C, g.H, g.W}, {g.Cout, g.C / g.Groups, g.KH, g.KW}}
	if hasBias {
		want = append(want, tensor.Shape{g.Cout})
	}
	if hasAffine {
		want = append(want, tensor.Shape{g.Cout}, tensor.Shape{g.Cout})
	}
	if hasResidual {
		want = append(want, out)
	}
	dims := make([]int, len(want))
	for i, s := range want {
		dims[i] = s.Dims()
	}
	const name = "FusedConv2d"
	return ad.OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("%+v bias %v affine %v residual %v relu %v", g, hasBias, hasAffine, hasResidual, relu),
		InputDims:  dims,
		OutputDims: 4,
		Shape: func(s []tensor.Shape) (tensor.Shape, error) {
			for i := range want {
				if !slices.Equal(s[i], want[i]) {
					return nil, fmt.Errorf("detection: %s: inputs %v, want %v", name, s, want)
				}
			}
			return out.Clone(), nil
		},
		Kernel:           ad.Floats(fusedConvKernel[float32](g, hasBias, hasAffine, hasResidual, relu), fusedConvKernel[float64](g, hasBias, hasAffine, hasResidual, relu)),
		KernelOverwrites: true, // ConvEpilogue writes every element
		Backward:         errNoGradient(name),
	}
}

// fusedConvKernel is cpu.ConvEpilogue on the product nn's convolutions
// run (matprod.CPU).
func fusedConvKernel[T gemm.Float](g cpu.ConvGeom, hasBias, hasAffine, hasResidual, relu bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		var bias []T
		ep := &cpu.Epilogue[T]{ReLU: relu}
		i := 2
		if hasBias {
			bias, i = in[i].Data, i+1
		}
		if hasAffine {
			ep.Scale, ep.Shift, i = in[i].Data, in[i+1].Data, i+2
		}
		if hasResidual {
			ep.Residual = in[i].Data
		}
		return cpu.ConvEpilogue(&g, matprod.CPU[T](), out.Data, in[0].Data, in[1].Data, bias, ep)
	}
}

// frozenAffine returns the [C] scale and shift of the FrozenBatchNorm2d
// called name (its four buffers in w) in graph g, op for op as
// nn.FrozenBatchNorm2d computes them (so bitwise its):
// scale = weight·(running_var + eps)^(−1/2) (AddConst, Sqrt, Inverse,
// HadamardProd; no AddConst for eps 0), shift = bias − running_mean·scale.
func frozenAffine(w *Weights, name string, eps float64, g *gorgonia.ExprGraph) (scale, shift *gorgonia.Node, err error) {
	var ns [4]*gorgonia.Node
	for i, s := range []string{"weight", "bias", "running_mean", "running_var"} {
		if ns[i], err = w.Node(g, key(name, s)); err != nil {
			return nil, nil, err
		}
	}
	b := ad.NewBuilder(ns[0])
	v := ns[3]
	if eps != 0 {
		v = b.AddConst(v, eps)
	}
	scale = b.HadamardProd(ns[0], b.Inverse(b.Sqrt(v)))
	shift = b.Sub(ns[1], b.HadamardProd(ns[2], scale))
	if err := b.Err(); err != nil {
		return nil, nil, fmt.Errorf("detection: %s: %w", name, err)
	}
	return scale, shift, nil
}

// batchNormEvalAffine returns the [C] scale and shift of the eval-mode
// BatchNorm2d called name (weight and bias nodes, running statistics
// values in w) in graph g, op for op as nn.BatchNorm's eval mode computes
// them (so bitwise its, whose normalisation is ChannelAffine too):
// scale = (running_var + eps)^(−1/2)·weight (AddConst, Sqrt, Inverse,
// HadamardProd), shift = bias + −(running_mean·scale); eps > 0.
func batchNormEvalAffine(w *Weights, name string, eps float64, g *gorgonia.ExprGraph) (scale, shift *gorgonia.Node, err error) {
	var ns [2]*gorgonia.Node
	var stats [2]*gorgonia.Node
	for i, s := range []string{"weight", "bias"} {
		if ns[i], err = w.Node(g, key(name, s)); err != nil {
			return nil, nil, err
		}
	}
	for i, s := range []string{"running_mean", "running_var"} {
		v, err := w.Value(key(name, s))
		if err != nil {
			return nil, nil, err
		}
		// A node holding the tensor, read when the graph runs (as
		// nn.BatchNorm's).
		stats[i] = gorgonia.NewTensor(g, v.Dtype(), 1, gorgonia.WithShape(v.Shape()...), gorgonia.WithValue(v),
			gorgonia.WithName(fmt.Sprintf("fused.%s%p", s, v)))
	}
	b := ad.NewBuilder(ns[0])
	scale = b.HadamardProd(b.Inverse(b.Sqrt(b.AddConst(stats[1], eps))), ns[0])
	shift = b.Add(ns[1], b.Neg(b.HadamardProd(stats[0], scale)))
	if err := b.Err(); err != nil {
		return nil, nil, fmt.Errorf("detection: %s: %w", name, err)
	}
	return scale, shift, nil
}

// groupNormReLU is nn.GroupNorm(x, groups, weight, bias, eps) then
// nn.ReLU as one op (cpu.GroupNormAffineReLU), bitwise the two; x
// [N, C, H, W], weight and bias [C], eps > 0.
func groupNormReLU(x, weight, bias *gorgonia.Node, groups int, eps float64) (*gorgonia.Node, error) {
	s := x.Shape()
	if s.Dims() != 4 || groups < 1 || s[1]%groups != 0 || !(eps > 0) {
		return nil, fmt.Errorf("detection: GroupNorm+ReLU: input %v, %d groups, eps %v", s, groups, eps)
	}
	n, c := s[0], s[1]
	rows := n * groups
	rg := cpu.RowGeom{Rows: rows, N: s.TotalSize() / rows, Eps: eps}
	cg := cpu.ChanGeom{Outer: n, C: c, Inner: s[2] * s[3]}
	const name = "FusedGroupNormReLU"
	want := []tensor.Shape{s.Clone(), {c}, {c}}
	return ad.Apply(ad.OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("%v groups %d eps %v", s, groups, eps),
		InputDims:  []int{4, 1, 1},
		OutputDims: 4,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for i := range want {
				if !slices.Equal(in[i], want[i]) {
					return nil, fmt.Errorf("detection: %s: inputs %v, want %v", name, in, want)
				}
			}
			return want[0].Clone(), nil
		},
		Kernel:           ad.Floats(groupNormReLUKernel[float32](rg, cg), groupNormReLUKernel[float64](rg, cg)),
		KernelOverwrites: true, // GroupNormAffine writes every element
		Backward:         errNoGradient(name),
	}, x, weight, bias)
}

func groupNormReLUKernel[T ad.Float](rg cpu.RowGeom, cg cpu.ChanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.GroupNormAffineReLU(rg, cg, out.Data, in[0].Data, in[1].Data, in[2].Data)
		return nil
	}
}
