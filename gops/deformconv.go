package gops

import (
	"fmt"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"github.com/gops-dev/gops/nn"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DeformConv2dOpts are the parameters of DeformConv2d, named as in
// torchvision.ops.deform_conv2d. Each pair is (height, width) in input
// pixels.
type DeformConv2dOpts struct {
	// Stride between output positions; zero entries mean 1.
	Stride [2]int
	// Padding: zeros added on each side of the input.
	Padding [2]int
	// Dilation: spacing between kernel positions; zero entries mean 1.
	Dilation [2]int
}

// DeformConv2d is deformable convolution, as torchvision.ops.deform_conv2d:
// v1 when mask is nil, v2 (modulated) otherwise. bias may be nil.
//
// Shapes: input [N, Cin, H, W]; weight [Cout, Cin/groups, kh, kw]; offset
// [N, 2·offsetGroups·kh·kw, Hout, Wout], with (dy, dx) interleaved per
// kernel position (row-major over kh×kw) as in torchvision; mask
// [N, offsetGroups·kh·kw, Hout, Wout]; bias [Cout]. groups = Cin /
// weight.shape[1], offsetGroups = offset.shape[1] / (2·kh·kw);
// Hout = (H + 2·padding − dilation·(kh−1) − 1) / stride + 1, likewise Wout.
// The result is [N, Cout, Hout, Wout]. All tensors share one dtype,
// float32 or float64.
//
// Kernel position (i, j) of output (ho, wo) samples the input at
// y = ho·stride − padding + i·dilation + dy, x likewise, by bilinear
// interpolation with torchvision's rule: a sample with y <= −1, y >= H,
// x <= −1 or x >= W gives 0, and each of its four corners counts only if
// inside the image. The result is differentiable to every order w.r.t.
// input, offset, mask, weight and bias, cross terms included (use ad.Grad);
// at an integer sample position the derivative w.r.t. the offset is the
// right-sided one, as torchvision's backward.
//
// Differences from torchvision: a non-finite offset makes its samples
// contribute 0, with zero gradient (torchvision reads out of bounds); N = 0
// gives an empty result and zero gradients.
//
// Errors when the node is built: wrong ranks or dtypes; Cin not divisible by
// weight.shape[1] (groups) or Cout not divisible by groups; offset channels
// not a multiple of 2·kh·kw or Cin not divisible by the offset groups;
// offset or mask not [N, ·, Hout, Wout] with the channels above; bias not
// [Cout]; negative stride, padding or dilation; a dilated kernel larger than
// the padded input.
func DeformConv2d(input, offset, weight, bias, mask *gorgonia.Node, opts DeformConv2dOpts) (*gorgonia.Node, error) {
	g, groups, err := deformConv2dGeom(input, offset, weight, bias, mask, opts)
	if err != nil {
		return nil, err
	}
	cout := weight.Shape()[0]
	if g.N == 0 {
		// Gorgonia's ops panic on empty tensors; the result is empty and
		// its gradients are zero.
		given := gorgonia.Nodes{input, offset, weight}
		for _, n := range []*gorgonia.Node{bias, mask} {
			if n != nil {
				given = append(given, n)
			}
		}
		return ad.Apply(emptySpec(tensor.Shape{0, cout, g.HO, g.WO}, given), given...)
	}
	cols, err := ad.Apply(deformSpec(g, deformS, 0, 0, mask != nil), withMask(gorgonia.Nodes{input, offset}, mask)...)
	if err != nil {
		return nil, err
	}
	w3, err := reshape(weight, groups, cout/groups, g.C/groups*g.K())
	if err != nil {
		return nil, err
	}
	prod, err := nn.MatMul(w3, cols, false, false) // [groups, Cog, N·L], i.e. [Cout, N, L]
	if err != nil {
		return nil, err
	}
	outShape := tensor.Shape{g.N, cout, g.HO, g.WO}
	if bias == nil {
		swap, _ := swap01Specs(prod.Shape(), cout, g.N, outShape)
		return ad.Apply(swap, prod)
	}
	return ad.Apply(swap01BiasSpec(prod.Shape(), cout, g.N, outShape), prod, bias)
}

// deformConv2dGeom checks the nodes' shapes and returns the geometry and
// the number of groups.
func deformConv2dGeom(input, offset, weight, bias, mask *gorgonia.Node, opts DeformConv2dOpts) (*cpu.DeformGeom, int, error) {
	const name = "DeformConv2d"
	for _, a := range []struct {
		n    *gorgonia.Node
		name string
		dims int
	}{{input, "input", 4}, {offset, "offset", 4}, {weight, "weight", 4}, {bias, "bias", 1}, {mask, "mask", 4}} {
		if a.n == nil && (a.name == "bias" || a.name == "mask") {
			continue
		}
		if err := checkFloatNode(name, a.name, a.n, a.dims); err != nil {
			return nil, 0, err
		}
		if a.n.Dtype() != input.Dtype() {
			return nil, 0, fmt.Errorf("gops: %s: %s dtype %v differs from input dtype %v", name, a.name, a.n.Dtype(), input.Dtype())
		}
	}
	for _, p := range []struct {
		v    [2]int
		name string
	}{{opts.Stride, "Stride"}, {opts.Padding, "Padding"}, {opts.Dilation, "Dilation"}} {
		if p.v[0] < 0 || p.v[1] < 0 {
			return nil, 0, fmt.Errorf("gops: %s: negative %s %v", name, p.name, p.v)
		}
	}
	is, ws, os := input.Shape(), weight.Shape(), offset.Shape()
	for _, d := range []struct {
		v    int
		what string
	}{{is[1], "input channels"}, {is[2], "input height"}, {is[3], "input width"}, {ws[0], "output channels (weight.shape[0])"},
		{ws[1], "weight.shape[1]"}, {ws[2], "kernel height"}, {ws[3], "kernel width"}} {
		if d.v < 1 {
			return nil, 0, fmt.Errorf("gops: %s: %s is %d, must be at least 1", name, d.what, d.v)
		}
	}
	if p := opts.Padding; p[0] > 1<<24 || p[1] > 1<<24 {
		return nil, 0, fmt.Errorf("gops: %s: Padding %v too large", name, p)
	}
	if s, d := opts.Stride, opts.Dilation; s[0] > 1<<24 || s[1] > 1<<24 || d[0] > 1<<24 || d[1] > 1<<24 {
		return nil, 0, fmt.Errorf("gops: %s: Stride %v or Dilation %v too large", name, s, d)
	}
	g := &cpu.DeformGeom{
		N: is[0], C: is[1], H: is[2], W: is[3], KH: ws[2], KW: ws[3],
		SH: max(opts.Stride[0], 1), SW: max(opts.Stride[1], 1),
		PH: opts.Padding[0], PW: opts.Padding[1],
		DH: max(opts.Dilation[0], 1), DW: max(opts.Dilation[1], 1),
	}
	if g.C%ws[1] != 0 {
		return nil, 0, fmt.Errorf("gops: %s: input channels %d not divisible by weight.shape[1] = %d", name, g.C, ws[1])
	}
	groups := g.C / ws[1]
	if ws[0]%groups != 0 {
		return nil, 0, fmt.Errorf("gops: %s: output channels %d (weight.shape[0]) not divisible by groups = %d", name, ws[0], groups)
	}
	g.Groups = groups
	eh := g.DH*(g.KH-1) + 1
	ew := g.DW*(g.KW-1) + 1
	if eh > g.H+2*g.PH || ew > g.W+2*g.PW {
		return nil, 0, fmt.Errorf("gops: %s: dilated kernel %dx%d larger than padded input %dx%d", name, eh, ew, g.H+2*g.PH, g.W+2*g.PW)
	}
	g.HO = (g.H+2*g.PH-eh)/g.SH + 1
	g.WO = (g.W+2*g.PW-ew)/g.SW + 1
	K := g.K()
	if os[1] == 0 || os[1]%(2*K) != 0 {
		return nil, 0, fmt.Errorf("gops: %s: offset channels %d not a positive multiple of 2·kh·kw = %d", name, os[1], 2*K)
	}
	g.OG = os[1] / (2 * K)
	if g.C%g.OG != 0 {
		return nil, 0, fmt.Errorf("gops: %s: input channels %d not divisible by offset groups %d", name, g.C, g.OG)
	}
	if want := (tensor.Shape{g.N, 2 * g.OG * K, g.HO, g.WO}); !os.Eq(want) {
		return nil, 0, fmt.Errorf("gops: %s: offset shape %v, want %v (batch, 2·offset_groups·kh·kw, Hout, Wout)", name, os, want)
	}
	if mask != nil {
		if want := (tensor.Shape{g.N, g.OG * K, g.HO, g.WO}); !mask.Shape().Eq(want) {
			return nil, 0, fmt.Errorf("gops: %s: mask shape %v, want %v (batch, offset_groups·kh·kw, Hout, Wout)", name, mask.Shape(), want)
		}
	}
	if bias != nil && !bias.Shape().Eq(tensor.Shape{ws[0]}) {
		return nil, 0, fmt.Errorf("gops: %s: bias shape %v, want [%d]", name, bias.Shape(), ws[0])
	}
	if cols := float64(g.C) * float64(K) * float64(g.N) * float64(g.L()); cols > 1<<36 {
		return nil, 0, fmt.Errorf("gops: %s: the sampled columns would hold %.3g elements", name, cols)
	}
	return g, groups, nil
}

// The four deformable sampling members (docs/ARCHITECTURE.md).
type deformKind int

const (
	deformS deformKind = iota // S_ab(X, offset, mask) -> columns [groups, Cg·K, N·L]
	deformT                   // T_ab(G, offset, mask) -> [N, C, H, W], S's transpose in X
	deformC                   // C_ab(X, offset, G)    -> [N, og·K, Ho, Wo]
	deformO                   // O_ab(X, offset, G, M) -> offset layout, the offset gradient
)

func (k deformKind) String() string {
	return [...]string{"DeformSample", "DeformScatter", "DeformContract", "DeformOffsetGrad"}[k]
}

// deformShapes are the layouts of the sampling family's tensors.
type deformShapes struct {
	input  tensor.Shape // [N, C, H, W]
	cols   tensor.Shape // [groups, Cg·K, N·L]
	mask   tensor.Shape // [N, og·K, Ho, Wo]
	offset tensor.Shape // [N, 2·og·K, Ho, Wo]
}

func shapesOf(g *cpu.DeformGeom) deformShapes {
	return deformShapes{
		input:  tensor.Shape{g.N, g.C, g.H, g.W},
		cols:   tensor.Shape{g.Groups, g.C / g.Groups * g.K(), g.N * g.L()},
		mask:   tensor.Shape{g.N, g.OG * g.K(), g.HO, g.WO},
		offset: tensor.Shape{g.N, 2 * g.OG * g.K(), g.HO, g.WO},
	}
}

// deformSpec is kernel kind of derivative order (a, b). S and T take a mask
// as third input when masked (else the mask is 1); C always takes its third
// input (columns-shaped G).
func deformSpec(g *cpu.DeformGeom, kind deformKind, a, b int, masked bool) ad.OpSpec {
	var inShapes []tensor.Shape
	var out tensor.Shape
	sh := shapesOf(g)
	switch kind {
	case deformS:
		inShapes, out = []tensor.Shape{sh.input, sh.offset}, sh.cols
	case deformT:
		inShapes, out = []tensor.Shape{sh.cols, sh.offset}, sh.input
	case deformC:
		inShapes, out = []tensor.Shape{sh.input, sh.offset, sh.cols}, sh.mask
		masked = false
	case deformO:
		inShapes, out = []tensor.Shape{sh.input, sh.offset, sh.cols}, sh.offset
	}
	if masked {
		inShapes = append(inShapes, sh.mask)
	}
	dims := make([]int, len(inShapes))
	diff := make([]bool, len(inShapes))
	for i := range dims {
		dims[i] = inShapes[i].Dims()
		// Every member of order 2 in one coordinate is zero, so the (1, 1)
		// members, and O of order (1, 0) or (0, 1), do not depend on the
		// offset.
		diff[i] = i != 1 || a+b < 2 && (kind != deformO || a+b == 0)
	}
	name := kind.String()
	return withCUDA(ad.OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("order=(%d,%d), masked=%t, %s", a, b, masked, g.Params()),
		InputDims:  dims,
		OutputDims: out.Dims(),
		DiffWRT:    diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for i, s := range in {
				if !s.Eq(inShapes[i]) {
					return nil, fmt.Errorf("gops: %s: input %d has shape %v, want %v", name, i, s, inShapes[i])
				}
			}
			return out.Clone(), nil
		},
		Kernel: ad.Floats(deformKernel[float32](g, kind, a, b), deformKernel[float64](g, kind, a, b)),
		Backward: func(in gorgonia.Nodes, _, up *gorgonia.Node) (gorgonia.Nodes, error) {
			if kind == deformO {
				return deformOffsetGradBackward(g, a, b, in, up)
			}
			return deformBackward(g, kind, a, b, in, up)
		},
	}, deformGPU{g: g, kind: kind, a: a, b: b})
}

// deformKernel is member kind of order (a, b) on the CPU. The mask, when
// given, is the last input of S, T and O.
func deformKernel[T ad.Float](g *cpu.DeformGeom, kind deformKind, a, b int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		switch kind {
		case deformS:
			cpu.DeformS(g, a, b, in[0].Data, in[1].Data, ad.Optional(in, 2), out.Data)
		case deformT:
			cpu.DeformT(g, a, b, in[0].Data, in[1].Data, ad.Optional(in, 2), out.Data)
		case deformC:
			cpu.DeformC(g, a, b, in[0].Data, in[1].Data, in[2].Data, out.Data)
		default:
			cpu.DeformO(g, a, b, in[0].Data, in[1].Data, in[2].Data, ad.Optional(in, 3), out.Data)
		}
		return nil
	}
}

// deformGPU is what the CUDA twins of the sampling members need
// (deformconv_cuda.go).
type deformGPU struct {
	g    *cpu.DeformGeom
	kind deformKind
	a, b int
}

// deformBackward is the derivative table of docs/ARCHITECTURE.md. For S_ab(X, off, M)
// and T_ab(G, off, M) with upstream U, and C_ab(X, off, G) with upstream R:
//
//	S: dX = T_ab(U, off, M)  doff = O_ab(X, off, U, M)  dM = C_ab(X, off, U)
//	T: dG = S_ab(U, off, M)  doff = O_ab(U, off, G, M)  dM = C_ab(U, off, G)
//	C: dX = T_ab(G, off, R)  doff = O_ab(X, off, G, R)  dG = S_ab(X, off, R)
//
// where O_ab(X, off, G, M) = interleave(M ⊙ C_(a+1)b(X, off, G), M ⊙ C_a(b+1)(X, off, G)),
// order-2 members dropped, is one fused member (deformOffsetGrad): it reads
// each sample's pixels once for both halves.
func deformBackward(g *cpu.DeformGeom, kind deformKind, a, b int, in gorgonia.Nodes, up *gorgonia.Node) (gorgonia.Nodes, error) {
	off := in[1]
	grads := make(gorgonia.Nodes, len(in))
	var x, cols, m *gorgonia.Node // X, G and M of the table
	var err error
	switch kind {
	case deformS:
		if len(in) == 3 {
			m = in[2]
		}
		x, cols = in[0], up
		grads[0], err = ad.Apply(deformSpec(g, deformT, a, b, m != nil), withMask(gorgonia.Nodes{up, off}, m)...)
	case deformT:
		if len(in) == 3 {
			m = in[2]
		}
		x, cols = up, in[0]
		grads[0], err = ad.Apply(deformSpec(g, deformS, a, b, m != nil), withMask(gorgonia.Nodes{up, off}, m)...)
	case deformC:
		x, cols, m = in[0], in[2], up
		grads[0], err = ad.Apply(deformSpec(g, deformT, a, b, true), cols, off, up)
	}
	if err != nil {
		return nil, err
	}
	if a+b < 2 {
		if grads[1], err = ad.Apply(deformSpec(g, deformO, a, b, m != nil), withMask(gorgonia.Nodes{x, off, cols}, m)...); err != nil {
			return nil, err
		}
	}
	if len(in) == 3 { // the mask of S and T, the columns of C
		if kind == deformC {
			grads[2], err = ad.Apply(deformSpec(g, deformS, a, b, true), x, off, up)
		} else {
			grads[2], err = ad.Apply(deformSpec(g, deformC, a, b, false), x, off, cols)
		}
	}
	return grads, err
}

func withMask(ns gorgonia.Nodes, m *gorgonia.Node) gorgonia.Nodes {
	if m != nil {
		return append(ns, m)
	}
	return ns
}

// deformOffsetGradBackward differentiates the offset-gradient member
// O_ab(X, off, G, M) = interleave(M ⊙ C_(a+1)b(X, off, G), M ⊙ C_a(b+1)(X, off, G))
// (M = 1 when absent; order-2 members are zero). With upstream R, its y and
// x halves Ry, Rx (OffsetSplit), My = M ⊙ Ry and Mx = M ⊙ Rx, summing the
// terms of both halves:
//
//	dX = T_(a+1)b(G, off, My) + T_a(b+1)(G, off, Mx)
//	dG = S_(a+1)b(X, off, My) + S_a(b+1)(X, off, Mx)
//	dM = Ry ⊙ C_(a+1)b(X, off, G) + Rx ⊙ C_a(b+1)(X, off, G)
//	doff = O_(a+1)b(X, off, G, My) + O_a(b+1)(X, off, G, Mx)
func deformOffsetGradBackward(g *cpu.DeformGeom, a, b int, in gorgonia.Nodes, up *gorgonia.Node) (gorgonia.Nodes, error) {
	x, off, cols := in[0], in[1], in[2]
	var m *gorgonia.Node
	if len(in) == 4 {
		m = in[3]
	}
	sum := func(total, term *gorgonia.Node) (*gorgonia.Node, error) {
		if total == nil {
			return term, nil
		}
		t, err := gorgonia.Add(total, term)
		if err != nil {
			return nil, fmt.Errorf("gops: DeformOffsetGrad backward: %w", err)
		}
		return t, nil
	}
	grads := make(gorgonia.Nodes, len(in))
	for which, ab := range [2][2]int{{a + 1, b}, {a, b + 1}} {
		if ab[0] > 1 || ab[1] > 1 {
			continue
		}
		_, split := offsetLayoutSpecs(g, which)
		r, err := ad.Apply(split, up)
		if err != nil {
			return nil, err
		}
		mr := r
		if m != nil {
			if mr, err = gorgonia.HadamardProd(m, r); err != nil {
				return nil, fmt.Errorf("gops: DeformOffsetGrad backward: %w", err)
			}
		}
		terms := make(gorgonia.Nodes, 4)
		if terms[0], err = ad.Apply(deformSpec(g, deformT, ab[0], ab[1], true), cols, off, mr); err != nil {
			return nil, err
		}
		if terms[2], err = ad.Apply(deformSpec(g, deformS, ab[0], ab[1], true), x, off, mr); err != nil {
			return nil, err
		}
		if ab[0]+ab[1] < 2 {
			if terms[1], err = ad.Apply(deformSpec(g, deformO, ab[0], ab[1], true), x, off, cols, mr); err != nil {
				return nil, err
			}
		}
		if m != nil {
			c, err := ad.Apply(deformSpec(g, deformC, ab[0], ab[1], false), x, off, cols)
			if err != nil {
				return nil, err
			}
			if terms[3], err = gorgonia.HadamardProd(r, c); err != nil {
				return nil, fmt.Errorf("gops: DeformOffsetGrad backward: %w", err)
			}
		}
		for i, t := range terms[:len(in)] {
			if t == nil {
				continue
			}
			if grads[i], err = sum(grads[i], t); err != nil {
				return nil, err
			}
		}
	}
	return grads, nil
}

// offsetLayoutSpecs put a mask-layout tensor into the y (which = 0) or x
// (1) slots of an offset-layout tensor, zeros elsewhere (embed), and read
// them back (split): a linear pair, each the other's transpose. The split
// takes the y and x halves of an upstream offset gradient in
// DeformOffsetGrad's backward.
func offsetLayoutSpecs(g *cpu.DeformGeom, which int) (embed, split ad.OpSpec) {
	sh := shapesOf(g)
	layout := func(name string, from, to tensor.Shape, k32 func(*cpu.DeformGeom, int, []float32, []float32), k64 func(*cpu.DeformGeom, int, []float64, []float64), isEmbed bool) ad.OpSpec {
		return withCUDA(ad.OpSpec{
			Name:       name,
			Params:     fmt.Sprintf("which=%d, %s", which, g.Params()),
			InputDims:  []int{4},
			OutputDims: 4,
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !in[0].Eq(from) {
					return nil, fmt.Errorf("gops: %s: input shape %v, want %v", name, in[0], from)
				}
				return to.Clone(), nil
			},
			Kernel: ad.Floats(
				func(out ad.Tensor[float32], in []ad.Tensor[float32]) error {
					k32(g, which, in[0].Data, out.Data)
					return nil
				},
				func(out ad.Tensor[float64], in []ad.Tensor[float64]) error {
					k64(g, which, in[0].Data, out.Data)
					return nil
				}),
		}, offsetLayoutGPU{g: g, which: which, embed: isEmbed})
	}
	return ad.LinearPair(
		layout("OffsetEmbed", sh.mask, sh.offset, cpu.OffsetEmbed[float32], cpu.OffsetEmbed[float64], true),
		layout("OffsetSplit", sh.offset, sh.mask, cpu.OffsetSplit[float32], cpu.OffsetSplit[float64], false))
}

// offsetLayoutGPU is what the CUDA twins of OffsetEmbed and OffsetSplit need
// (deformconv_cuda.go).
type offsetLayoutGPU struct {
	g     *cpu.DeformGeom
	which int
	embed bool
}

// emptySpec produces an empty tensor of the given shape from the given
// nodes (a batch of 0), so that all of them stay in the graph; its
// gradients are zero.
func emptySpec(shape tensor.Shape, given gorgonia.Nodes) ad.OpSpec {
	dims := make([]int, len(given))
	for i, n := range given {
		dims[i] = n.Dims()
	}
	return ad.OpSpec{
		Name:       "Empty",
		Params:     fmt.Sprint(shape),
		InputDims:  dims,
		OutputDims: shape.Dims(),
		DiffWRT:    make([]bool, len(given)),
		Shape:      func([]tensor.Shape) (tensor.Shape, error) { return shape.Clone(), nil },
		Kernel: ad.Floats(
			func(ad.Tensor[float32], []ad.Tensor[float32]) error { return nil },
			func(ad.Tensor[float64], []ad.Tensor[float64]) error { return nil }),
		Backward: func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		},
	}
}
