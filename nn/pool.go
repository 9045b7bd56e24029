package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaxPool2dOpts are MaxPool2d's parameters, named as in
// torch.nn.functional.max_pool2d; pairs are (height, width).
type MaxPool2dOpts struct {
	// KernelSize is the window; both entries at least 1.
	KernelSize [2]int
	// Stride between windows; zero entries mean KernelSize (torch's
	// default).
	Stride [2]int
	// Padding: implicit −Inf added on each side, at most half the
	// kernel.
	Padding [2]int
	// Dilation: spacing between window positions; zero entries mean 1.
	Dilation [2]int
	// CeilMode rounds the output size up (a last window may hang over the
	// bottom or right edge, but starts inside the input or its padding).
	CeilMode bool
}

// MaxPool2d is torch.nn.functional.max_pool2d: the maximum of each window
// of each channel. input [N, C, H, W] → [N, C, Hout, Wout] with
// Hout = (H + 2·Padding − Dilation·(k−1) − 1)/Stride + 1 (rounded up with
// CeilMode, a last window hanging over the edge then counting if it starts
// inside the input or its left padding), likewise Wout. The maximum is
// torch's: the first of equal values, NaN if the window has one (the
// last), −Inf for a window of −Inf or one entirely in the padding (with
// dilation; there a maximum of −0 elsewhere comes out as +0).
//
// The gradient goes to the position of each window's maximum (computed
// once, an index with no derivative): a gather and its scatter-add, a
// linear pair, so MaxPool2d is differentiable to every order (zero beyond
// the first w.r.t. input positions, as torch's).
//
// Errors when the node is built: input not a float32/float64 rank-4 node,
// a kernel size below 1, negative stride, padding or dilation, padding
// more than half the kernel, an output size below 1, a height or width
// above 2^24 (2^20 with 32-bit ints), a result of more elements than
// maxElems (2^30; 2^26 with 32-bit ints).
func MaxPool2d(input *gorgonia.Node, opts MaxPool2dOpts) (*gorgonia.Node, error) {
	const name = "MaxPool2d"
	stride := opts.Stride
	for i := range stride {
		if stride[i] == 0 {
			stride[i] = opts.KernelSize[i]
		}
	}
	g, err := poolGeom(name, input, opts.KernelSize, stride, opts.Padding, one(opts.Dilation), opts.CeilMode, true)
	if err != nil {
		return nil, err
	}
	return maxPool(name, input, g, fmt.Sprintf("%+v", opts))
}

// AdaptiveMaxPool2d is torch.nn.functional.adaptive_max_pool2d: output
// position o of outputSize reads the window [⌊o·H/Hout⌋, ⌈(o+1)·H/Hout⌉)
// (likewise along W) and takes its maximum as MaxPool2d. input
// [N, C, H, W] → [N, C, outputSize[0], outputSize[1]]; differentiable to
// every order as MaxPool2d. Errors: input not a float rank-4 node with H,
// W ≥ 1, an output size below 1.
func AdaptiveMaxPool2d(input *gorgonia.Node, outputSize [2]int) (*gorgonia.Node, error) {
	const name = "AdaptiveMaxPool2d"
	g, err := adaptiveGeom(name, input, outputSize)
	if err != nil {
		return nil, err
	}
	return maxPool(name, input, g, fmt.Sprint(outputSize))
}

// AvgPool2dOpts are AvgPool2d's parameters, named as in
// torch.nn.functional.avg_pool2d; pairs are (height, width).
type AvgPool2dOpts struct {
	// KernelSize is the window; both entries at least 1.
	KernelSize [2]int
	// Stride between windows; zero entries mean KernelSize.
	Stride [2]int
	// Padding: implicit zeros on each side, at most half the kernel.
	Padding [2]int
	// CeilMode rounds the output size up, as MaxPool2dOpts.CeilMode.
	CeilMode bool
	// ExcludePad divides by the number of input positions in the window
	// (torch's count_include_pad=False); false divides by the window's
	// size with the padding (torch's default, count_include_pad=True).
	ExcludePad bool
	// DivisorOverride, if not 0, is the divisor of every window.
	DivisorOverride int
}

// AvgPool2d is torch.nn.functional.avg_pool2d: the mean of each window of
// each channel. input [N, C, H, W] → [N, C, Hout, Wout], sizes as
// MaxPool2d's (dilation 1). The divisor is DivisorOverride, or the window's
// size counting padding but not the part hanging over the edge in
// CeilMode, or with ExcludePad its size inside the input. Linear in the
// input, with its transpose as its gradient: differentiable to every
// order.
//
// Errors when the node is built: as MaxPool2d's, and a negative
// DivisorOverride.
func AvgPool2d(input *gorgonia.Node, opts AvgPool2dOpts) (*gorgonia.Node, error) {
	const name = "AvgPool2d"
	if opts.DivisorOverride < 0 {
		return nil, fmt.Errorf("nn: %s: negative DivisorOverride %d", name, opts.DivisorOverride)
	}
	stride := opts.Stride
	for i := range stride {
		if stride[i] == 0 {
			stride[i] = opts.KernelSize[i]
		}
	}
	g, err := poolGeom(name, input, opts.KernelSize, stride, opts.Padding, [2]int{1, 1}, opts.CeilMode, true)
	if err != nil {
		return nil, err
	}
	return avgPool(name, input, g, cpu.AvgDivisor{IncludePad: !opts.ExcludePad, Override: opts.DivisorOverride}, fmt.Sprintf("%+v", opts))
}

// AdaptiveAvgPool2d is torch.nn.functional.adaptive_avg_pool2d: the mean of
// AdaptiveMaxPool2d's windows. input [N, C, H, W] → [N, C, outputSize[0],
// outputSize[1]]; linear, differentiable to every order. Errors: as
// AdaptiveMaxPool2d's.
func AdaptiveAvgPool2d(input *gorgonia.Node, outputSize [2]int) (*gorgonia.Node, error) {
	const name = "AdaptiveAvgPool2d"
	g, err := adaptiveGeom(name, input, outputSize)
	if err != nil {
		return nil, err
	}
	return avgPool(name, input, g, cpu.AvgDivisor{}, fmt.Sprint(outputSize))
}

// poolGeom checks a pooling's arguments and returns its geometry.
func poolGeom(name string, input *gorgonia.Node, k, stride, pad, dil [2]int, ceil, halfPad bool) (cpu.Pool2dGeom, error) {
	if err := checkNodes(name, []namedNode{{input, "input", 4, false}}); err != nil {
		return cpu.Pool2dGeom{}, err
	}
	s := input.Shape()
	for i, axis := range []string{"height", "width"} {
		switch {
		case k[i] < 1 || k[i] > 1<<24:
			return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: KernelSize %v must be in [1, 2^24]", name, k)
		case stride[i] < 1 || stride[i] > 1<<24:
			return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: Stride %v must be in [0, 2^24]", name, stride)
		case dil[i] < 1 || dil[i] > 1<<24:
			return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: Dilation %v must be in [0, 2^24]", name, dil)
		case pad[i] < 0 || halfPad && pad[i] > k[i]/2:
			return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: Padding %v must be non-negative and at most half of KernelSize %v", name, pad, k)
		case s[2+i] < 1 || s[2+i] > maxAxis:
			return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: input %s %d must be in [1, %d]", name, axis, s[2+i], maxAxis)
		}
	}
	ho := cpu.PoolOutSize(s[2], k[0], stride[0], pad[0], dil[0], ceil)
	wo := cpu.PoolOutSize(s[3], k[1], stride[1], pad[1], dil[1], ceil)
	if ho < 1 || wo < 1 {
		return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: output size %dx%d too small: input %v, KernelSize %v, Stride %v, Padding %v, Dilation %v%s", name, ho, wo, s, k, stride, pad, dil, nhwcHint(input, -1))
	}
	if err := checkElems(name, "the result", s[0], s[1], ho, wo); err != nil {
		return cpu.Pool2dGeom{}, err
	}
	return cpu.Pool2dGeom{Planes: s[0] * s[1], H: s[2], W: s[3],
		Rows: cpu.NewPoolAxis(s[2], ho, k[0], stride[0], pad[0], dil[0]),
		Cols: cpu.NewPoolAxis(s[3], wo, k[1], stride[1], pad[1], dil[1])}, nil
}

// adaptiveGeom checks an adaptive pooling's arguments.
func adaptiveGeom(name string, input *gorgonia.Node, out [2]int) (cpu.Pool2dGeom, error) {
	if err := checkNodes(name, []namedNode{{input, "input", 4, false}}); err != nil {
		return cpu.Pool2dGeom{}, err
	}
	s := input.Shape()
	if out[0] < 1 || out[1] < 1 || out[0] > maxAxis || out[1] > maxAxis {
		return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: output size %v must be in [1, %d]", name, out, maxAxis)
	}
	if s[2] < 1 || s[3] < 1 || s[2] > maxAxis || s[3] > maxAxis {
		return cpu.Pool2dGeom{}, fmt.Errorf("nn: %s: input %v must have a height and width in [1, %d]", name, s, maxAxis)
	}
	if err := checkElems(name, "the result", s[0], s[1], out[0], out[1]); err != nil {
		return cpu.Pool2dGeom{}, err
	}
	return cpu.Pool2dGeom{Planes: s[0] * s[1], H: s[2], W: s[3],
		Rows: cpu.NewAdaptiveAxis(s[2], out[0]), Cols: cpu.NewAdaptiveAxis(s[3], out[1])}, nil
}

// outShape is the pooled shape of input shape s.
func outShape(s tensor.Shape, g *cpu.Pool2dGeom) tensor.Shape {
	return tensor.Shape{s[0], s[1], g.Rows.Out(), g.Cols.Out()}
}

// maxPool is the argmax index (no gradient) and the pair gather /
// scatter-add.
func maxPool(name string, input *gorgonia.Node, g cpu.Pool2dGeom, params string) (*gorgonia.Node, error) {
	in, out := input.Shape().Clone(), outShape(input.Shape(), &g)
	hw, l := g.H*g.W, g.Rows.Out()*g.Cols.Out()
	argmax := ad.OpSpec{
		Name: name + "Argmax", Params: params + fmt.Sprint(in), InputDims: []int{4}, OutputDims: 4,
		OutputDtype: tensor.Int, DiffWRT: []bool{false}, KernelOverwrites: true, // −1 for an empty window
		Shape:  ad.FixedShape("nn: "+name, in, out),
		Kernel: ad.Floats(argmaxKernel[float32](&g), argmaxKernel[float64](&g)),
	}
	idx, err := ad.Apply(withCUDA(argmax, maxPoolGPU{&g, poolArgmax}), input)
	if err != nil {
		return nil, err
	}
	pair := func(opName string, from, to tensor.Shape, k ad.Kernel) ad.OpSpec {
		return ad.OpSpec{
			Name: opName, Params: params + fmt.Sprint(in), InputDims: []int{4, 4}, OutputDims: 4,
			InputDtypes: []tensor.Dtype{{}, tensor.Int}, DiffWRT: []bool{true, false},
			Shape: func(s []tensor.Shape) (tensor.Shape, error) {
				if !slices.Equal(s[0], from) || !slices.Equal(s[1], out) {
					return nil, fmt.Errorf("nn: %s: inputs %v and %v, want %v and %v", opName, s[0], s[1], from, out)
				}
				return to.Clone(), nil
			},
			Kernel: k,
		}
	}
	gatherSpec := pair(name+"Gather", in, out, ad.Floats(gatherKernel[float32](g.Planes, hw, l, true), gatherKernel[float64](g.Planes, hw, l, true)))
	gatherSpec.KernelOverwrites = true // 0 for an empty window
	gather, _ := ad.LinearPair(
		withCUDA(gatherSpec, maxPoolGPU{&g, poolGather}),
		withCUDA(pair(name+"ScatterAdd", out, in, ad.Floats(gatherKernel[float32](g.Planes, hw, l, false), gatherKernel[float64](g.Planes, hw, l, false))), maxPoolGPU{&g, poolScatterAdd}))
	y, err := ad.Apply(gather, input, idx)
	if err != nil || !g.Rows.Empty() && !g.Cols.Empty() || g.Planes == 0 {
		return y, err // (Gorgonia's Add panics on empty tensors)
	}
	// Windows with no input position (all padding) are −Inf, as torch's:
	// a constant added to the linear gather (it would add −0 + 0 = +0 to
	// a maximum of −0 elsewhere, so only where such windows exist).
	fill := pair(name+"EmptyFill", in, out, ad.Floats(emptyFillKernel[float32](g.Planes*l), emptyFillKernel[float64](g.Planes*l)))
	fill.DiffWRT = []bool{false, false}
	f, err := ad.Apply(withCUDA(fill, maxPoolGPU{&g, poolEmptyFill}), input, idx)
	if err != nil {
		return nil, err
	}
	return gorgonia.Add(y, f)
}

// avgPool is the pair AvgPool / its transpose.
func avgPool(name string, input *gorgonia.Node, g cpu.Pool2dGeom, div cpu.AvgDivisor, params string) (*gorgonia.Node, error) {
	in, out := input.Shape().Clone(), outShape(input.Shape(), &g)
	spec := func(opName string, from, to tensor.Shape, k ad.Kernel) ad.OpSpec {
		return ad.OpSpec{
			Name: opName, Params: params + fmt.Sprint(in), InputDims: []int{4}, OutputDims: 4,
			Shape:  ad.FixedShape("nn: "+opName, from, to),
			Kernel: k,
			// AvgPool and AvgPoolTSet write every element.
			KernelOverwrites: true,
		}
	}
	fwd, _ := ad.LinearPair(
		withCUDA(spec(name, in, out, ad.Floats(avgKernel[float32](&g, div, true), avgKernel[float64](&g, div, true))), avgPoolGPU{&g, div, true}),
		withCUDA(spec(name+"Transpose", out, in, ad.Floats(avgKernel[float32](&g, div, false), avgKernel[float64](&g, div, false))), avgPoolGPU{&g, div, false}))
	return ad.Apply(fwd, input)
}

// argmaxKernel is MaxPoolArgmax's kernel.
func argmaxKernel[T ad.Float](g *cpu.Pool2dGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.MaxPoolArgmax(g, in[0].Data, out.Ints)
		return nil
	}
}

// gatherKernel is the gather by argmax (gather) or its scatter-add.
func gatherKernel[T ad.Float](planes, hw, l int, gather bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if gather {
			cpu.PlaneGather(in[0].Data, in[1].Ints, out.Data, planes, hw, l)
		} else {
			cpu.PlaneScatterAdd(in[0].Data, in[1].Ints, out.Data, planes, hw, l)
		}
		return nil
	}
}

// avgKernel is the average pooling (forward) or its transpose, into a
// result it overwrites.
func avgKernel[T ad.Float](g *cpu.Pool2dGeom, div cpu.AvgDivisor, forward bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return linearKernel(forward, func(in, out []T) { cpu.AvgPool(g, div, in, out) }, func(in, out []T) { cpu.AvgPoolTSet(g, div, in, out) })
}

// emptyFillKernel is cpu.EmptyWindowFill on the first n elements.
func emptyFillKernel[T ad.Float](n int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.EmptyWindowFill(out.Data[:n], in[1].Ints)
		return nil
	}
}

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// poolKind picks one of max pooling's ops.
type poolKind int

const (
	poolArgmax     poolKind = iota // the argmax index
	poolGather                     // the gather by argmax
	poolScatterAdd                 // its transpose
	poolEmptyFill                  // −Inf where a window is empty
)

// maxPoolGPU is one of MaxPool2d's (and AdaptiveMaxPool2d's) ops on
// geometry g (pool_cuda.go).
type maxPoolGPU struct {
	g    *cpu.Pool2dGeom
	kind poolKind
}

// avgPoolGPU is AvgPool2d (or AdaptiveAvgPool2d) on geometry g, or with
// !forward its transpose (pool_cuda.go).
type avgPoolGPU struct {
	g       *cpu.Pool2dGeom
	div     cpu.AvgDivisor
	forward bool
}
