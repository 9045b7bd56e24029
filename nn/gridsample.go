package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GridSampleOpts are GridSample's parameters, named as in
// torch.nn.functional.grid_sample; the zero value is torch's default
// ("bilinear", "zeros", align_corners false).
type GridSampleOpts struct {
	// Mode is "bilinear" (or "", the default), "nearest" or "bicubic".
	Mode string
	// PaddingMode is "zeros" (or "", the default: corners outside the
	// input read 0), "border" (coordinates clipped to the input) or
	// "reflection" (reflected at the borders, then clipped).
	PaddingMode string
	// AlignCorners: grid values −1 and 1 are the centres of the corner
	// pixels; otherwise the outer edges of the corner pixels.
	AlignCorners bool
}

// GridSample is torch.nn.functional.grid_sample for 4-D input: input
// [N, C, H, W] sampled at grid [N, Ho, Wo, 2] gives [N, C, Ho, Wo]. Each
// grid point holds (x, y), in that order, normalised so that −1 and 1 are
// the input's left/top and right/bottom (pixel centres with AlignCorners,
// pixel edges without): x maps to the pixel coordinate (x + 1)·(W − 1)/2
// or (x + 1)·W/2 − 0.5, y likewise with H. PaddingMode then maps
// coordinates outside the image (torch's clip_coordinates and
// reflect_coordinates), and Mode interpolates: bilinear between the four
// surrounding pixels (those outside the input read 0), the nearest pixel
// (rounding halves to even as torch), or bicubic over the 4×4 pixels
// around the unpadded coordinate, each tap's position mapped by
// PaddingMode (torch's cubic convolution, A = −0.75).
//
// The result is differentiable to every order w.r.t. input and grid,
// cross terms included (use ad.Grad); "nearest" has zero gradient w.r.t.
// the grid. The derivatives are those of torch's backward at first order:
// at an integer coordinate the cell floor() selects gives the derivative
// (right-sided), and a coordinate clipped by "border" or "reflection",
// one exactly on the border (0 or size − 1 after reflection) included, has
// derivative 0 in the grid (torch's clip_coordinates_set_grad). Bicubic
// differentiates its coefficients (orders up to 3 per coordinate; its taps'
// positions are piecewise constant, so the unnormalize scale is the whole
// chain factor, as torch's backward). Higher orders follow the same
// conventions (docs/ARCHITECTURE.md, "GridSample").
//
// Differences from torch: a NaN grid coordinate (or the reflection of an
// infinite one; under "bicubic" any infinite one) samples nothing: its
// outputs are 0 and its gradients zero (torch 1.13: bilinear gives NaN
// under "zeros" and clamps the coordinate to 0 under "border" and
// "reflection"; nearest gives 0 under "zeros" and clamps under the
// others; bicubic gives NaN under every padding); coordinates of any size are safe (tested
// as floats before any integer conversion). An input, grid or result with
// no elements gives an empty result and zero gradients. Units: the grid
// is normalised (−1 to 1 across the input), not in pixels.
//
// Errors when the node is built: a nil input or grid; input not rank 4 or
// grid not [N, Ho, Wo, 2]; grid's batch not input's; dtypes not float32 or
// float64, or different; input height or width 0; an unknown Mode or
// PaddingMode; sizes above the package limits.
func GridSample(input, grid *gorgonia.Node, opts GridSampleOpts) (*gorgonia.Node, error) {
	const name = "GridSample"
	if err := checkNodes(name, []namedNode{{input, "input", 4, false}, {grid, "grid", 4, false}}); err != nil {
		return nil, err
	}
	is, gs := input.Shape(), grid.Shape()
	if gs[3] != 2 {
		return nil, fmt.Errorf("nn: %s: grid must be [N, Ho, Wo, 2], got shape %v", name, gs)
	}
	if gs[0] != is[0] {
		return nil, fmt.Errorf("nn: %s: grid batch %d differs from input batch %d (grid %v, input %v)", name, gs[0], is[0], gs, is)
	}
	g := cpu.GridSampleGeom{N: is[0], C: is[1], H: is[2], W: is[3], HO: gs[1], WO: gs[2], AlignCorners: opts.AlignCorners}
	switch opts.Mode {
	case "", "bilinear":
	case "nearest":
		g.Nearest = true
	case "bicubic":
		g.Bicubic = true
	default:
		return nil, fmt.Errorf("nn: %s: Mode %q, want \"bilinear\", \"nearest\" or \"bicubic\"", name, opts.Mode)
	}
	switch opts.PaddingMode {
	case "", "zeros":
	case "border":
		g.Padding = cpu.GridBorder
	case "reflection":
		g.Padding = cpu.GridReflection
	default:
		return nil, fmt.Errorf("nn: %s: PaddingMode %q, want \"zeros\", \"border\" or \"reflection\"", name, opts.PaddingMode)
	}
	if g.H < 1 || g.W < 1 || g.H > maxAxis || g.W > maxAxis {
		return nil, fmt.Errorf("nn: %s: input %v must have a height and width in [1, %d]", name, is, maxAxis)
	}
	if g.HO > maxAxis || g.WO > maxAxis {
		return nil, fmt.Errorf("nn: %s: grid %v: Ho and Wo must be at most %d", name, gs, maxAxis)
	}
	if err := checkElems(name, "the input plane", g.H, g.W); err != nil {
		return nil, err
	}
	if err := checkElems(name, "the result", g.N, g.C, g.HO, g.WO); err != nil {
		return nil, err
	}
	out := tensor.Shape{g.N, g.C, g.HO, g.WO}
	if is.TotalSize() == 0 || gs.TotalSize() == 0 {
		x, other := input, grid
		if is.TotalSize() != 0 {
			x, other = grid, input
		}
		return ad.EmptyResult(name, out, 0, fillTwin, x, other)
	}
	f := &gridFamily{g: g}
	return f.apply(gridS, 0, 0, input, grid)
}

// gridKind is a member kind of GridSample's family (internal/cpu/gridsample.go).
type gridKind int

const (
	gridS  gridKind = iota // S_ab(X, grid[, M]) → [N, C, Ho, Wo]; S_00 is GridSample
	gridT                  // T_ab(G, grid[, M]) → [N, C, H, W], S's transpose in X
	gridC                  // C_ab(X, grid, G) → [N, Ho, Wo], the contraction over channels
	gridO                  // O_ab(X, grid, G[, M]) → [N, Ho, Wo, 2], the grid gradient
	gridS2                 // S_(a+1)b(X, grid, M1) + S_a(b+1)(X, grid, M2), one pass
	gridT2                 // T_(a+1)b(G, grid, M1) + T_a(b+1)(G, grid, M2), one pass
	gridO2                 // O_(a+1)b(X, grid, G, M1) + O_a(b+1)(X, grid, G, M2), shared contractions
)

func (k gridKind) String() string {
	return [...]string{"GridSampleS", "GridSampleT", "GridSampleC", "GridSampleO", "GridSampleS2", "GridSampleT2", "GridSampleO2"}[k]
}

// gridFamily builds the members of one GridSample's family. Member (a, b)
// has order a in x and b in y; members above the mode's MaxOrder in either
// coordinate are zero and never built.
//
// With upstream U (R for C and O; Rx, Ry O's upstream halves, GridSplit),
// the derivative table (M = 1 when absent):
//
//	S_ab(X, grid, M): dX = T_ab(U, grid, M)  dgrid = O_ab(X, grid, U, M)  dM = C_ab(X, grid, U)
//	T_ab(G, grid, M): dG = S_ab(U, grid, M)  dgrid = O_ab(U, grid, G, M)  dM = C_ab(U, grid, G)
//	C_ab(X, grid, G): dX = T_ab(G, grid, R)  dgrid = O_ab(X, grid, G, R)  dG = S_ab(X, grid, R)
//	O_ab(X, grid, G, M): Σ over (a', b', R') ∈ {(a+1, b, Rx), (a, b+1, Ry)}, M' = M ⊙ R':
//	    dX = T_a'b'(G, grid, M')  dgrid = O_a'b'(X, grid, G, M')  dG = S_a'b'(X, grid, M')  dM = R' ⊙ C_a'b'(X, grid, G)
//
// so every derivative is a member again (or a Hadamard product and a sum
// of them): the family is closed. When both (a+1, b) and (a, b+1) are
// non-zero, O's dX and dG are computed as one member each, T2_ab(G, grid,
// M′x, M′y) and S2_ab(X, grid, M′x, M′y) (the pair's taps summed, one
// pass), and its dgrid as O2_ab(X, grid, G, M′x, M′y) = O_(a+1)b(…, M′x) +
// O_a(b+1)(…, M′y) (their shared contraction computed once), whose own rows
// are those of their two terms (O2's: the two O rows, summed):
//
//	S2_ab(X, grid, M1, M2): dX = T2_ab(U, grid, M1, M2)  dgrid = O_(a+1)b(X, grid, U, M1) + O_a(b+1)(X, grid, U, M2)  dM1 = C_(a+1)b(X, grid, U)  dM2 = C_a(b+1)(X, grid, U)
//	T2_ab(G, grid, M1, M2): dG = S2_ab(U, grid, M1, M2)  dgrid = O_(a+1)b(U, grid, G, M1) + O_a(b+1)(U, grid, G, M2)  dM1 = C_(a+1)b(U, grid, G)  dM2 = C_a(b+1)(U, grid, G)
type gridFamily struct {
	g cpu.GridSampleGeom
}

// nonzero reports whether member (a, b) is not identically zero.
func (f *gridFamily) nonzero(a, b int) bool {
	mo := f.g.MaxOrder()
	return a <= mo && b <= mo
}

// gridDiff reports whether O_ab, the grid gradient of S_ab, T_ab and C_ab,
// is not zero.
func (f *gridFamily) gridDiff(a, b int) bool { return f.nonzero(a+1, b) || f.nonzero(a, b+1) }

func (f *gridFamily) shapes() (input, grid, out, pix tensor.Shape) {
	g := &f.g
	return tensor.Shape{g.N, g.C, g.H, g.W}, tensor.Shape{g.N, g.HO, g.WO, 2}, tensor.Shape{g.N, g.C, g.HO, g.WO}, tensor.Shape{g.N, g.HO, g.WO}
}

func (f *gridFamily) params() string {
	g := &f.g
	return fmt.Sprintf("N=%d C=%d H=%d W=%d Ho=%d Wo=%d nearest=%t bicubic=%t padding=%d align_corners=%t", g.N, g.C, g.H, g.W, g.HO, g.WO, g.Nearest, g.Bicubic, g.Padding, g.AlignCorners)
}

// apply builds member kind (a, b) on in (S, T: two inputs, or three with
// M; C: three; O: three, or four with M).
func (f *gridFamily) apply(kind gridKind, a, b int, in ...*gorgonia.Node) (*gorgonia.Node, error) {
	return ad.Apply(f.spec(kind, a, b, len(in)), in...)
}

// spec is member kind (a, b) with n inputs.
func (f *gridFamily) spec(kind gridKind, a, b, n int) ad.OpSpec {
	input, grid, out, pix := f.shapes()
	var ins []tensor.Shape
	var res tensor.Shape
	switch kind {
	case gridS:
		ins, res = []tensor.Shape{input, grid, pix}, out
	case gridT:
		ins, res = []tensor.Shape{out, grid, pix}, input
	case gridC:
		ins, res = []tensor.Shape{input, grid, out}, pix
	case gridO:
		ins, res = []tensor.Shape{input, grid, out, pix}, grid
	case gridS2:
		ins, res = []tensor.Shape{input, grid, pix, pix}, out
	case gridT2:
		ins, res = []tensor.Shape{out, grid, pix, pix}, input
	case gridO2:
		ins, res = []tensor.Shape{input, grid, out, pix, pix}, grid
	}
	ins = ins[:n]
	dims := make([]int, n)
	diff := make([]bool, n)
	for i := range dims {
		dims[i] = ins[i].Dims()
		diff[i] = true
	}
	switch kind {
	case gridO2:
		diff[1] = f.nonzero(a+1, b) && (f.gridDiff(a+2, b) || f.gridDiff(a+1, b+1)) ||
			f.nonzero(a, b+1) && (f.gridDiff(a+1, b+1) || f.gridDiff(a, b+2))
	case gridO, gridS2, gridT2:
		diff[1] = f.gridDiff(a+1, b) || f.gridDiff(a, b+1)
	default:
		diff[1] = f.gridDiff(a, b)
	}
	name := kind.String()
	return withCUDA(ad.OpSpec{
		Name:       name,
		Params:     fmt.Sprintf("order=(%d,%d), inputs=%d, %s", a, b, n, f.params()),
		InputDims:  dims,
		OutputDims: res.Dims(),
		DiffWRT:    diff,
		Shape: func(sh []tensor.Shape) (tensor.Shape, error) {
			for i, s := range sh {
				if !slices.Equal(s, ins[i]) {
					return nil, fmt.Errorf("nn: %s: input %d has shape %v, want %v", name, i, s, ins[i])
				}
			}
			return res.Clone(), nil
		},
		Kernel: ad.Floats(gridKernel[float32](&f.g, kind, a, b), gridKernel[float64](&f.g, kind, a, b)),
		// S writes every element, and so does bilinear T (plane by plane).
		KernelOverwrites: kind == gridS || kind == gridS2 || (kind == gridT || kind == gridT2) && !f.g.Nearest && !f.g.Bicubic,
		BackwardFor: func(in gorgonia.Nodes, _, up *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			switch kind {
			case gridO:
				return f.backwardO(a, b, in, up, want)
			case gridO2:
				return f.backwardO2(a, b, in, up, want)
			case gridS2, gridT2:
				return f.backwardPair(kind, a, b, in, up, want)
			}
			return f.backward(kind, a, b, in, up, want)
		},
	}, gridGPU{f.g, kind, a, b, n})
}

// gridKernel is member kind (a, b) on the CPU.
func gridKernel[T ad.Float](g *cpu.GridSampleGeom, kind gridKind, a, b int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		switch kind {
		case gridS2:
			cpu.GridSampleS2(g, a, b, in[0].Data, in[1].Data, in[2].Data, in[3].Data, out.Data)
		case gridT2:
			cpu.GridSampleT2(g, a, b, in[0].Data, in[1].Data, in[2].Data, in[3].Data, out.Data)
		case gridO2:
			cpu.GridSampleO2(g, a, b, in[0].Data, in[1].Data, in[2].Data, in[3].Data, in[4].Data, out.Data)
		case gridS:
			cpu.GridSampleS(g, a, b, in[0].Data, in[1].Data, ad.Optional(in, 2), out.Data)
		case gridT:
			cpu.GridSampleT(g, a, b, in[0].Data, in[1].Data, ad.Optional(in, 2), out.Data)
		case gridC:
			cpu.GridSampleC(g, a, b, in[0].Data, in[1].Data, in[2].Data, out.Data)
		default:
			cpu.GridSampleO(g, a, b, in[0].Data, in[1].Data, in[2].Data, ad.Optional(in, 3), out.Data)
		}
		return nil
	}
}

// withM appends m to ns when it is not nil.
func withM(ns gorgonia.Nodes, m *gorgonia.Node) gorgonia.Nodes {
	if m != nil {
		return append(ns, m)
	}
	return ns
}

// backward is the table's rows for S, T and C (gridFamily's comment).
func (f *gridFamily) backward(kind gridKind, a, b int, in gorgonia.Nodes, up *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	grid := in[1]
	grads := make(gorgonia.Nodes, len(in))
	var x, gr, m *gorgonia.Node // X, G and M of the table
	switch kind {
	case gridS:
		x, gr = in[0], up
	case gridT:
		x, gr = up, in[0]
	case gridC:
		x, gr, m = in[0], in[2], up
	}
	if kind != gridC && len(in) == 3 {
		m = in[2]
	}
	var err error
	if want[0] {
		switch kind {
		case gridS:
			grads[0], err = f.apply(gridT, a, b, withM(gorgonia.Nodes{up, grid}, m)...)
		case gridT:
			grads[0], err = f.apply(gridS, a, b, withM(gorgonia.Nodes{up, grid}, m)...)
		case gridC:
			grads[0], err = f.apply(gridT, a, b, gr, grid, up)
		}
		if err != nil {
			return nil, err
		}
	}
	if want[1] && f.gridDiff(a, b) {
		if grads[1], err = f.apply(gridO, a, b, withM(gorgonia.Nodes{x, grid, gr}, m)...); err != nil {
			return nil, err
		}
	}
	if len(in) == 3 && want[2] { // M of S and T, G of C
		if kind == gridC {
			grads[2], err = f.apply(gridS, a, b, x, grid, up)
		} else {
			grads[2], err = f.apply(gridC, a, b, x, grid, gr)
		}
	}
	return grads, err
}

// backwardO is the table's row for O_ab(X, grid, G, M).
func (f *gridFamily) backwardO(a, b int, in gorgonia.Nodes, up *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	x, grid, gr := in[0], in[1], in[2]
	var m *gorgonia.Node
	if len(in) == 4 {
		m = in[3]
	}
	grads := make(gorgonia.Nodes, len(in))
	add := func(i int, t *gorgonia.Node) error {
		if grads[i] == nil {
			grads[i] = t
			return nil
		}
		s, err := gorgonia.Add(grads[i], t)
		if err != nil {
			return fmt.Errorf("nn: GridSampleO backward: %w", err)
		}
		grads[i] = s
		return nil
	}
	pair := f.nonzero(a+1, b) && f.nonzero(a, b+1)
	var mrs [2]*gorgonia.Node // M ⊙ Rx, M ⊙ Ry
	for which, ab := range [2][2]int{{a + 1, b}, {a, b + 1}} {
		na, nb := ab[0], ab[1]
		if !f.nonzero(na, nb) {
			continue
		}
		r, err := ad.Apply(gridSplitSpec(f, which), up)
		if err != nil {
			return nil, err
		}
		mr := r
		if m != nil {
			if mr, err = gorgonia.HadamardProd(m, r); err != nil {
				return nil, fmt.Errorf("nn: GridSampleO backward: %w", err)
			}
		}
		mrs[which] = mr
		terms := make(gorgonia.Nodes, len(in))
		if want[0] && !pair {
			if terms[0], err = f.apply(gridT, na, nb, gr, grid, mr); err != nil {
				return nil, err
			}
		}
		if want[1] && f.gridDiff(na, nb) && !pair {
			if terms[1], err = f.apply(gridO, na, nb, x, grid, gr, mr); err != nil {
				return nil, err
			}
		}
		if want[2] && !pair {
			if terms[2], err = f.apply(gridS, na, nb, x, grid, mr); err != nil {
				return nil, err
			}
		}
		if m != nil && want[3] {
			c, err := f.apply(gridC, na, nb, x, grid, gr)
			if err != nil {
				return nil, err
			}
			if terms[3], err = gorgonia.HadamardProd(r, c); err != nil {
				return nil, fmt.Errorf("nn: GridSampleO backward: %w", err)
			}
		}
		for i, t := range terms {
			if t != nil {
				if err := add(i, t); err != nil {
					return nil, err
				}
			}
		}
	}
	if pair {
		// Both halves' T, O and S terms in one pass each.
		for _, t := range []struct {
			i    int
			kind gridKind
			in   gorgonia.Nodes
			on   bool
		}{
			{0, gridT2, gorgonia.Nodes{gr, grid, mrs[0], mrs[1]}, want[0]},
			{1, gridO2, gorgonia.Nodes{x, grid, gr, mrs[0], mrs[1]}, want[1] && (f.gridDiff(a+1, b) || f.gridDiff(a, b+1))},
			{2, gridS2, gorgonia.Nodes{x, grid, mrs[0], mrs[1]}, want[2]},
		} {
			if !t.on {
				continue
			}
			d, err := f.apply(t.kind, a, b, t.in...)
			if err != nil {
				return nil, err
			}
			if err := add(t.i, d); err != nil {
				return nil, err
			}
		}
	}
	return grads, nil
}

// backwardPair is the table's rows for S2_ab(X, grid, M1, M2) and
// T2_ab(G, grid, M1, M2) (gridFamily's comment).
func (f *gridFamily) backwardPair(kind gridKind, a, b int, in gorgonia.Nodes, up *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	grid, m1, m2 := in[1], in[2], in[3]
	x, gr := in[0], up // S2: X, with G the upstream
	other := gridT2
	if kind == gridT2 {
		x, gr, other = up, in[0], gridS2
	}
	grads := make(gorgonia.Nodes, len(in))
	var err error
	if want[0] {
		if grads[0], err = f.apply(other, a, b, up, grid, m1, m2); err != nil {
			return nil, err
		}
	}
	if want[1] && (f.gridDiff(a+1, b) || f.gridDiff(a, b+1)) {
		if grads[1], err = f.apply(gridO2, a, b, x, grid, gr, m1, m2); err != nil {
			return nil, err
		}
	}
	for which, ab := range [2][2]int{{a + 1, b}, {a, b + 1}} {
		if want[2+which] {
			if grads[2+which], err = f.apply(gridC, ab[0], ab[1], x, grid, gr); err != nil {
				return nil, err
			}
		}
	}
	return grads, nil
}

// backwardO2 differentiates O2_ab(X, grid, G, M1, M2) = O_(a+1)b(X, grid,
// G, M1) + O_a(b+1)(X, grid, G, M2): the two O rows, summed in X, grid and
// G.
func (f *gridFamily) backwardO2(a, b int, in gorgonia.Nodes, up *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	grads := make(gorgonia.Nodes, len(in))
	for which, ab := range [2][2]int{{a + 1, b}, {a, b + 1}} {
		if !f.nonzero(ab[0], ab[1]) || !f.gridDiff(ab[0], ab[1]) {
			continue // O_a'b' is zero
		}
		w := []bool{want[0], want[1], want[2], want[3+which]}
		gs, err := f.backwardO(ab[0], ab[1], gorgonia.Nodes{in[0], in[1], in[2], in[3+which]}, up, w)
		if err != nil {
			return nil, err
		}
		for i, gi := range gs {
			k := i
			if i == 3 {
				k = 3 + which
			}
			switch {
			case gi == nil:
			case grads[k] == nil:
				grads[k] = gi
			default:
				if grads[k], err = gorgonia.Add(grads[k], gi); err != nil {
					return nil, fmt.Errorf("nn: GridSampleO2 backward: %w", err)
				}
			}
		}
	}
	return grads, nil
}

// gridSplitSpec is GridSplit: half which (0: x, 1: y) of a grid-shaped
// tensor [N, Ho, Wo, 2] as [N, Ho, Wo]; a linear pair with GridEmbed.
func gridSplitSpec(f *gridFamily, which int) ad.OpSpec {
	_, grid, _, pix := f.shapes()
	mk := func(name string, from, to tensor.Shape, split bool) ad.OpSpec {
		return withCUDA(ad.OpSpec{
			Name: name, Params: fmt.Sprintf("which=%d, %v", which, from), InputDims: []int{from.Dims()}, OutputDims: to.Dims(),
			Shape:            ad.FixedShape("nn: "+name, from, to),
			Kernel:           ad.Floats(gridLayoutKernel[float32](which, split), gridLayoutKernel[float64](which, split)),
			KernelOverwrites: split,
		}, gridLayoutGPU{which, split})
	}
	split, _ := ad.LinearPair(mk("GridSplit", grid, pix, true), mk("GridEmbed", pix, grid, false))
	return split
}

func gridLayoutKernel[T ad.Float](which int, split bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return linearKernel(split, func(in, out []T) { cpu.GridSplit(which, in, out) }, func(in, out []T) { cpu.GridEmbed(which, in, out) })
}

// AffineGrid is torch.nn.functional.affine_grid for 2-D transforms: the
// sampling grid [N, H, W, 2] of the affine maps theta [N, 2, 3] for an
// output of size (N, C, H, W): grid[n, h, w] = theta[n]·(x_w, y_h, 1)ᵀ
// with x_w, y_h torch's normalised pixel coordinates in [−1, 1] (pixel
// centres at ±1 with alignCorners, pixel edges without; 0 for a size of
// 1). Its result feeds GridSample with the same alignCorners. Linear in
// theta (its transpose is its gradient), so differentiable to every
// order, through GridSample too.
//
// Errors when the node is built: theta nil, not float32 or float64, or not
// [N, 2, 3]; size[0] not N; C, H or W below 1 (torch's rule), sizes above
// the package limits. N = 0 gives an empty grid (torch refuses it).
func AffineGrid(theta *gorgonia.Node, size [4]int, alignCorners bool) (*gorgonia.Node, error) {
	const name = "AffineGrid"
	if err := checkNodes(name, []namedNode{{theta, "theta", 3, false}}); err != nil {
		return nil, err
	}
	ts := theta.Shape()
	if ts[1] != 2 || ts[2] != 3 {
		return nil, fmt.Errorf("nn: %s: theta must be [N, 2, 3], got shape %v", name, ts)
	}
	n, h, w := size[0], size[2], size[3]
	if n != ts[0] {
		return nil, fmt.Errorf("nn: %s: size %v: N = %d differs from theta's batch %d", name, size, n, ts[0])
	}
	if size[1] < 1 || h < 1 || w < 1 || h > maxAxis || w > maxAxis {
		return nil, fmt.Errorf("nn: %s: size %v: C, H and W must be in [1, %d]", name, size, maxAxis)
	}
	if err := checkElems(name, "the grid", n, h, w, 2); err != nil {
		return nil, err
	}
	out := tensor.Shape{n, h, w, 2}
	if n == 0 {
		return ad.EmptyResult(name, out, 0, fillTwin, theta)
	}
	in := tensor.Shape{n, 2, 3}
	params := fmt.Sprintf("size=%v align_corners=%t", size, alignCorners)
	mk := func(opName string, from, to tensor.Shape, forward bool) ad.OpSpec {
		return withCUDA(ad.OpSpec{
			Name: opName, Params: params, InputDims: []int{from.Dims()}, OutputDims: to.Dims(),
			Shape:            ad.FixedShape("nn: "+opName, from, to),
			Kernel:           ad.Floats(affineGridKernel[float32](n, h, w, alignCorners, forward), affineGridKernel[float64](n, h, w, alignCorners, forward)),
			KernelOverwrites: true,
		}, affineGridGPU{n, h, w, alignCorners, forward})
	}
	fwd, _ := ad.LinearPair(mk(name, in, out, true), mk(name+"Transpose", out, in, false))
	return ad.Apply(fwd, theta)
}

func affineGridKernel[T ad.Float](n, h, w int, alignCorners, forward bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return linearKernel(forward,
		func(in, out []T) { cpu.AffineGrid(n, h, w, alignCorners, in, out) },
		func(in, out []T) { cpu.AffineGridT(n, h, w, alignCorners, in, out) })
}

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// gridGPU is member kind (a, b) of GridSample's family with n inputs
// (gridsample_cuda.go; its launches are gridGPUPlan's, gridsample_gpu.go).
type gridGPU struct {
	g       cpu.GridSampleGeom
	kind    gridKind
	a, b, n int
}

// gridLayoutGPU is GridSplit (split) or GridEmbed of half which
// (gridsample_cuda.go).
type gridLayoutGPU struct {
	which int
	split bool
}

// affineGridGPU is AffineGrid (forward) or its transpose for a grid
// [n, h, w, 2] (gridsample_cuda.go).
type affineGridGPU struct {
	n, h, w      int
	alignCorners bool
	forward      bool
}
