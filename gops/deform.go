package gops

import (
	"fmt"

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
// input, offset, mask, weight and bias, cross terms included (use Grad);
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
		return Apply(emptySpec(tensor.Shape{0, cout, g.HO, g.WO}, given), given...)
	}
	cols, err := Apply(deformSpec(g, deformS, 0, 0, mask != nil), withMask(gorgonia.Nodes{input, offset}, mask)...)
	if err != nil {
		return nil, err
	}
	w3, err := reshape(weight, groups, cout/groups, g.C/groups*g.K())
	if err != nil {
		return nil, err
	}
	prod, err := gorgonia.BatchedMatMul(w3, cols) // [groups, Cog, N·L], i.e. [Cout, N, L]
	if err != nil {
		return nil, fmt.Errorf("gops: DeformConv2d: %w", err)
	}
	outShape := tensor.Shape{g.N, cout, g.HO, g.WO}
	if bias == nil {
		return Apply(swap01Spec(prod.Shape(), cout, g.N, outShape, false), prod)
	}
	return Apply(swap01Spec(prod.Shape(), cout, g.N, outShape, true), prod, bias)
}

// deformConv2dGeom checks the nodes' shapes and returns the geometry and
// the number of groups.
func deformConv2dGeom(input, offset, weight, bias, mask *gorgonia.Node, opts DeformConv2dOpts) (*DeformGeom, int, error) {
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
	g := &DeformGeom{
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

// The three deformable sampling kernels (DESIGN.md, docs/ARCHITECTURE.md).
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

func (g *DeformGeom) params() string {
	return fmt.Sprintf("input=(%d,%d,%d,%d), kernel=(%d,%d), stride=(%d,%d), padding=(%d,%d), dilation=(%d,%d), out=(%d,%d), offset_groups=%d, groups=%d",
		g.N, g.C, g.H, g.W, g.KH, g.KW, g.SH, g.SW, g.PH, g.PW, g.DH, g.DW, g.HO, g.WO, g.OG, g.Groups)
}

// Shapes of the layouts.
func (g *DeformGeom) inputShape() tensor.Shape { return tensor.Shape{g.N, g.C, g.H, g.W} }
func (g *DeformGeom) colsShape() tensor.Shape {
	return tensor.Shape{g.Groups, g.C / g.Groups * g.K(), g.N * g.L()}
}
func (g *DeformGeom) maskShape() tensor.Shape { return tensor.Shape{g.N, g.OG * g.K(), g.HO, g.WO} }
func (g *DeformGeom) offsetShape() tensor.Shape {
	return tensor.Shape{g.N, 2 * g.OG * g.K(), g.HO, g.WO}
}

// deformSpec is kernel kind of derivative order (a, b). S and T take a mask
// as third input when masked (else the mask is 1); C always takes its third
// input (columns-shaped G).
func deformSpec(g *DeformGeom, kind deformKind, a, b int, masked bool) OpSpec {
	var inShapes []tensor.Shape
	var out tensor.Shape
	switch kind {
	case deformS:
		inShapes, out = []tensor.Shape{g.inputShape(), g.offsetShape()}, g.colsShape()
	case deformT:
		inShapes, out = []tensor.Shape{g.colsShape(), g.offsetShape()}, g.inputShape()
	case deformC:
		inShapes, out = []tensor.Shape{g.inputShape(), g.offsetShape(), g.colsShape()}, g.maskShape()
		masked = false
	case deformO:
		inShapes, out = []tensor.Shape{g.inputShape(), g.offsetShape(), g.colsShape()}, g.offsetShape()
	}
	if masked {
		inShapes = append(inShapes, g.maskShape())
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
	return OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("order=(%d,%d), masked=%t, %s", a, b, masked, g.params()),
		gpu:        gpuDeform{g: g, kind: kind, a: a, b: b},
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
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			switch in[0].Dtype() {
			case tensor.Float32:
				return runDeform[float32](g, kind, a, b, in)
			case tensor.Float64:
				return runDeform[float64](g, kind, a, b, in)
			}
			return nil, fmt.Errorf("gops: %s: dtype %v", name, in[0].Dtype())
		},
		Backward: func(in gorgonia.Nodes, _, up *gorgonia.Node) (gorgonia.Nodes, error) {
			if kind == deformO {
				return deformOffsetGradBackward(g, a, b, in, up)
			}
			return deformBackward(g, kind, a, b, in, up)
		},
	}
}

// deformBackward is the derivative table of DESIGN.md. For S_ab(X, off, M)
// and T_ab(G, off, M) with upstream U, and C_ab(X, off, G) with upstream R:
//
//	S: dX = T_ab(U, off, M)  doff = O_ab(X, off, U, M)  dM = C_ab(X, off, U)
//	T: dG = S_ab(U, off, M)  doff = O_ab(U, off, G, M)  dM = C_ab(U, off, G)
//	C: dX = T_ab(G, off, R)  doff = O_ab(X, off, G, R)  dG = S_ab(X, off, R)
//
// where O_ab(X, off, G, M) = interleave(M ⊙ C_(a+1)b(X, off, G), M ⊙ C_a(b+1)(X, off, G)),
// order-2 members dropped, is one fused member (deformOffsetGrad): it reads
// each sample's pixels once for both halves.
func deformBackward(g *DeformGeom, kind deformKind, a, b int, in gorgonia.Nodes, up *gorgonia.Node) (gorgonia.Nodes, error) {
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
		grads[0], err = Apply(deformSpec(g, deformT, a, b, m != nil), withMask(gorgonia.Nodes{up, off}, m)...)
	case deformT:
		if len(in) == 3 {
			m = in[2]
		}
		x, cols = up, in[0]
		grads[0], err = Apply(deformSpec(g, deformS, a, b, m != nil), withMask(gorgonia.Nodes{up, off}, m)...)
	case deformC:
		x, cols, m = in[0], in[2], up
		grads[0], err = Apply(deformSpec(g, deformT, a, b, true), cols, off, up)
	}
	if err != nil {
		return nil, err
	}
	if a+b < 2 {
		if grads[1], err = Apply(deformSpec(g, deformO, a, b, m != nil), withMask(gorgonia.Nodes{x, off, cols}, m)...); err != nil {
			return nil, err
		}
	}
	if len(in) == 3 { // the mask of S and T, the columns of C
		if kind == deformC {
			grads[2], err = Apply(deformSpec(g, deformS, a, b, true), x, off, up)
		} else {
			grads[2], err = Apply(deformSpec(g, deformC, a, b, false), x, off, cols)
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
func deformOffsetGradBackward(g *DeformGeom, a, b int, in gorgonia.Nodes, up *gorgonia.Node) (gorgonia.Nodes, error) {
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
		r, err := Apply(offsetLayoutSpec(g, which, false), up)
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
		if terms[0], err = Apply(deformSpec(g, deformT, ab[0], ab[1], true), cols, off, mr); err != nil {
			return nil, err
		}
		if terms[2], err = Apply(deformSpec(g, deformS, ab[0], ab[1], true), x, off, mr); err != nil {
			return nil, err
		}
		if ab[0]+ab[1] < 2 {
			if terms[1], err = Apply(deformSpec(g, deformO, ab[0], ab[1], true), x, off, cols, mr); err != nil {
				return nil, err
			}
		}
		if m != nil {
			c, err := Apply(deformSpec(g, deformC, ab[0], ab[1], false), x, off, cols)
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

// runDeform evaluates one kernel on values.
func runDeform[T Float](g *DeformGeom, kind deformKind, a, b int, in []gorgonia.Value) (*tensor.Dense, error) {
	data := make([][]T, len(in))
	for i, v := range in {
		d, _, err := tensorData[T](v)
		if err != nil {
			return nil, fmt.Errorf("gops: %s: input %d: %w", kind, i, err)
		}
		data[i] = d
	}
	switch kind {
	case deformS, deformT:
		var mask []T
		if len(in) == 3 {
			mask = data[2]
		}
		taps := DeformTaps(g, a, b, data[1], mask)
		if kind == deformS {
			out, cols := newTensor[T](g.colsShape()...)
			DeformSample(g, taps, data[0], cols)
			return out, nil
		}
		padded := make([]T, g.N*g.C*g.padLen())
		DeformScatter(g, taps, data[0], padded)
		out, dst := newTensor[T](g.inputShape()...)
		UnpadImages(g, padded, dst)
		return out, nil
	case deformC:
		taps := DeformTaps(g, a, b, data[1], nil)
		out, dst := newTensor[T](g.maskShape()...)
		DeformContract(g, taps, PadImages(g, data[0]), data[2], dst)
		return out, nil
	default:
		var mask []T
		if len(in) == 4 {
			mask = data[3]
		}
		var tapsY, tapsX []PadTap[T]
		if a+1 <= 1 {
			tapsY = DeformTaps(g, a+1, b, data[1], nil)
		}
		if b+1 <= 1 {
			tapsX = DeformTaps(g, a, b+1, data[1], nil)
		}
		out, dst := newTensor[T](g.offsetShape()...)
		DeformOffsetGrad(g, tapsY, tapsX, PadImages(g, data[0]), data[2], mask, dst)
		return out, nil
	}
}

// offsetLayoutSpec puts a mask-layout tensor into the y (which = 0) or x (1)
// slots of an offset-layout tensor, zeros elsewhere (embed), or reads them
// back (split). Each is the other's transpose, so the two close a family
// under differentiation; the split takes the y and x halves of an upstream
// offset gradient in DeformOffsetGrad's backward.
func offsetLayoutSpec(g *DeformGeom, which int, embed bool) OpSpec {
	from, to, name := g.maskShape(), g.offsetShape(), "OffsetEmbed"
	if !embed {
		from, to, name = to, from, "OffsetSplit"
	}
	return OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("which=%d, %s", which, g.params()),
		gpu:        gpuOffsetLayout{g: g, which: which, embed: embed},
		InputDims:  []int{4},
		OutputDims: 4,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !in[0].Eq(from) {
				return nil, fmt.Errorf("gops: %s: input shape %v, want %v", name, in[0], from)
			}
			return to.Clone(), nil
		},
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			switch in[0].Dtype() {
			case tensor.Float32:
				return runOffsetLayout[float32](g, which, embed, in[0], to)
			case tensor.Float64:
				return runOffsetLayout[float64](g, which, embed, in[0], to)
			}
			return nil, fmt.Errorf("gops: %s: dtype %v", name, in[0].Dtype())
		},
		Backward: func(_ gorgonia.Nodes, _, up *gorgonia.Node) (gorgonia.Nodes, error) {
			d, err := Apply(offsetLayoutSpec(g, which, !embed), up)
			return gorgonia.Nodes{d}, err
		},
	}
}

func runOffsetLayout[T Float](g *DeformGeom, which int, embed bool, v gorgonia.Value, to tensor.Shape) (*tensor.Dense, error) {
	src, _, err := tensorData[T](v)
	if err != nil {
		return nil, err
	}
	out, dst := newTensor[T](to...)
	if embed {
		OffsetEmbed(g, which, src, dst)
	} else {
		OffsetSplit(g, which, src, dst)
	}
	return out, nil
}

// emptySpec produces an empty tensor of the given shape from the given
// nodes (a batch of 0), so that all of them stay in the graph; its
// gradients are zero.
func emptySpec(shape tensor.Shape, given gorgonia.Nodes) OpSpec {
	dims := make([]int, len(given))
	for i, n := range given {
		dims[i] = n.Dims()
	}
	return OpSpec{
		Name:       "Empty",
		Params:     fmt.Sprint(shape),
		InputDims:  dims,
		OutputDims: shape.Dims(),
		DiffWRT:    make([]bool, len(given)),
		Shape:      func([]tensor.Shape) (tensor.Shape, error) { return shape.Clone(), nil },
		Forward: func(in []gorgonia.Value) (gorgonia.Value, error) {
			return tensor.New(tensor.Of(in[0].Dtype()), tensor.WithShape(shape...)), nil
		},
		Backward: func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		},
	}
}
