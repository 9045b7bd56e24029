package nn

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/internal/gemm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Conv2dOpts are Conv2d's parameters, named as in
// torch.nn.functional.conv2d; pairs are (height, width). The zero value is
// torch's default.
type Conv2dOpts struct {
	// Stride between output positions; zero entries mean 1.
	Stride [2]int
	// Padding: zeros added on each side of the input.
	Padding [2]int
	// Dilation: spacing between kernel positions; zero entries mean 1.
	Dilation [2]int
	// Groups: input and output channels split into Groups independent
	// convolutions; zero means 1.
	Groups int
}

// Conv2d is the 2-D convolution (cross-correlation) of
// torch.nn.functional.conv2d. bias may be nil.
//
// Shapes: input [N, Cin, H, W], weight [Cout, Cin/Groups, kh, kw], bias
// [Cout]; the result is [N, Cout, Hout, Wout] with
// Hout = (H + 2·Padding − Dilation·(kh−1) − 1)/Stride + 1, likewise Wout.
// All float32 or all float64.
//
// The result is differentiable to every order w.r.t. input, weight and
// bias: Conv2d, ConvTranspose2d (its input gradient) and the weight
// gradient's correlation are one family closed under differentiation,
// each computed per sample as im2col (a [Cin·kh·kw, Hout·Wout] buffer, as
// torch's) and a matrix product, which runs where MatMul's does: on gops'
// own product (package gemm), or on OpenBLAS when the program installed it
// (openblas.Use). Either way results are bitwise the same for any
// GOMAXPROCS. N = 0 gives an empty result and zero gradients.
//
// Errors when the node is built: nil input or weight, wrong ranks or
// dtypes, Cin not divisible by Groups or Cout not by Groups, weight.shape[1]
// not Cin/Groups, bias not [Cout], negative padding, negative or zero-size
// sizes, a dilated kernel larger than the padded input.
func Conv2d(input, weight, bias *gorgonia.Node, opts Conv2dOpts) (*gorgonia.Node, error) {
	g, err := convGeom("Conv2d", input, weight, bias, opts)
	if err != nil {
		return nil, err
	}
	if bias != nil {
		return ad.Apply(convBiasSpec(g), input, weight, bias)
	}
	return ad.Apply(convSpec(g), input, weight)
}

// ConvTranspose2dOpts are ConvTranspose2d's parameters, named as in
// torch.nn.functional.conv_transpose2d; pairs are (height, width). The zero
// value is torch's default.
type ConvTranspose2dOpts struct {
	// Stride of the convolution this is the transpose of; zero entries
	// mean 1.
	Stride [2]int
	// Padding of that convolution: Padding rows and columns are cut from
	// each side of the full result.
	Padding [2]int
	// OutputPadding: rows and columns added at the bottom and right of
	// the result (less than Stride), to pick one of the input sizes a
	// strided convolution maps to the same output size.
	OutputPadding [2]int
	// Dilation: spacing between kernel positions; zero entries mean 1.
	Dilation [2]int
	// Groups; zero means 1.
	Groups int
}

// ConvTranspose2d is torch.nn.functional.conv_transpose2d: the gradient
// of Conv2d w.r.t. its input, as an op (a "deconvolution"). bias may be
// nil.
//
// Shapes: input [N, Cin, H, W], weight [Cin, Cout/Groups, kh, kw] (torch's
// layout for the transpose), bias [Cout]; the result is [N, Cout, Hout,
// Wout] with Hout = (H−1)·Stride − 2·Padding + Dilation·(kh−1) +
// OutputPadding + 1, likewise Wout. It is Conv2d's family, differentiable
// to every order w.r.t. input, weight and bias.
//
// Errors when the node is built: as Conv2d's, and OutputPadding negative
// or not smaller than Stride (torch also accepts one smaller than Dilation
// only; gops does not), or a result size below 1.
func ConvTranspose2d(input, weight, bias *gorgonia.Node, opts ConvTranspose2dOpts) (*gorgonia.Node, error) {
	const name = "ConvTranspose2d"
	if err := checkNodes(name, []namedNode{{input, "input", 4, false}, {weight, "weight", 4, false}, {bias, "bias", 1, true}}); err != nil {
		return nil, err
	}
	is, ws := input.Shape(), weight.Shape()
	groups := max(opts.Groups, 1)
	stride, dil := one(opts.Stride), one(opts.Dilation)
	for _, d := range []struct {
		v    int
		what string
	}{{is[1], "input channels"}, {is[2], "input height"}, {is[3], "input width"}, {ws[1], "weight.shape[1] (output channels / Groups)"},
		{ws[2], "kernel height"}, {ws[3], "kernel width"}} {
		if d.v < 1 || d.v > maxAxis {
			return nil, fmt.Errorf("nn: %s: %s is %d, must be in [1, %d]", name, d.what, d.v, maxAxis)
		}
	}
	for _, p := range []struct {
		v    [2]int
		what string
	}{{opts.Stride, "Stride"}, {opts.Padding, "Padding"}, {opts.Dilation, "Dilation"}} {
		if p.v[0] < 0 || p.v[1] < 0 || p.v[0] > maxAxis || p.v[1] > maxAxis {
			return nil, fmt.Errorf("nn: %s: %s %v must be in [0, %d]", name, p.what, p.v, maxAxis)
		}
	}
	for i := 0; i < 2; i++ {
		if op := opts.OutputPadding[i]; op < 0 || op >= stride[i] {
			return nil, fmt.Errorf("nn: %s: OutputPadding %v must be non-negative and smaller than Stride %v", name, opts.OutputPadding, stride)
		}
	}
	if opts.Groups < 0 {
		return nil, fmt.Errorf("nn: %s: negative Groups %d", name, opts.Groups)
	}
	if ws[0] != is[1] {
		return nil, fmt.Errorf("nn: %s: weight.shape[0] %d differs from the input channels %d (weight is [Cin, Cout/Groups, kh, kw])%s", name, ws[0], is[1], nhwcHint(input, ws[0]))
	}
	if is[1]%groups != 0 {
		return nil, fmt.Errorf("nn: %s: input channels %d not divisible by Groups %d", name, is[1], groups)
	}
	var out [2]int
	for i := 0; i < 2; i++ {
		o := int64(is[2+i]-1)*int64(stride[i]) - 2*int64(opts.Padding[i]) + int64(dil[i])*int64(ws[2+i]-1) + int64(opts.OutputPadding[i]) + 1
		if o > maxAxis {
			return nil, fmt.Errorf("nn: %s: result size %d above %d: input %v, kernel %v, Stride %v, Dilation %v", name, o, maxAxis, is[2:], ws[2:], stride, dil)
		}
		out[i] = int(o)
		if out[i] < 1 {
			return nil, fmt.Errorf("nn: %s: result size %v: input %v, kernel %v, Stride %v, Padding %v, Dilation %v", name, out, is[2:], ws[2:], stride, opts.Padding, dil)
		}
	}
	// The convolution this is the transpose of maps [N, Cout, Hout, Wout]
	// to [N, Cin, H, W] with weight [Cin, Cout/Groups, kh, kw].
	g, err := newGeom(name, tensor.Shape{is[0], ws[1] * groups, out[0], out[1]}, ws, groups, stride, opts.Padding, dil)
	if err != nil {
		return nil, err
	}
	if g.HO != is[2] || g.WO != is[3] {
		return nil, fmt.Errorf("nn: %s: internal size mismatch %dx%d for input %v", name, g.HO, g.WO, is)
	}
	if bias != nil && !slices.Equal(bias.Shape(), tensor.Shape{g.C}) {
		return nil, fmt.Errorf("nn: %s: bias shape %v, want (%d)", name, bias.Shape(), g.C)
	}
	y, err := ad.Apply(convTSpec(g), input, weight)
	if err != nil || bias == nil {
		return y, err
	}
	return addBias(y, bias)
}

// namedNode is an argument to check: its name and rank; nil is allowed
// for "bias" only.
type namedNode struct {
	n        *gorgonia.Node
	name     string
	dims     int
	optional bool // nil allowed
}

// checkNodes checks ranks, a common float dtype and a common graph.
func checkNodes(op string, ns []namedNode) error {
	var dt tensor.Dtype
	var first *namedNode
	for i, a := range ns {
		if a.n == nil {
			if a.optional {
				continue
			}
			return fmt.Errorf("nn: %s: %s is nil", op, a.name)
		}
		if first == nil {
			first = &ns[i]
		} else if a.n.Graph() != first.n.Graph() {
			return fmt.Errorf("nn: %s: %s is a node of another graph than %s", op, a.name, first.name)
		}
		if d := a.n.Dtype(); d != tensor.Float32 && d != tensor.Float64 {
			return fmt.Errorf("nn: %s: %s dtype %v, want float32 or float64", op, a.name, d)
		}
		if a.n.IsScalar() || a.n.Shape().Dims() != a.dims {
			return fmt.Errorf("nn: %s: %s must have rank %d, got shape %v", op, a.name, a.dims, a.n.Shape())
		}
		if dt.Type == nil {
			dt = a.n.Dtype()
		} else if a.n.Dtype() != dt {
			return fmt.Errorf("nn: %s: %s dtype %v differs from %s dtype %v", op, a.name, a.n.Dtype(), ns[0].name, dt)
		}
	}
	return nil
}

func one(p [2]int) [2]int { return [2]int{max(p[0], 1), max(p[1], 1)} }

// convGeom checks Conv2d's arguments and returns its geometry.
func convGeom(name string, input, weight, bias *gorgonia.Node, opts Conv2dOpts) (cpu.ConvGeom, error) {
	if err := checkNodes(name, []namedNode{{input, "input", 4, false}, {weight, "weight", 4, false}, {bias, "bias", 1, true}}); err != nil {
		return cpu.ConvGeom{}, err
	}
	if opts.Groups < 0 {
		return cpu.ConvGeom{}, fmt.Errorf("nn: %s: negative Groups %d", name, opts.Groups)
	}
	g, err := newGeom(name, input.Shape(), weight.Shape(), max(opts.Groups, 1), one(opts.Stride), opts.Padding, one(opts.Dilation))
	if err != nil {
		return g, fmt.Errorf("%w%s", err, nhwcHint(input, weight.Shape()[1]*max(opts.Groups, 1)))
	}
	if bias != nil && !slices.Equal(bias.Shape(), tensor.Shape{g.Cout}) {
		return g, fmt.Errorf("nn: %s: bias shape %v, want (%d)", name, bias.Shape(), g.Cout)
	}
	return g, nil
}

// Limits that keep index arithmetic from overflowing and refuse, with an
// error when the node is built, tensors and buffers that could not be
// allocated (Go's out-of-memory is fatal, not a panic to recover):
// maxAxis bounds every size and window table, maxElems the elements of
// every result and im2col buffer. 2^24 and 2^30 with 64-bit ints, 2^20
// and 2^26 with 32-bit ones.
const (
	maxAxis  = 1 << (24 - (64-bits.UintSize)/8)
	maxElems = 1 << (30 - (64-bits.UintSize)/8)
	maxSize  = maxAxis
)

// checkElems is an error unless the product of sizes (each ≥ 0) is at
// most maxElems; it multiplies without overflow.
func checkElems(op, what string, sizes ...int) error {
	p := 1
	for _, d := range sizes {
		if d != 0 && p > maxElems/d {
			return fmt.Errorf("nn: %s: %s would have more than %d elements (sizes %v)", op, what, maxElems, sizes)
		}
		p *= d
	}
	return nil
}

// newGeom is the geometry of the convolution of an input of shape is by a
// weight of shape ws ([Cout, C/groups, kh, kw]).
func newGeom(name string, is, ws tensor.Shape, groups int, stride, pad, dil [2]int) (cpu.ConvGeom, error) {
	g := cpu.ConvGeom{N: is[0], C: is[1], H: is[2], W: is[3], Cout: ws[0], Groups: groups, KH: ws[2], KW: ws[3],
		SH: stride[0], SW: stride[1], PH: pad[0], PW: pad[1], DH: dil[0], DW: dil[1]}
	for _, d := range []struct {
		v    int
		what string
	}{{g.C, "input channels"}, {g.H, "input height"}, {g.W, "input width"}, {g.Cout, "output channels"},
		{ws[1], "weight.shape[1]"}, {g.KH, "kernel height"}, {g.KW, "kernel width"}} {
		if d.v < 1 || d.v > maxAxis {
			return g, fmt.Errorf("nn: %s: %s is %d, must be in [1, %d]", name, d.what, d.v, maxAxis)
		}
	}
	for _, p := range []struct {
		v    [2]int
		what string
	}{{stride, "Stride"}, {pad, "Padding"}, {dil, "Dilation"}} {
		if p.v[0] < 0 || p.v[1] < 0 || p.v[0] > maxAxis || p.v[1] > maxAxis {
			return g, fmt.Errorf("nn: %s: %s %v must be in [0, %d]", name, p.what, p.v, maxAxis)
		}
	}
	if g.C%groups != 0 || g.Cout%groups != 0 {
		return g, fmt.Errorf("nn: %s: input channels %d and output channels %d must be divisible by Groups %d", name, g.C, g.Cout, groups)
	}
	if ws[1] != g.C/groups {
		return g, fmt.Errorf("nn: %s: weight.shape[1] %d, want input channels / Groups = %d (weight is [Cout, Cin/Groups, kh, kw])", name, ws[1], g.C/groups)
	}
	var err error
	if g.HO, err = cpu.OutSize(g.H, g.KH, g.SH, g.PH, g.DH); err != nil {
		return g, fmt.Errorf("nn: %s: height: %w", name, err)
	}
	if g.WO, err = cpu.OutSize(g.W, g.KW, g.SW, g.PW, g.DW); err != nil {
		return g, fmt.Errorf("nn: %s: width: %w", name, err)
	}
	if g.N < 0 {
		return g, fmt.Errorf("nn: %s: negative batch size %d", name, g.N)
	}
	for _, e := range []struct {
		what  string
		sizes []int
	}{{"the input", []int{g.N, g.C, g.H, g.W}}, {"the weight", []int{g.Cout, ws[1], g.KH, g.KW}},
		{"the result", []int{g.N, g.Cout, g.HO, g.WO}}, {"the im2col buffer", []int{g.C, g.KH, g.KW, g.HO, g.WO}}} {
		if err := checkElems(name, e.what, e.sizes...); err != nil {
			return g, err
		}
	}
	return g, nil
}

func geomParams(g cpu.ConvGeom) string {
	return fmt.Sprintf("N=%d C=%d H=%d W=%d Cout=%d groups=%d k=%dx%d stride=%dx%d pad=%dx%d dil=%dx%d",
		g.N, g.C, g.H, g.W, g.Cout, g.Groups, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW)
}

// The family: with A(W) the convolution of geometry g as a linear map of
// its input,
//
//	conv(X, W)  = A(W)·X               [N, Cout, HO, WO]
//	convT(G, W) = A(W)ᵀ·G              [N, C, H, W]
//	convW(X, G) = ∂/∂W <A(W)·X, G>      [Cout, C/groups, KH, KW]
//
// and, for upstream U:
//
//	conv:  ∂X = convT(U, W), ∂W = convW(X, U)
//	convT: ∂G = conv(U, W),  ∂W = convW(U, G)
//	convW: ∂X = convT(G, U), ∂G = conv(X, U)
func convSpec(g cpu.ConvGeom) ad.OpSpec {
	x, w, out := tensor.Shape{g.N, g.C, g.H, g.W}, weightShape(g), tensor.Shape{g.N, g.Cout, g.HO, g.WO}
	spec := convFamilySpec("Conv2d", g, x, w, out, ad.Floats(convKernel[float32](g, convForward), convKernel[float64](g, convForward)),
		func(in gorgonia.Nodes, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(u)
			return b.Nodes(b.Apply(convTSpec(g), u, in[1]), b.Apply(convWSpec(g), in[0], u))
		})
	spec.KernelOverwrites = convOverwrites(g, convForward)
	return withCUDA(spec, convGPU{g, convForward, false})
}

// convOverwrites says whether cpu.Conv in mode writes every element of its
// result, which then need not be cleared first (ad.OpSpec's
// KernelOverwrites): the forward member's products have beta 0 (product
// writes c without reading it) and cover every sample, the weight
// gradient's first sample's product has beta 0 when there is a sample;
// the input gradient adds its columns into the result (Col2im), but for
// narrow groups, whose direct kernels write every element of every
// member's result (cpu.ConvGeom.Direct).
func convOverwrites(g cpu.ConvGeom, mode convMode) bool {
	switch mode {
	case convForward:
		return true
	case convWeight:
		return g.N > 0 || g.Direct()
	}
	return g.Direct()
}

// convBiasSpec is Conv2d with its bias, one op: the forward member with the
// bias added to each sample's product while it is in cache (the same
// numbers as convSpec then BiasAdd, without a second pass over the result
// and a second result); its gradients are the family's and ChannelSum.
func convBiasSpec(g cpu.ConvGeom) ad.OpSpec {
	x, w, out := tensor.Shape{g.N, g.C, g.H, g.W}, weightShape(g), tensor.Shape{g.N, g.Cout, g.HO, g.WO}
	b := tensor.Shape{g.Cout}
	return withCUDA(ad.OpSpec{
		Name:       "Conv2dBias",
		Params:     geomParams(g),
		InputDims:  []int{4, 4, 1},
		OutputDims: 4,
		Shape: func(s []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(s[0], x) || !slices.Equal(s[1], w) || !slices.Equal(s[2], b) {
				return nil, fmt.Errorf("nn: Conv2dBias: inputs %v, %v and %v, want %v, %v and %v", s[0], s[1], s[2], x, w, b)
			}
			return out.Clone(), nil
		},
		Kernel:           ad.Floats(convKernel[float32](g, convForward), convKernel[float64](g, convForward)),
		KernelOverwrites: convOverwrites(g, convForward),
		Backward: func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(u)
			dx, dw := b.Apply(convTSpec(g), u, in[1]), b.Apply(convWSpec(g), in[0], u)
			sum, _ := channelSpecs(out)
			return b.Nodes(dx, dw, b.Apply(sum, u))
		},
	}, convGPU{g, convForward, true})
}

func convTSpec(g cpu.ConvGeom) ad.OpSpec {
	gs, w, out := tensor.Shape{g.N, g.Cout, g.HO, g.WO}, weightShape(g), tensor.Shape{g.N, g.C, g.H, g.W}
	spec := convFamilySpec("ConvTranspose2d", g, gs, w, out, ad.Floats(convKernel[float32](g, convInput), convKernel[float64](g, convInput)),
		func(in gorgonia.Nodes, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(u)
			return b.Nodes(b.Apply(convSpec(g), u, in[1]), b.Apply(convWSpec(g), u, in[0]))
		})
	spec.KernelOverwrites = convOverwrites(g, convInput)
	return withCUDA(spec, convGPU{g, convInput, false})
}

func convWSpec(g cpu.ConvGeom) ad.OpSpec {
	x, gs := tensor.Shape{g.N, g.C, g.H, g.W}, tensor.Shape{g.N, g.Cout, g.HO, g.WO}
	spec := convFamilySpec("Conv2dWeightGrad", g, x, gs, weightShape(g), ad.Floats(convKernel[float32](g, convWeight), convKernel[float64](g, convWeight)),
		func(in gorgonia.Nodes, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := ad.NewBuilder(u)
			return b.Nodes(b.Apply(convTSpec(g), in[1], u), b.Apply(convSpec(g), in[0], u))
		})
	spec.KernelOverwrites = convOverwrites(g, convWeight)
	return withCUDA(spec, convGPU{g, convWeight, false})
}

func weightShape(g cpu.ConvGeom) tensor.Shape {
	return tensor.Shape{g.Cout, g.C / g.Groups, g.KH, g.KW}
}

// convFamilySpec is a member of the family: inputs of shapes a and b, a
// result of shape out.
func convFamilySpec(name string, g cpu.ConvGeom, a, b, out tensor.Shape, k ad.Kernel, backward func(gorgonia.Nodes, *gorgonia.Node) (gorgonia.Nodes, error)) ad.OpSpec {
	return ad.OpSpec{
		Name:       name,
		Params:     geomParams(g),
		InputDims:  []int{4, 4},
		OutputDims: 4,
		Shape: func(s []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(s[0], a) || !slices.Equal(s[1], b) {
				return nil, fmt.Errorf("nn: %s: inputs %v and %v, want %v and %v", name, s[0], s[1], a, b)
			}
			return out.Clone(), nil
		},
		Kernel: k,
		Backward: func(in gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			return backward(in, grad)
		},
	}
}

// convMode picks a member of the family (cpu.ConvMode: the forward
// convolution, the input's gradient, the weight's gradient).
type convMode = cpu.ConvMode

const (
	convForward = cpu.ConvForward
	convInput   = cpu.ConvInput
	convWeight  = cpu.ConvWeight
)

// convKernel is cpu.Conv with the product that product (product.go)
// picks (cpuProduct, asking for the installed BLAS once per run); Conv2dBias's
// third input is the bias.
func convKernel[T gemm.Float](g cpu.ConvGeom, mode convMode) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		var bias []T
		if mode == convForward && len(in) == 3 {
			bias = in[2].Data
		}
		return cpu.Conv(&g, mode, cpuProduct[T](), out.Data, in[0].Data, in[1].Data, bias)
	}
}

// addBias is y + bias broadcast over axis 1 (BiasAdd): ∂y = U,
// ∂bias = ChannelSum(U), and ChannelSum and ChannelBroadcast are a linear
// pair.
func addBias(y, bias *gorgonia.Node) (*gorgonia.Node, error) {
	s := y.Shape()
	n, c, l := s[0], s[1], s.TotalSize()/max(s[0]*s[1], 1)
	return ad.Apply(withCUDA(ad.OpSpec{
		Name:       "BiasAdd",
		Params:     fmt.Sprintf("%v", s),
		InputDims:  []int{s.Dims(), 1},
		OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], tensor.Shape{c}) {
				return nil, fmt.Errorf("nn: BiasAdd: inputs %v and %v, want %v and (%d)", in[0], in[1], s, c)
			}
			return s.Clone(), nil
		},
		Kernel:           ad.Floats(biasAddKernel[float32](n, c, l), biasAddKernel[float64](n, c, l)),
		KernelOverwrites: true, // AddChannelBias writes every element
		Backward: func(_ gorgonia.Nodes, _, grad *gorgonia.Node) (gorgonia.Nodes, error) {
			sum, _ := channelSpecs(s)
			db, err := ad.Apply(sum, grad)
			return gorgonia.Nodes{grad, db}, err
		},
	}, channelGPU{n, c, l, channelBiasAdd}), y, bias)
}

func biasAddKernel[T gemm.Float](n, c, l int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.AddChannelBias(in[0].Data, in[1].Data, out.Data, n, c, l)
		return nil
	}
}

// channelSpecs are ChannelSum ([N, C, ...] → [C]) and ChannelBroadcast
// back, a linear pair.
func channelSpecs(s tensor.Shape) (sum, broadcast ad.OpSpec) {
	s = s.Clone()
	n, c, l := s[0], s[1], s.TotalSize()/max(s[0]*s[1], 1)
	sum = ad.OpSpec{
		Name: "ChannelSum", Params: fmt.Sprint(s), InputDims: []int{s.Dims()}, OutputDims: 1,
		Shape:  ad.FixedShape("nn: ChannelSum", s, tensor.Shape{c}),
		Kernel: ad.Floats(channelKernel[float32](n, c, l, true), channelKernel[float64](n, c, l, true)),
		// ChannelSum and ChannelBroadcast write every element.
		KernelOverwrites: true,
	}
	broadcast = ad.OpSpec{
		Name: "ChannelBroadcast", Params: fmt.Sprint(s), InputDims: []int{1}, OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], tensor.Shape{c}) {
				return nil, fmt.Errorf("nn: ChannelBroadcast: input %v, want (%d)", in[0], c)
			}
			return s.Clone(), nil
		},
		Kernel:           ad.Floats(channelKernel[float32](n, c, l, false), channelKernel[float64](n, c, l, false)),
		KernelOverwrites: true,
	}
	return ad.LinearPair(withCUDA(sum, channelGPU{n, c, l, channelSum}), withCUDA(broadcast, channelGPU{n, c, l, channelBroadcast}))
}

// channelKernel is ChannelSum's kernel (sum) or ChannelBroadcast's.
func channelKernel[T ad.Float](n, c, l int, sum bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if sum {
			cpu.ChannelSum(in[0].Data, out.Data, n, c, l)
		} else {
			cpu.ChannelBroadcast(in[0].Data, out.Data, n, c, l)
		}
		return nil
	}
}

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// convGPU is a member of Conv2d's family: im2col / col2im kernels and
// cuBLAS products (conv_cuda.go).
type convGPU struct {
	g    cpu.ConvGeom
	mode convMode
	bias bool // convForward with a third input, the bias, added in place
}

// channelKind picks one of the per-channel ops on [N, C, L].
type channelKind int

const (
	channelBiasAdd   channelKind = iota // BiasAdd: x + b[c]
	channelSum                          // ChannelSum: [N, C, L] → [C]
	channelBroadcast                    // ChannelBroadcast: [C] → [N, C, L]
)

// channelGPU is BiasAdd, ChannelSum or ChannelBroadcast on [n, c, l]
// (norm_cuda.go).
type channelGPU struct {
	n, c, l int
	kind    channelKind
}
