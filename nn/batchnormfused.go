package nn

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/gops-dev/gops/ad"
	"github.com/gops-dev/gops/internal/cpu"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Training BatchNorm as fused ops (CPU build; the cuda build keeps the
// composed graph of batchNormComposed), on the input's shape s seen as
// [N, C, L], with per channel μ, biased σ², r = (σ² + eps)^(-1/2) and
// x̂ = (x − μ)·r over its N·L values:
//
//	BatchNormTrain(x, w, b)  = x̂·w[c] + b[c] (w, b optional)
//	BatchNormGradX(x, u, w)  = r·w·(u − mean u − x̂·mean(u·x̂)), per channel
//	BatchNormGradW(u, x)     = Σ u·x̂, [C]
//	BatchNormGradB(u)        = Σ u, [C] (ChannelTotal)
//
// BatchNormTrain's gradients for upstream u are GradX(x, u, w),
// GradW(u, x) and GradB(u) (torch's batch_norm_backward). First-order
// passes give them a last input, BatchNormStats(u, x): each channel's μ,
// r, Σu and Σu·x̂ from one pass over its planes while they are in cache,
// so that ∂x is one more pass and ∂w, ∂b are read off; that input is a
// function of the others, declared without a gradient. For upstream V:
//
//	GradW: ∂u = ChannelAffine(BatchNormTrain(x), V), ∂x = GradX(x, u, V)
//	GradB: ∂u = ChannelSpread(V)
//	GradX: ∂u = GradX(x, V, w) (linear in u, symmetric),
//	       ∂w = ChannelDot(V, GradX(x, u)),
//	       ∂x = ad.VJP of the composed graph's own gradient w.r.t. x
//
// the last, the only one outside the family, slow but right at every order
// (batchNormGradXX). So first-order passes run the fused kernels and every
// order is available.
//
// With BatchNormOpts.Mask (bnGeom.masked) every op of the family but
// GradB takes the mask [N] as its last input, without a gradient: μ and r
// are the kept samples' (cpu.BatchGeom.Keep); GradX's mean terms reach
// the kept samples only, and GradX is no longer symmetric in u: its
// gradient w.r.t. u is GradXT (the mean terms over the kept samples, on
// every sample).

// bnGeom is BatchNorm's input shape s seen as [n, c, l], normalised with
// eps.
type bnGeom struct {
	s       tensor.Shape
	n, c, l int
	eps     float64
	// masked: the ops take BatchNormOpts.Mask as their last input.
	masked bool
}

func (g bnGeom) params() string { return fmt.Sprintf("%v eps %v masked %v", g.s, g.eps, g.masked) }

// unmasked is g without the mask (GradB and the ops of eval mode).
func (g bnGeom) unmasked() bnGeom {
	g.masked = false
	return g
}

// withMask appends the mask to a spec's inputs when g is masked: its
// rank, no gradient, its shape [N].
func (g bnGeom) withMask(spec ad.OpSpec) ad.OpSpec {
	if !g.masked {
		return spec
	}
	diff := spec.DiffWRT
	if diff == nil {
		diff = make([]bool, len(spec.InputDims))
		for i := range diff {
			diff[i] = true
		}
	}
	spec.InputDims = append(slices.Clone(spec.InputDims), 1)
	spec.DiffWRT = append(slices.Clone(diff), false)
	shape := spec.Shape
	spec.Shape = func(in []tensor.Shape) (tensor.Shape, error) {
		last := len(in) - 1
		if !slices.Equal(in[last], tensor.Shape{g.n}) {
			return nil, fmt.Errorf("nn: %s: mask %v, want (%d)", spec.Name, in[last], g.n)
		}
		return shape(in[:last])
	}
	return spec
}

// args are in, then the mask when g is masked.
func (g bnGeom) args(mask *gorgonia.Node, in ...*gorgonia.Node) gorgonia.Nodes {
	if g.masked {
		return append(in, mask)
	}
	return in
}

// maskOf splits a masked op's inputs into the others and the mask (nil
// when g is not masked).
func (g bnGeom) maskOf(in gorgonia.Nodes) (gorgonia.Nodes, *gorgonia.Node) {
	if !g.masked {
		return in, nil
	}
	return in[:len(in)-1], in[len(in)-1]
}

// grads are a masked op's gradients: those of the other inputs, then nil
// for the mask.
func (g bnGeom) grads(gs gorgonia.Nodes, err error) (gorgonia.Nodes, error) {
	if err != nil || !g.masked {
		return gs, err
	}
	return append(gs, nil), nil
}

// split is a kernel's geometry and inputs: with a mask (the last input),
// the geometry keeps the samples whose entry is 1 and the inputs go
// without it; an entry other than 0 or 1 is an error.
func split[T ad.Float](g bnGeom, in []ad.Tensor[T]) (cpu.BatchGeom, []ad.Tensor[T], error) {
	kg := g.kern()
	if !g.masked {
		return kg, in, nil
	}
	last := len(in) - 1
	var err error
	kg.Keep, _, err = maskKeep(in[last].Data)
	return kg, in[:last], err
}

// kern is g as the kernels' geometry.
func (g bnGeom) kern() cpu.BatchGeom { return cpu.BatchGeom{N: g.n, C: g.c, L: g.l, Eps: g.eps} }

// chans is g as normaffine.go's channels.
func (g bnGeom) chans() chanGeom { return chanGeom{g.n, g.c, g.l} }

// batchNormTrain is BatchNormTrain(x, weight, bias), weight or bias nil
// for none, updating stats once per run; mask: BatchNormOpts.Mask when g
// is masked.
func batchNormTrain(x, weight, bias, mask *gorgonia.Node, g bnGeom, stats *runningStats) (*gorgonia.Node, error) {
	in := gorgonia.Nodes{x}
	for _, p := range []*gorgonia.Node{weight, bias} {
		if p != nil {
			in = append(in, p)
		}
	}
	return ad.Apply(batchNormTrainSpec(g, stats, weight != nil, bias != nil), g.args(mask, in...)...)
}

// batchNormTrainSpec is BatchNormTrain on g: inputs x, then w [C] if hasW,
// then b [C] if hasB; with stats (nil for none) its kernel updates the
// running statistics.
func batchNormTrainSpec(g bnGeom, stats *runningStats, hasW, hasB bool) ad.OpSpec {
	return g.withMask(ad.OpSpec{
		Name: "BatchNormTrain", Params: fmt.Sprintf("%s weight %v bias %v stats %p", g.params(), hasW, hasB, stats),
		InputDims: affineDims(g.s, hasW, hasB), OutputDims: g.s.Dims(), Shape: affineShape("BatchNorm", g.s, g.c),
		Kernel:           ad.Floats(batchNormTrainKernel[float32](g, stats, hasW, hasB), batchNormTrainKernel[float64](g, stats, hasW, hasB)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			in, mask := g.maskOf(in)
			return g.grads(batchNormTrainBackward(g, hasW, hasB, in, u, want, mask))
		},
	})
}

// batchNormTrainBackward builds the gradients of BatchNormTrain that want
// asks for. With ∂x wanted, one BatchNormStats pass over (u, x) gives each
// channel's μ, r, Σu and Σu·x̂, which ∂x (one more pass), ∂w and ∂b share;
// without, BatchNormGradW and ChannelTotal, each on its own.
func batchNormTrainBackward(g bnGeom, hasW, hasB bool, in gorgonia.Nodes, u *gorgonia.Node, want []bool, mask *gorgonia.Node) (gorgonia.Nodes, error) {
	x := in[0]
	grads := make(gorgonia.Nodes, len(in))
	bi := len(in) - 1 // the bias's input, when hasB
	b := ad.NewBuilder(x)
	if want[0] {
		stats := b.Apply(batchNormStatsSpec(g, false), g.args(mask, u, x)...)
		xin := gorgonia.Nodes{x, u}
		if hasW {
			xin = append(xin, in[1])
		}
		grads[0] = b.Apply(batchNormGradXSpec(g, hasW, true, false), g.args(mask, append(xin, stats)...)...)
		if hasW && want[1] {
			grads[1] = b.Apply(batchNormGradWSpec(g, true), g.args(mask, u, x, stats)...)
		}
		if hasB && want[bi] {
			grads[bi] = b.Apply(batchNormGradBSpec(g.unmasked()), u, stats)
		}
		return b.Nodes(grads...)
	}
	if hasW && want[1] {
		grads[1] = b.Apply(batchNormGradWSpec(g, false), g.args(mask, u, x)...)
	}
	if hasB && want[bi] {
		total, _ := channelTotalSpecs(g.s, g.chans())
		grads[bi] = b.Apply(total, u)
	}
	return b.Nodes(grads...)
}

// batchNormTrainKernel is cpu.BatchNormTrain, updating stats (when it
// holds a running statistic) from the batch's.
func batchNormTrainKernel[T ad.Float](g bnGeom, stats *runningStats, hasW, hasB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		kg, in, err := split(g, in)
		if err != nil {
			return err
		}
		w, b := affineParams(g.c, in, hasW, hasB)
		var update func(ci int, mean, unbiased float64)
		if stats != nil && (stats.mean != nil || stats.variance != nil) {
			update = stats.update
		}
		cpu.BatchNormTrain(kg, out.Data, in[0].Data, w, b, update)
		return nil
	}
}

// batchNormGradXSpec is BatchNormGradX on g (BatchNormGradXT with t):
// inputs x, u, then w [C] if hasW, then with stats BatchNormStats(u, x),
// a function of the others declared without a gradient (its numbers a
// shortcut the kernel takes; not with t), then the mask if g is masked.
func batchNormGradXSpec(g bnGeom, hasW, stats, t bool) ad.OpSpec {
	name := "BatchNormGradX"
	if t && g.masked {
		name = "BatchNormGradXT"
	} else {
		t = false // (symmetric without a mask)
	}
	s := g.s.Clone()
	dims, diff := []int{s.Dims(), s.Dims()}, []bool{true, true}
	if hasW {
		dims, diff = append(dims, 1), append(diff, true)
	}
	if stats {
		dims, diff = append(dims, 1), append(diff, false)
	}
	return g.withMask(ad.OpSpec{
		Name: name, Params: fmt.Sprintf("%s weight %v stats %v", g.params(), hasW, stats), InputDims: dims, OutputDims: s.Dims(), DiffWRT: diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			ok := slices.Equal(in[0], s) && slices.Equal(in[1], s)
			if hasW {
				ok = ok && slices.Equal(in[2], tensor.Shape{g.c})
			}
			if stats {
				ok = ok && slices.Equal(in[len(in)-1], statsShapeBN(g))
			}
			if !ok {
				return nil, fmt.Errorf("nn: %s: inputs %v, want %v, %v, (%d) for a weight and %v for the statistics", name, in, s, s, g.c, statsShapeBN(g))
			}
			return s.Clone(), nil
		},
		Kernel:           ad.Floats(batchNormGradXKernel[float32](g, hasW, stats, t), batchNormGradXKernel[float64](g, hasW, stats, t)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, v *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			in, mask := g.maskOf(in)
			x, u := in[0], in[1]
			var w *gorgonia.Node
			wIn := in[2:2] // w, when hasW
			if hasW {
				w, wIn = in[2], in[2:3]
			}
			grads := make(gorgonia.Nodes, len(in))
			b := ad.NewBuilder(x)
			if want[0] {
				// GradXT(x, u) = J·u: Σ v·J·u = Σ u·Jᵀ·v = Σ u·GradX(x, v).
				uu, vv := u, v
				if t {
					uu, vv = v, u
				}
				grads[0] = b.Do(func() (*gorgonia.Node, error) { return batchNormGradXX(g, x, uu, w, vv, mask) })
			}
			if want[1] {
				grads[1] = b.Apply(batchNormGradXSpec(g, hasW, false, !t), g.args(mask, append(gorgonia.Nodes{x, v}, wIn...)...)...)
			}
			if hasW && want[2] {
				grads[2] = b.Apply(channelDotSpec(s, g.chans()), v, b.Apply(batchNormGradXSpec(g, false, false, t), g.args(mask, x, u)...))
			}
			return g.grads(b.Nodes(grads...))
		},
	})
}

// batchNormGradXX is the gradient w.r.t. x of Σ V·BatchNormGradX(x, u, w)
// (w nil for none) with u and V held fixed: ad.VJP, for upstream V, of the
// composed graph's gradient w.r.t. x of Σ u·BatchNorm(x, w)
// (batchNormComposed, itself ad.VJP's), every order right by the composed
// ops' own derivatives. Both VJPs are taken w.r.t. x3, a fresh copy of x
// (batchNormFreshSpec): u and V may depend on x (a gradient of a loss of
// BatchNorm's output does), never on x3, so their paths are left out, as
// GradX's own gradient w.r.t. u accounts for them.
func batchNormGradXX(g bnGeom, x, u, w, v, mask *gorgonia.Node) (*gorgonia.Node, error) {
	x3, err := ad.Apply(batchNormFreshSpec(g), x)
	if err != nil {
		return nil, err
	}
	u3, err := ad.Reshape(u, g.n, g.c, g.l)
	if err != nil {
		return nil, err
	}
	v3, err := ad.Reshape(v, g.n, g.c, g.l)
	if err != nil {
		return nil, err
	}
	var y3 *gorgonia.Node
	if g.masked {
		y3, err = batchNormMasked(x3, w, nil, mask, g, nil)
	} else {
		y3, err = batchNormComposed(x3, w, nil, g, nil)
	}
	if err != nil {
		return nil, err
	}
	first, err := ad.VJP(y3, u3, x3)
	if err != nil {
		return nil, err
	}
	second, err := ad.VJP(first[0], v3, x3)
	if err != nil {
		return nil, err
	}
	return ad.Reshape(second[0], g.s...)
}

// freshCopies numbers batchNormFreshSpec's ops.
var freshCopies atomic.Uint64

// batchNormFreshSpec is x reshaped to [N, C, L], copied (ad.ReshapeSpec),
// as an op that no other node can be (its Params a new number each time:
// Gorgonia merges nodes of equal op and inputs); its gradient is the
// upstream's, reshaped.
func batchNormFreshSpec(g bnGeom) ad.OpSpec {
	spec := ad.ReshapeSpec(g.s, tensor.Shape{g.n, g.c, g.l})
	spec.Name = "BatchNormFresh"
	spec.Params = fmt.Sprintf("%s copy %d", g.params(), freshCopies.Add(1))
	spec.Backward = func(_ gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
		dx, err := ad.Reshape(u, g.s...)
		return gorgonia.Nodes{dx}, err
	}
	return spec
}

// batchNormGradXKernel is cpu.BatchNormGradX (cpu.BatchNormGradXT with
// t), or with stats cpu.BatchNormGradXStats (inputs x, u, then w with
// hasW, then the statistics, then the mask if g is masked).
func batchNormGradXKernel[T ad.Float](g bnGeom, hasW, stats, t bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		kg, in, err := split(g, in)
		if err != nil {
			return err
		}
		var w []T
		if hasW {
			w = in[2].Data
		}
		switch {
		case stats:
			cpu.BatchNormGradXStats(kg, out.Data, in[0].Data, in[1].Data, w, in[len(in)-1].Data)
		case t:
			cpu.BatchNormGradXT(kg, out.Data, in[0].Data, in[1].Data, w)
		default:
			cpu.BatchNormGradX(kg, out.Data, in[0].Data, in[1].Data, w)
		}
		return nil
	}
}

// batchNormGradWSpec is BatchNormGradW(u, x) on g, with stats a third
// input BatchNormStats(u, x) declared without a gradient, as
// batchNormGradXSpec's.
func batchNormGradWSpec(g bnGeom, stats bool) ad.OpSpec {
	s := g.s.Clone()
	dims, diff := []int{s.Dims(), s.Dims()}, []bool{true, true}
	kernel := ad.Floats(batchNormGradWKernel[float32](g), batchNormGradWKernel[float64](g))
	if stats {
		dims, diff = append(dims, 1), append(diff, false)
		kernel = ad.Floats(batchStatsSumKernel[float32](g, 1), batchStatsSumKernel[float64](g, 1))
	}
	return g.withMask(ad.OpSpec{
		Name: "BatchNormGradW", Params: fmt.Sprintf("%s stats %v", g.params(), stats), InputDims: dims, OutputDims: 1, DiffWRT: diff,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], s) || stats && !slices.Equal(in[2], statsShapeBN(g)) {
				return nil, fmt.Errorf("nn: BatchNormGradW: inputs %v, want %v, %v and %v for the statistics", in, s, s, statsShapeBN(g))
			}
			return tensor.Shape{g.c}, nil
		},
		Kernel:           kernel,
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			in, mask := g.maskOf(in)
			u, x := in[0], in[1]
			b := ad.NewBuilder(x)
			du := b.Apply(channelAffineSpec(s, g.chans(), true, false), b.Apply(batchNormTrainSpec(g, nil, false, false), g.args(mask, x)...), v)
			dx := b.Apply(batchNormGradXSpec(g, true, false, false), g.args(mask, x, u, v)...)
			if stats {
				return g.grads(b.Nodes(du, dx, nil))
			}
			return g.grads(b.Nodes(du, dx))
		},
	})
}

// batchNormGradBSpec is BatchNormGradB(u, stats) = ChannelTotal(u), read
// from the statistics BatchNormStats(u, x) (declared without a gradient).
func batchNormGradBSpec(g bnGeom) ad.OpSpec {
	s := g.s.Clone()
	return ad.OpSpec{
		Name: "BatchNormGradB", Params: g.params(), InputDims: []int{s.Dims(), 1}, OutputDims: 1, DiffWRT: []bool{true, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], statsShapeBN(g)) {
				return nil, fmt.Errorf("nn: BatchNormGradB: inputs %v and %v, want %v and the statistics %v", in[0], in[1], s, statsShapeBN(g))
			}
			return tensor.Shape{g.c}, nil
		},
		Kernel:           ad.Floats(batchStatsSumKernel[float32](g, 0), batchStatsSumKernel[float64](g, 0)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			_, spread := channelTotalSpecs(s, g.chans())
			du, err := ad.Apply(spread, v)
			return gorgonia.Nodes{du, nil}, err
		},
	}
}

// batchNormStatsSpec is BatchNormStats(u, x): each channel's μ, r, Σu and
// Σu·x̂ as float64 slots (cpu.BatchGradStats); with eval,
// BatchNormEvalStats(u, x): 0, 0, Σu and Σu·x (cpu.BatchEvalStats). Not
// differentiable: only the gradient ops read it, as a shortcut to numbers
// that are functions of their other inputs.
func batchNormStatsSpec(g bnGeom, eval bool) ad.OpSpec {
	s := g.s.Clone()
	name, kernel := "BatchNormStats", ad.Floats(batchNormStatsKernel[float32](g, false), batchNormStatsKernel[float64](g, false))
	if eval {
		name, kernel = "BatchNormEvalStats", ad.Floats(batchNormStatsKernel[float32](g, true), batchNormStatsKernel[float64](g, true))
	}
	return g.withMask(ad.OpSpec{
		Name: name, Params: g.params(), InputDims: []int{s.Dims(), s.Dims()}, OutputDims: 1, DiffWRT: []bool{false, false},
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], s) {
				return nil, fmt.Errorf("nn: %s: inputs %v and %v, want %v", name, in[0], in[1], s)
			}
			return statsShapeBN(g), nil
		},
		Kernel:           kernel,
		KernelOverwrites: true,
	})
}

// batchNormEvalSpec is eval BatchNorm's ChannelAffine(x, a, c) (both
// parameters) whose first-order gradients w.r.t. a and c, ChannelDot(u, x)
// and ChannelTotal(u), are read off one BatchNormEvalStats(u, x) pass
// (BatchNormEvalGradA and BatchNormGradB), where ChannelAffine's read u
// twice; its gradient w.r.t. x is ChannelAffine's, and the gradient ops'
// own gradients are ChannelDot's and ChannelTotal's.
func batchNormEvalSpec(g bnGeom) ad.OpSpec {
	s, cg := g.s.Clone(), g.chans()
	spec := channelAffineSpec(s, cg, true, true)
	spec.Name, spec.Backward = "BatchNormEval", nil
	spec.BackwardFor = func(in gorgonia.Nodes, _, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
		x := in[0]
		grads := make(gorgonia.Nodes, len(in))
		b := ad.NewBuilder(x)
		if want[0] {
			grads[0] = b.Apply(channelAffineSpec(s, cg, true, false), u, in[1])
		}
		if want[1] || want[2] {
			stats := b.Apply(batchNormStatsSpec(g, true), u, x)
			if want[1] {
				grads[1] = b.Apply(batchNormEvalGradASpec(g), u, x, stats)
			}
			if want[2] {
				grads[2] = b.Apply(batchNormGradBSpec(g), u, stats)
			}
		}
		return b.Nodes(grads...)
	}
	return spec
}

// batchNormEvalGradASpec is ChannelDot(u, x) read off the statistics
// BatchNormEvalStats(u, x) (declared without a gradient): BatchNormGradW's
// kernel and shape rule, ChannelDot's gradients.
func batchNormEvalGradASpec(g bnGeom) ad.OpSpec {
	s, cg := g.s.Clone(), g.chans()
	spec := batchNormGradWSpec(g, true)
	spec.Name = "BatchNormEvalGradA"
	spec.Backward = func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
		scaleBy := channelAffineSpec(s, cg, true, false)
		b := ad.NewBuilder(in[0])
		return b.Nodes(b.Apply(scaleBy, in[1], v), b.Apply(scaleBy, in[0], v), nil)
	}
	return spec
}

// statsShapeBN is BatchNormStats's shape.
func statsShapeBN(g bnGeom) tensor.Shape { return tensor.Shape{cpu.BatchGradStatsSize(g.kern())} }

// batchNormStatsKernel is cpu.BatchGradStats, or with eval
// cpu.BatchEvalStats (inputs u, x).
func batchNormStatsKernel[T ad.Float](g bnGeom, eval bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		kg, in, err := split(g, in)
		if err != nil {
			return err
		}
		if eval {
			cpu.BatchEvalStats(kg, out.Data, in[0].Data, in[1].Data)
			return nil
		}
		cpu.BatchGradStats(kg, out.Data, in[0].Data, in[1].Data)
		return nil
	}
}

// batchStatsSumKernel is cpu.BatchStatsSum of the last input (the
// statistics): Σu (which 0) or Σu·x̂ (which 1).
func batchStatsSumKernel[T ad.Float](g bnGeom, which int) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		kg, in, err := split(g, in)
		if err != nil {
			return err
		}
		cpu.BatchStatsSum(kg, which, out.Data, in[len(in)-1].Data)
		return nil
	}
}

// batchNormGradWKernel is cpu.BatchNormGradW (inputs u, x).
func batchNormGradWKernel[T ad.Float](g bnGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		kg, in, err := split(g, in)
		if err != nil {
			return err
		}
		cpu.BatchNormGradW(kg, out.Data, in[0].Data, in[1].Data)
		return nil
	}
}
