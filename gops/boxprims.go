package gops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The small ops the box functions (boxops.go, boxloss.go) are built from,
// each closed under differentiation:
//
//   - pointwise ops on same-shape tensors: BoxMaximum, BoxMinimum, BoxClamp
//     (gradient U ⊙ a mask op, piecewise constant, no gradient of its own),
//     BoxAtan (U / (1 + x²)), BoxSigmoid (U ⊙ s ⊙ (1 − s)), BoxSoftplus
//     (U ⊙ sigmoid), BoxPow (U ⊙ γ·BoxPow(x, γ−1)), BoxDiv (IEEE a / b;
//     U / b and −U·((a / b) / b), BoxDivs again), BoxStopGradient (none);
//   - linear pairs: Masked(x, m) (its own transpose), ColumnSelect and
//     ColumnEmbed, StackColumns (its gradient: ColumnSelects), the row
//     gathers (RowGather, IndexSelect) and their scatter-adds;
//   - BoxEmpty: the result of an op on an input with no elements (Gorgonia's
//     elementwise ops panic on empty tensors), with zero gradients.
//
// All but BoxEmpty have CUDA twins (boxops_cuda.go, internal/cuda/kernels/gops/boxops.cu).
//
// torch's subgradients at kinks, which these reproduce: maximum(a, b) and
// minimum(a, b) give each input half the gradient where a == b (and all of
// it to both where either is NaN); clamp(x, lo, hi) passes the gradient
// where lo <= x <= hi, bounds included.

// pointOp is a pointwise function of pointSpec with its parameters
// (cpu.PointOp): the CPU kernel evaluates it with cpu.PointOp.Eval, the
// CUDA twin (boxops_point in internal/cuda/kernels/gops/boxops.cu) from
// the same cpu.PointFn code and parameters, so the two cannot name
// different functions.
type pointOp = cpu.PointOp

// pointParams names o's parameters in its spec's Params (ops are merged
// by it).
func pointParams(o pointOp) string {
	switch o.Fn {
	case cpu.PointClamp, cpu.PointClampMask:
		return fmt.Sprintf("[%v, %v]", o.P1, o.P2)
	case cpu.PointPow:
		return fmt.Sprint(o.P1)
	}
	return ""
}

// pointSpec is the pointwise op f of arity 1 or 2 on tensors of shape s.
// Without backward, the op is piecewise constant: no input gets a gradient.
func pointSpec(name string, f pointOp, s tensor.Shape, arity int, backward func(in gorgonia.Nodes, out, u *gorgonia.Node) (gorgonia.Nodes, error)) ad.OpSpec {
	s = s.Clone()
	dims := make([]int, arity)
	for i := range dims {
		dims[i] = s.Dims()
	}
	spec := ad.OpSpec{
		Name: name, Params: fmt.Sprintf("%s %v", pointParams(f), s), InputDims: dims, OutputDims: s.Dims(),
		Shape:            sameShapes(name, s),
		Kernel:           ad.Floats(pointKernel[float32](f), pointKernel[float64](f)),
		KernelOverwrites: true,
		Backward:         backward,
	}
	if backward == nil {
		spec.DiffWRT = make([]bool, arity)
		spec.Backward = func(in gorgonia.Nodes, _, _ *gorgonia.Node) (gorgonia.Nodes, error) {
			return make(gorgonia.Nodes, len(in)), nil
		}
	}
	return withCUDA(spec, pointGPU{f})
}

// sameShapes is a Shape rule: every input has shape s, and so has the
// result.
func sameShapes(name string, s tensor.Shape) func([]tensor.Shape) (tensor.Shape, error) {
	s = s.Clone()
	return func(in []tensor.Shape) (tensor.Shape, error) {
		for i := range in {
			if !slices.Equal(in[i], s) {
				return nil, fmt.Errorf("gops: %s: input %d shape %v, want %v", name, i, in[i], s)
			}
		}
		return s.Clone(), nil
	}
}

// pointKernel is cpu.Point (unary with one input).
func pointKernel[T ad.Float](f pointOp) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		var b []T
		if len(in) == 2 {
			b = in[1].Data
		}
		cpu.Point(f, out.Data, in[0].Data, b)
		return nil
	}
}

// pointGPU is what pointSpec's CUDA twin needs (boxops_cuda.go).
type pointGPU struct{ f pointOp }

// binaryMinMax applies maximum (max) or minimum to a and b of one shape;
// gradients U ⊙ share(a, b), U ⊙ share(b, a), exactly 0 where the share
// is 0 (shareOf).
func binaryMinMax(a, b *gorgonia.Node, max bool) (*gorgonia.Node, error) {
	s := a.Shape()
	name, f := "BoxMinimum", pointOp{Fn: cpu.PointMinimum}
	if max {
		name, f = "BoxMaximum", pointOp{Fn: cpu.PointMaximum}
	}
	spec := pointSpec(name, f, s, 2, func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
		first, second := in[0], in[1]
		if !max { // minimum(a, b)'s share for a is maxShare(b, a)
			first, second = second, first
		}
		ma, err := ad.Apply(pointSpec("BoxMaxShare", pointOp{Fn: cpu.PointMaxShare}, s, 2, nil), first, second)
		if err != nil {
			return nil, err
		}
		mb, err := ad.Apply(pointSpec("BoxMaxShare", pointOp{Fn: cpu.PointMaxShare}, s, 2, nil), second, first)
		if err != nil {
			return nil, err
		}
		ga, err := shareOf(u, ma)
		if err != nil {
			return nil, err
		}
		gb, err := shareOf(u, mb)
		return gorgonia.Nodes{ga, gb}, err
	})
	return ad.Apply(spec, a, b)
}

// shareOf is U ⊙ m where m != 0 and exactly 0 elsewhere (torch's
// masked_fill and where: an infinite U gives 0 there, not NaN).
func shareOf(u, m *gorgonia.Node) (*gorgonia.Node, error) {
	um, err := gorgonia.HadamardProd(u, m)
	if err != nil {
		return nil, err
	}
	return maskedNode(um, m)
}

// clampNode clamps x to [lo, hi]; its gradient is U where lo <= x <= hi,
// exactly 0 elsewhere, even where U is infinite (torch's clamp_backward, a
// where).
func clampNode(x *gorgonia.Node, lo, hi float64) (*gorgonia.Node, error) {
	s := x.Shape()
	spec := pointSpec("BoxClamp", pointOp{Fn: cpu.PointClamp, P1: lo, P2: hi}, s, 1,
		func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			m, err := ad.Apply(pointSpec("BoxClampMask", pointOp{Fn: cpu.PointClampMask, P1: lo, P2: hi}, s, 1, nil), in[0])
			if err != nil {
				return nil, err
			}
			g, err := maskedNode(u, m)
			return gorgonia.Nodes{g}, err
		})
	return ad.Apply(spec, x)
}

// atanNode is torch.atan; gradient U / (1 + x²).
func atanNode(x *gorgonia.Node) (*gorgonia.Node, error) {
	spec := pointSpec("BoxAtan", pointOp{Fn: cpu.PointAtan}, x.Shape(), 1,
		func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := newBuild(in[0])
			d := b.div(u, b.AddConst(b.Square(in[0]), 1))
			return b.Nodes(d)
		})
	return ad.Apply(spec, x)
}

// sigmoidNode is torch.sigmoid; gradient U ⊙ s ⊙ (1 − s) from its output s.
func sigmoidNode(x *gorgonia.Node) (*gorgonia.Node, error) {
	spec := pointSpec("BoxSigmoid", pointOp{Fn: cpu.PointSigmoid}, x.Shape(), 1, func(_ gorgonia.Nodes, out, u *gorgonia.Node) (gorgonia.Nodes, error) {
		b := newBuild(out)
		d := b.HadamardProd(u, b.HadamardProd(out, b.RSub(1, out)))
		return b.Nodes(d)
	})
	return ad.Apply(spec, x)
}

// softplusNode is log(1 + exp(x)); gradient U ⊙ sigmoid(x).
func softplusNode(x *gorgonia.Node) (*gorgonia.Node, error) {
	spec := pointSpec("BoxSoftplus", pointOp{Fn: cpu.PointSoftplus}, x.Shape(), 1, func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
		s, err := sigmoidNode(in[0])
		if err != nil {
			return nil, err
		}
		d, err := gorgonia.HadamardProd(u, s)
		return gorgonia.Nodes{d}, err
	})
	return ad.Apply(spec, x)
}

// powNode is torch.pow(x, gamma) for a constant gamma; gradient
// U ⊙ gamma·x^(gamma−1), 0 for gamma = 0 (torch's pow_backward).
func powNode(x *gorgonia.Node, gamma float64) (*gorgonia.Node, error) {
	spec := pointSpec("BoxPow", pointOp{Fn: cpu.PointPow, P1: gamma}, x.Shape(), 1,
		func(in gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			b := newBuild(in[0])
			if gamma == 0 {
				return b.Nodes(b.Scale(u, 0))
			}
			p, err := powNode(in[0], gamma-1)
			if err != nil {
				return nil, err
			}
			return b.Nodes(b.HadamardProd(u, b.Scale(p, gamma)))
		})
	return ad.Apply(spec, x)
}

// divNode is a / b elementwise on same-shape tensors, IEEE division in the
// dtype (x/0 = ±Inf, 0/0 = NaN, as torch). Gorgonia's HadamardDiv is not
// used: its pure-Go divide (tensor's vecf32/vecf64 Div) gives +Inf for any
// x/0, 0/0 included, on some of the paths a TapeMachine compiles and IEEE
// values on others, so a graph's values changed when gradients were added
// to it. Gradients are torch's div backward: U / b and −U·((a / b) / b),
// the latter from the output q = a / b; both are built from divNode again,
// so every order divides the same way.
func divNode(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	s := a.Shape()
	spec := pointSpec("BoxDiv", pointOp{Fn: cpu.PointDiv}, s, 2, func(in gorgonia.Nodes, q, u *gorgonia.Node) (gorgonia.Nodes, error) {
		ga, err := divNode(u, in[1])
		if err != nil {
			return nil, err
		}
		nu, err := gorgonia.Neg(u)
		if err != nil {
			return nil, err
		}
		qb, err := divNode(q, in[1])
		if err != nil {
			return nil, err
		}
		gb, err := gorgonia.HadamardProd(nu, qb)
		return gorgonia.Nodes{ga, gb}, err
	})
	spec.Kernel = ad.Floats(divKernel[float32], divKernel[float64]) // the same values, without a call per element
	return ad.Apply(spec, a, b)
}

// divKernel is cpu.Div.
func divKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	cpu.Div(out.Data, in[0].Data, in[1].Data)
	return nil
}

// stopGradient is x, through which no gradient flows (torch.no_grad).
func stopGradient(x *gorgonia.Node) (*gorgonia.Node, error) {
	return ad.Apply(pointSpec("BoxStopGradient", pointOp{Fn: cpu.PointCopy}, x.Shape(), 1, nil), x)
}

// maskedNode is x where m != 0 and 0 elsewhere (torch's x[mask] = ...):
// linear in x and its own transpose; m gets no gradient.
func maskedNode(x, m *gorgonia.Node) (*gorgonia.Node, error) {
	s := x.Shape()
	spec := pointSpec("BoxMasked", pointOp{Fn: cpu.PointMasked}, s, 2, nil)
	spec.DiffWRT, spec.Backward = []bool{true, false}, nil
	f, _ := ad.LinearPair(spec, spec)
	return ad.Apply(f, x, m)
}

// bothPositive is 1 where a > 0 and b > 0, else 0 (no gradient).
func bothPositive(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	return ad.Apply(pointSpec("BoxBothPositive", pointOp{Fn: cpu.PointBothPositive}, a.Shape(), 2, nil), a, b)
}

// columnSpecs are ColumnSelect ([P, C] → its column j, [P]) and
// ColumnEmbed ([P] → [P, C], zeros but column j): a linear pair.
func columnSpecs(p, c, j int) (sel, embed ad.OpSpec) {
	mk := func(name string, from, to tensor.Shape, fwd bool) ad.OpSpec {
		return withCUDA(ad.OpSpec{
			Name: name, Params: fmt.Sprintf("[%d, %d] column %d", p, c, j), InputDims: []int{from.Dims()}, OutputDims: to.Dims(),
			Shape:            ad.FixedShape("gops: "+name, from, to),
			Kernel:           ad.Floats(columnKernel[float32](c, j, fwd), columnKernel[float64](c, j, fwd)),
			KernelOverwrites: fwd,
		}, columnGPU{p, c, j, fwd})
	}
	return ad.LinearPair(mk("ColumnSelect", tensor.Shape{p, c}, tensor.Shape{p}, true), mk("ColumnEmbed", tensor.Shape{p}, tensor.Shape{p, c}, false))
}

// columnKernel is cpu.ColumnSelect (fwd) or cpu.ColumnEmbed.
func columnKernel[T ad.Float](c, j int, fwd bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		if fwd {
			cpu.ColumnSelect(c, j, out.Data, in[0].Data)
		} else {
			cpu.ColumnEmbed(c, j, out.Data, in[0].Data)
		}
		return nil
	}
}

// columnGPU is what the CUDA twins of ColumnSelect (fwd) and ColumnEmbed
// need (boxops_cuda.go).
type columnGPU struct {
	p, c, j int
	fwd     bool
}

// columns splits x [P, C] into its C columns, each [P].
func columns(x *gorgonia.Node) (gorgonia.Nodes, error) {
	s := x.Shape()
	cols := make(gorgonia.Nodes, s[1])
	for j := range cols {
		sel, _ := columnSpecs(s[0], s[1], j)
		var err error
		if cols[j], err = ad.Apply(sel, x); err != nil {
			return nil, err
		}
	}
	return cols, nil
}

// stackColumns is torch.stack(cols, dim=1): C vectors [P] → [P, C]; its
// gradient w.r.t. column j is ColumnSelect(U, j).
func stackColumns(cols ...*gorgonia.Node) (*gorgonia.Node, error) {
	p, c := cols[0].Shape()[0], len(cols)
	dims := make([]int, c)
	for i := range dims {
		dims[i] = 1
	}
	spec := ad.OpSpec{
		Name: "StackColumns", Params: fmt.Sprintf("[%d, %d]", p, c), InputDims: dims, OutputDims: 2,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			for i := range in {
				if !slices.Equal(in[i], tensor.Shape{p}) {
					return nil, fmt.Errorf("gops: StackColumns: input %d %v, want (%d)", i, in[i], p)
				}
			}
			return tensor.Shape{p, c}, nil
		},
		Kernel:           ad.Floats(stackKernel[float32], stackKernel[float64]),
		KernelOverwrites: true,
		Backward: func(_ gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			return columns(u)
		},
	}
	return ad.Apply(withCUDA(spec, stackGPU{}), cols...)
}

// stackKernel is cpu.StackColumns.
func stackKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	cpu.StackColumns(out.Data, tensorData(in))
	return nil
}

// tensorData is the data of each tensor of in, in order.
func tensorData[T ad.Float](in []ad.Tensor[T]) [][]T {
	d := make([][]T, len(in))
	for i, t := range in {
		d[i] = t.Data
	}
	return d
}

// stackGPU is StackColumns' CUDA twin (boxops_cuda.go).
type stackGPU struct{}

// rowGatherSpecs are RowGather (x [K, rest...] → [len(idx), rest...], rows
// idx of x, idx fixed when the graph is built) and RowScatterAdd (back,
// adding): a linear pair. key names idx in Params (ops are merged by it).
func rowGatherSpecs(xs tensor.Shape, idx []int, key string) (gather, scatter ad.OpSpec) {
	return rowSelectSpecs([2]string{"RowGather", "RowScatterAdd"}, xs, len(idx), idx, key)
}

// rowSelectSpecs are a row gather (x [K, rest...] → [P, rest...], rows
// idx of x) and the scatter-add of rows back, a linear pair in the first
// input, named names[0] and names[1]: the one implementation of RowGather
// (idx fixed when the graph is built, given here, named by key in Params)
// and IndexSelect (fixed nil: idx is the ops' second input, a tensor.Int
// [P] node without gradient, checked against K when the op runs).
func rowSelectSpecs(names [2]string, xs tensor.Shape, p int, fixed []int, key string) (gather, scatter ad.OpSpec) {
	xs = xs.Clone()
	ys := xs.Clone()
	ys[0] = p
	k, n := xs[0], tensor.Shape(xs[1:]).TotalSize()
	idxInput := fixed == nil
	mk := func(name string, from, to tensor.Shape, fwd bool) ad.OpSpec {
		spec := ad.OpSpec{
			Name: name, Params: strings.TrimSpace(fmt.Sprintf("%v→%v %s", from, to, key)), InputDims: []int{from.Dims()}, OutputDims: to.Dims(),
			Shape: func(in []tensor.Shape) (tensor.Shape, error) {
				if !slices.Equal(in[0], from) || idxInput && !slices.Equal(in[1], tensor.Shape{p}) {
					if idxInput {
						return nil, fmt.Errorf("gops: %s: inputs %v and idx %v, want %v and (%d)", name, in[0], in[1], from, p)
					}
					return nil, fmt.Errorf("gops: %s: input %v, want %v", name, in[0], from)
				}
				return to.Clone(), nil
			},
			Kernel:           ad.Floats(rowSelectKernel[float32](fixed, k, n, fwd), rowSelectKernel[float64](fixed, k, n, fwd)),
			KernelOverwrites: fwd,
		}
		if idxInput {
			spec.InputDims = append(spec.InputDims, 1)
			spec.InputDtypes, spec.DiffWRT = []tensor.Dtype{{}, tensor.Int}, []bool{true, false}
		}
		return withCUDA(spec, rowSelectGPU{fixed, k, n, fwd})
	}
	return ad.LinearPair(mk(names[0], xs, ys, true), mk(names[1], ys, xs, false))
}

// rowSelectKernel gathers (fwd) or scatter-adds rows of n elements, at the
// fixed indices or, when fixed is nil, at those of the second input after
// checking each against k rows.
func rowSelectKernel[T ad.Float](fixed []int, k, n int, fwd bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		idx := fixed
		if fixed == nil {
			idx = in[1].Ints
			if err := checkRowIndices("IndexSelect", idx, k); err != nil {
				return err
			}
		}
		if fwd {
			cpu.GatherRows(out.Data, in[0].Data, idx, n)
		} else {
			cpu.ScatterAddRows(out.Data, in[0].Data, idx, n)
		}
		return nil
	}
}

// inverseRows is the inverse of a row index into k rows, in CSR form: the
// rows r with idx[r] = d are rows[start[d]:start[d+1]], in increasing
// order (a counting sort, stable in r).
func inverseRows(idx []int, k int) (start, rows []int64) {
	start = make([]int64, k+1)
	for _, d := range idx {
		start[d+1]++
	}
	for d := 0; d < k; d++ {
		start[d+1] += start[d]
	}
	next := append([]int64(nil), start[:k]...)
	rows = make([]int64, len(idx))
	for r, d := range idx {
		rows[next[d]] = int64(r)
		next[d]++
	}
	return start, rows
}

// checkRowIndices checks that every row index is in [0, k): IndexSelect's
// check when it runs, on the CPU and, with the same error, on the GPU.
func checkRowIndices(name string, idx []int, k int) error {
	for r, i := range idx {
		if i < 0 || i >= k {
			return fmt.Errorf("gops: %s: idx[%d] = %d is outside [0, %d)", name, r, i, k)
		}
	}
	return nil
}

// rowSelectGPU is what the CUDA twins of the row gathers (fwd) and their
// scatter-adds need (boxops_cuda.go): the fixed indices (nil: the second
// input's), x's k rows of n elements.
type rowSelectGPU struct {
	fixed []int
	k, n  int
	fwd   bool
}

// pairRows expands a [N, C] and b [M, C] to all N·M pairs: rows i·M + j
// are a's row i and b's row j.
func pairRows(a, b *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, error) {
	n, m := a.Shape()[0], b.Shape()[0]
	ia, ib := make([]int, n*m), make([]int, n*m)
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			ia[i*m+j], ib[i*m+j] = i, j
		}
	}
	ga, _ := rowGatherSpecs(a.Shape(), ia, fmt.Sprintf("repeat %d×%d", n, m))
	gb, _ := rowGatherSpecs(b.Shape(), ib, fmt.Sprintf("tile %d×%d", n, m))
	ea, err := ad.Apply(ga, a)
	if err != nil {
		return nil, nil, err
	}
	eb, err := ad.Apply(gb, b)
	return ea, eb, err
}

// build is ad's formula builder with the ops above (div is divNode, never
// Gorgonia's divide), so that a box formula reads as one expression.
type build struct{ *ad.Builder }

func newBuild(like *gorgonia.Node) *build { return &build{ad.NewBuilder(like)} }

func (b *build) div(x, y *gorgonia.Node) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return divNode(x, y) })
}
func (b *build) max(x, y *gorgonia.Node) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return binaryMinMax(x, y, true) })
}
func (b *build) min(x, y *gorgonia.Node) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return binaryMinMax(x, y, false) })
}
func (b *build) clamp(x *gorgonia.Node, lo, hi float64) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return clampNode(x, lo, hi) })
}
func (b *build) atan(x *gorgonia.Node) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return atanNode(x) })
}
func (b *build) stop(x *gorgonia.Node) *gorgonia.Node {
	return b.Do(func() (*gorgonia.Node, error) { return stopGradient(x) })
}
