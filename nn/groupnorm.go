package nn

import (
	"fmt"
	"slices"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// groupNormAffine is GroupNorm with a weight or a bias as one op:
// ChannelAffine(RowNorm(x), w, b) computed row by row (a row is one group
// of one sample), each row's affine step done while the row is in cache.
// The numbers are the two ops' to the bit; one result of x's size instead
// of two, and one pass over it less. Its gradients are the two ops':
//
//	∂x = RowNormGrad(x, ChannelAffine(U, w)),
//	∂w = ChannelDot(U, RowNorm(x)), ∂b = ChannelTotal(U),
//
// computed by GroupNormGradX and GroupNormGradW below (without storing
// ChannelAffine(U, w) or RowNorm(x)); all members of closed families, so
// every order is available.
func groupNormAffine(x, weight, bias *gorgonia.Node, rg rowGeom, cg chanGeom, groups int) (*gorgonia.Node, error) {
	in := gorgonia.Nodes{x}
	for _, p := range []*gorgonia.Node{weight, bias} {
		if p != nil {
			in = append(in, p)
		}
	}
	return ad.Apply(groupNormAffineSpec(rg, cg, groups, weight != nil, bias != nil), in...)
}

func groupNormAffineSpec(rg rowGeom, cg chanGeom, groups int, hasW, hasB bool) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormAffine", Params: fmt.Sprintf("%s groups %d as %v weight %v bias %v", rg.params(), groups, cg, hasW, hasB),
		InputDims: affineDims(s, hasW, hasB), OutputDims: s.Dims(), Shape: affineShape("GroupNorm", s, cg.c),
		Kernel:           ad.Floats(groupNormAffineKernel[float32](rg, cg, hasW, hasB), groupNormAffineKernel[float64](rg, cg, hasW, hasB)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			return groupNormAffineBackward(rg, cg, hasW, hasB, in, u, want)
		},
	}, groupNormAffineGPU{rowNormGPU{rg.rows, rg.n, rg.eps, rowNormForward}, channelAffineGPU{cg, hasW, hasB}})
}

// groupNormAffineBackward builds the gradients that want asks for. When
// ∂w is wanted, one GroupNormStats pass over (u, x) gives every row's
// (μ, r) and every plane's Σu and Σu·y, which ∂x, ∂w and ∂b then share:
// ∂w and ∂b become sums over samples of [N, C] numbers, and ∂x one pass
// over (u, x) without recomputing the statistics: u and x are read twice
// each, where GroupNormGradX, GroupNormGradW and ChannelTotal read u three
// times and x twice, with the row's moments computed twice. Without ∂w,
// GroupNormGradX (or RowNormGrad) and ChannelTotal.
func groupNormAffineBackward(rg rowGeom, cg chanGeom, hasW, hasB bool, in gorgonia.Nodes, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
	x := in[0]
	grads := make(gorgonia.Nodes, len(in))
	bi := len(in) - 1 // the bias's input, when hasB
	build := func() error {
		if hasW && want[1] {
			stats, err := ad.Apply(groupNormStatsSpec(rg, cg), u, x)
			if err != nil {
				return err
			}
			if want[0] {
				if grads[0], err = ad.Apply(groupNormGradXSpec(rg, cg, true), x, u, in[1], stats); err != nil {
					return err
				}
			}
			if grads[1], err = ad.Apply(groupNormGradWSpec(rg, cg, true), u, x, stats); err != nil {
				return err
			}
			if hasB && want[bi] {
				grads[bi], err = ad.Apply(groupNormGradBSpec(rg, cg), u, stats)
			}
			return err
		}
		var err error
		if want[0] {
			if hasW {
				grads[0], err = ad.Apply(groupNormGradXSpec(rg, cg, false), x, u, in[1])
			} else {
				grads[0], err = ad.Apply(rowNormGradSpec(rg), x, u)
			}
			if err != nil {
				return err
			}
		}
		if hasB && want[bi] {
			total, _ := channelTotalSpecs(rg.s, cg)
			grads[bi], err = ad.Apply(total, u)
		}
		return err
	}
	if err := build(); err != nil {
		return nil, err
	}
	return grads, nil
}

// groupNormAffineKernel is rowNormKernel then channelAffineKernel, one row
// (a group) at a time, with the same arithmetic as the two
// (cpu.GroupNormAffine).
func groupNormAffineKernel[T ad.Float](rg rowGeom, cg chanGeom, hasW, hasB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		w, b := affineParams(cg.c, in, hasW, hasB)
		cpu.GroupNormAffine(rg.kern(), cg.kern(), out.Data, in[0].Data, w, b)
		return nil
	}
}

// The gradients of GroupNormAffine with a weight, each one op so that a
// first-order pass makes one result of x's size (∂x) besides the forward's:
//
//	GroupNormGradX(x, u, w) = RowNormGrad(x, ChannelAffine(u, w))
//	GroupNormGradW(u, x)    = ChannelDot(u, RowNorm(x))
//	GroupNormGradB(u)       = ChannelTotal(u)
//
// Their own gradients, for upstream V, are built from the closed families
// (and each other), so every order is available:
//
//	GradX: ∂x = d/dx Σ V·RowNormGrad(x, uw) (rowNormGradX, uw = ChannelAffine(u, w)),
//	       ∂u = ChannelAffine(RowNormGrad(x, V), w), ∂w = ChannelDot(RowNormGrad(x, V), u)
//	GradW: ∂u = ChannelAffine(RowNorm(x), V), ∂x = GroupNormGradX(x, u, V)
//	GradB: ∂u = ChannelSpread(V)
//
// With stats, GradX and GradW take a last input, GroupNormStats(u, x)
// (groupNormStatsSpec), and GroupNormGradB exists only so: the same
// functions of (x, u, w), computed from the shared statistics. That input
// is a function of the others, so it is declared without a gradient
// (DiffWRT false) and the gradients above, w.r.t. x, u and w, are the
// whole derivative.
func groupNormGradXSpec(rg rowGeom, cg chanGeom, stats bool) ad.OpSpec {
	s := rg.s.Clone()
	dims, diff, kernel := []int{s.Dims(), s.Dims(), 1}, []bool{true, true, true}, ad.Floats(groupNormGradXKernel[float32](rg, cg), groupNormGradXKernel[float64](rg, cg))
	if stats {
		dims, diff, kernel = append(dims, 1), append(diff, false), ad.Floats(groupNormGradXStatsKernel[float32](rg, cg), groupNormGradXStatsKernel[float64](rg, cg))
	}
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradX", Params: fmt.Sprintf("%s as %v stats %v", rg.params(), cg, stats), InputDims: dims, OutputDims: s.Dims(), DiffWRT: diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], s) || !slices.Equal(in[2], tensor.Shape{cg.c}) || stats && !slices.Equal(in[3], statsShape(rg, cg)) {
				return nil, fmt.Errorf("nn: GroupNormGradX: inputs %v, want %v, %v, (%d) and the statistics %v", in, s, s, cg.c, statsShape(rg, cg))
			}
			return s.Clone(), nil
		},
		Kernel:           kernel,
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			x, u, w := in[0], in[1], in[2]
			b := ad.NewBuilder(x)
			uw := b.Apply(channelAffineSpec(s, cg, true, false), u, w)
			dx := b.Do(func() (*gorgonia.Node, error) { return rowNormGradX(rg, x, uw, v) })
			gv := b.Apply(rowNormGradSpec(rg), x, v)
			du := b.Apply(channelAffineSpec(s, cg, true, false), gv, w)
			dw := b.Apply(channelDotSpec(s, cg), gv, u)
			if stats {
				return b.Nodes(dx, du, dw, nil)
			}
			return b.Nodes(dx, du, dw)
		},
	}, groupNormGradGPU{rg, cg, groupNormGradXKind, stats})
}

func groupNormGradWSpec(rg rowGeom, cg chanGeom, stats bool) ad.OpSpec {
	s := rg.s.Clone()
	dims, diff, kernel := []int{s.Dims(), s.Dims()}, []bool{true, true}, ad.Floats(groupNormGradWKernel[float32](rg, cg), groupNormGradWKernel[float64](rg, cg))
	if stats {
		dims, diff, kernel = append(dims, 1), append(diff, false), ad.Floats(groupNormStatsTotal[float32](rg, cg, 1), groupNormStatsTotal[float64](rg, cg, 1))
	}
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradW", Params: fmt.Sprintf("%s as %v stats %v", rg.params(), cg, stats), InputDims: dims, OutputDims: 1, DiffWRT: diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], s) || stats && !slices.Equal(in[2], statsShape(rg, cg)) {
				return nil, fmt.Errorf("nn: GroupNormGradW: inputs %v, want %v, %v and the statistics %v", in, s, s, statsShape(rg, cg))
			}
			return tensor.Shape{cg.c}, nil
		},
		Kernel:           kernel,
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			u, x := in[0], in[1]
			b := ad.NewBuilder(x)
			y := b.Apply(rowNormSpec(rg), x)
			du := b.Apply(channelAffineSpec(s, cg, true, false), y, v)
			dx := b.Apply(groupNormGradXSpec(rg, cg, false), x, u, v)
			if stats {
				return b.Nodes(du, dx, nil)
			}
			return b.Nodes(du, dx)
		},
	}, groupNormGradGPU{rg, cg, groupNormGradWKind, stats})
}

// groupNormGradBSpec is GroupNormGradB(u, stats) = ChannelTotal(u), from
// the statistics' per-plane sums.
func groupNormGradBSpec(rg rowGeom, cg chanGeom) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormGradB", Params: fmt.Sprintf("%s as %v", rg.params(), cg), InputDims: []int{s.Dims(), 1}, OutputDims: 1, DiffWRT: []bool{true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], statsShape(rg, cg)) {
				return nil, fmt.Errorf("nn: GroupNormGradB: inputs %v, want %v and the statistics %v", in, s, statsShape(rg, cg))
			}
			return tensor.Shape{cg.c}, nil
		},
		Kernel:           ad.Floats(groupNormStatsTotal[float32](rg, cg, 0), groupNormStatsTotal[float64](rg, cg, 0)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			_, spread := channelTotalSpecs(s, cg)
			du, err := ad.Apply(spread, v)
			return gorgonia.Nodes{du, nil}, err
		},
	}, groupNormGradGPU{rg, cg, groupNormGradBKind, true})
}

// groupNormStatsSpec is GroupNormStats(u, x): for each row i its
// (μ, r) as RowNorm computes them, in slots 2i and 2i+1, then for each
// plane q (sample n, channel c: q = n·C + c) Σu and Σu·y over the plane
// (vmath.SumDotNorm, y = (x − μ)·r), in slots 2·rows + 2q and
// 2·rows + 2q + 1. A slot holds a float64 in two elements of the dtype
// (cpu.StatSlot): the statistics keep float64's precision in float32 too.
// Not differentiable: only the ops above read it, as a shortcut to
// numbers that are functions of their other inputs.
func groupNormStatsSpec(rg rowGeom, cg chanGeom) ad.OpSpec {
	s := rg.s.Clone()
	return withCUDA(ad.OpSpec{
		Name: "GroupNormStats", Params: fmt.Sprintf("%s as %v", rg.params(), cg), InputDims: []int{s.Dims(), s.Dims()}, OutputDims: 1, DiffWRT: []bool{false, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], s) {
				return nil, fmt.Errorf("nn: GroupNormStats: inputs %v and %v, want %v", in[0], in[1], s)
			}
			return statsShape(rg, cg), nil
		},
		Kernel:           ad.Floats(groupNormStatsKernel[float32](rg, cg), groupNormStatsKernel[float64](rg, cg)),
		KernelOverwrites: true,
	}, groupNormGradGPU{rg, cg, groupNormStatsKind, true})
}

// statsShape is GroupNormStats's shape: two elements for each of the
// 2·rows + 2·planes slots.
func statsShape(rg rowGeom, cg chanGeom) tensor.Shape {
	return tensor.Shape{cpu.GroupNormStatsSize(rg.kern(), cg.kern())}
}

// groupNormStatsKernel writes GroupNormStats(u, x) (cpu.GroupNormStats).
func groupNormStatsKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.GroupNormStats(rg.kern(), cg.kern(), out.Data, in[0].Data, in[1].Data)
		return nil
	}
}

// groupNormStatsTotal writes, per channel, the statistics' Σu (which 0:
// GroupNormGradB) or Σu·y (which 1: GroupNormGradW) summed over samples;
// inputs (u, x, stats) or (u, stats) (cpu.GroupNormStatsTotal).
func groupNormStatsTotal[T ad.Float](rg rowGeom, cg chanGeom, which int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.GroupNormStatsTotal(rg.kern(), cg.kern(), which, out.Data, in[len(in)-1].Data)
		return nil
	}
}

// groupNormGradXStatsKernel is groupNormGradXKernel with the row's
// (μ, r) and its planes' sums from the statistics (inputs x, u, w,
// stats; cpu.GroupNormGradXStats).
func groupNormGradXStatsKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.GroupNormGradXStats(rg.kern(), cg.kern(), out.Data, in[0].Data, in[1].Data, in[2].Data, in[3].Data)
		return nil
	}
}

// groupNormGradXKernel writes r·(uw − mean uw − y·mean(uw·y)) per row,
// uw = u·w[c] (inputs x, u, w; cpu.GroupNormGradX).
func groupNormGradXKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.GroupNormGradX(rg.kern(), cg.kern(), out.Data, in[0].Data, in[1].Data, in[2].Data)
		return nil
	}
}

// groupNormGradWKernel writes Σ over samples of r·Σ u·(x − μ) for each
// channel (inputs u, x; cpu.GroupNormGradW).
func groupNormGradWKernel[T ad.Float](rg rowGeom, cg chanGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.GroupNormGradW(rg.kern(), cg.kern(), out.Data, in[0].Data, in[1].Data)
		return nil
	}
}

// The CUDA twin's descriptors (launch code in the *_cuda.go files; withCUDA
// ignores them in the CPU build).

// groupNormAffineGPU is GroupNorm's fused op: RowNorm's kernel, then
// ChannelAffine's in place on its result (norm_cuda.go).
type groupNormAffineGPU struct {
	row rowNormGPU
	aff channelAffineGPU
}

// groupNormGradKind picks one of GroupNorm's gradient ops (groupnorm.go).
type groupNormGradKind int

const (
	groupNormGradXKind groupNormGradKind = iota // GroupNormGradX
	groupNormGradWKind                          // GroupNormGradW
	groupNormGradBKind                          // GroupNormGradB (always with stats)
	groupNormStatsKind                          // GroupNormStats
)

// groupNormGradGPU is one of GroupNorm's gradient ops: with stats (the
// last input GroupNormStats) their kernels on the statistics, without the
// unfused kernels through a temporary (norm_cuda.go).
type groupNormGradGPU struct {
	rg    rowGeom
	cg    chanGeom
	kind  groupNormGradKind
	stats bool
}
