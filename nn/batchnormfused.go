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
//
// BatchNormTrain's gradients for upstream u are GradX(x, u, w),
// GradW(u, x) and ChannelTotal(u) (torch's batch_norm_backward); each op
// recomputes the channel's statistics while its planes are in cache. For
// upstream V:
//
//	GradW: ∂u = ChannelAffine(BatchNormTrain(x), V), ∂x = GradX(x, u, V)
//	GradX: ∂u = GradX(x, V, w) (linear in u, symmetric),
//	       ∂w = ChannelDot(V, GradX(x, u)),
//	       ∂x = ad.VJP of the composed graph's own gradient w.r.t. x
//
// the last, the only one outside the family, slow but right at every order
// (batchNormGradXX). So first-order passes run the fused kernels and every
// order is available.

// bnGeom is BatchNorm's input shape s seen as [n, c, l], normalised with
// eps.
type bnGeom struct {
	s       tensor.Shape
	n, c, l int
	eps     float64
}

func (g bnGeom) params() string { return fmt.Sprintf("%v eps %v", g.s, g.eps) }

// kern is g as the kernels' geometry.
func (g bnGeom) kern() cpu.BatchGeom { return cpu.BatchGeom{N: g.n, C: g.c, L: g.l, Eps: g.eps} }

// chans is g as normaffine.go's channels.
func (g bnGeom) chans() chanGeom { return chanGeom{g.n, g.c, g.l} }

// batchNormTrain is BatchNormTrain(x, weight, bias), weight or bias nil
// for none, updating stats once per run.
func batchNormTrain(x, weight, bias *gorgonia.Node, g bnGeom, stats *runningStats) (*gorgonia.Node, error) {
	in := gorgonia.Nodes{x}
	for _, p := range []*gorgonia.Node{weight, bias} {
		if p != nil {
			in = append(in, p)
		}
	}
	return ad.Apply(batchNormTrainSpec(g, stats, weight != nil, bias != nil), in...)
}

// batchNormTrainSpec is BatchNormTrain on g: inputs x, then w [C] if hasW,
// then b [C] if hasB; with stats (nil for none) its kernel updates the
// running statistics.
func batchNormTrainSpec(g bnGeom, stats *runningStats, hasW, hasB bool) ad.OpSpec {
	return ad.OpSpec{
		Name: "BatchNormTrain", Params: fmt.Sprintf("%s weight %v bias %v stats %p", g.params(), hasW, hasB, stats),
		InputDims: affineDims(g.s, hasW, hasB), OutputDims: g.s.Dims(), Shape: affineShape("BatchNorm", g.s, g.c),
		Kernel:           ad.Floats(batchNormTrainKernel[float32](g, stats, hasW, hasB), batchNormTrainKernel[float64](g, stats, hasW, hasB)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, u *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			x := in[0]
			grads := make(gorgonia.Nodes, len(in))
			bi := len(in) - 1 // the bias's input, when hasB
			var err error
			if want[0] {
				if grads[0], err = ad.Apply(batchNormGradXSpec(g, hasW), append(gorgonia.Nodes{x, u}, in[1:len(in)-b2i(hasB)]...)...); err != nil {
					return nil, err
				}
			}
			if hasW && want[1] {
				if grads[1], err = ad.Apply(batchNormGradWSpec(g), u, x); err != nil {
					return nil, err
				}
			}
			if hasB && want[bi] {
				total, _ := channelTotalSpecs(g.s, g.chans())
				if grads[bi], err = ad.Apply(total, u); err != nil {
					return nil, err
				}
			}
			return grads, nil
		},
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// batchNormTrainKernel is cpu.BatchNormTrain, updating stats (when it
// holds a running statistic) from the batch's.
func batchNormTrainKernel[T ad.Float](g bnGeom, stats *runningStats, hasW, hasB bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		w, b := affineParams(g.c, in, hasW, hasB)
		var update func(ci int, mean, unbiased float64)
		if stats != nil && (stats.mean != nil || stats.variance != nil) {
			update = stats.update
		}
		cpu.BatchNormTrain(g.kern(), out.Data, in[0].Data, w, b, update)
		return nil
	}
}

// batchNormGradXSpec is BatchNormGradX on g: inputs x, u, then w [C] if
// hasW.
func batchNormGradXSpec(g bnGeom, hasW bool) ad.OpSpec {
	s := g.s.Clone()
	dims := []int{s.Dims(), s.Dims()}
	if hasW {
		dims = append(dims, 1)
	}
	return ad.OpSpec{
		Name: "BatchNormGradX", Params: fmt.Sprintf("%s weight %v", g.params(), hasW), InputDims: dims, OutputDims: s.Dims(),
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], s) || hasW && !slices.Equal(in[2], tensor.Shape{g.c}) {
				return nil, fmt.Errorf("nn: BatchNormGradX: inputs %v, want %v, %v and (%d) for a weight", in, s, s, g.c)
			}
			return s.Clone(), nil
		},
		Kernel:           ad.Floats(batchNormGradXKernel[float32](g, hasW), batchNormGradXKernel[float64](g, hasW)),
		KernelOverwrites: true,
		BackwardFor: func(in gorgonia.Nodes, _, v *gorgonia.Node, want []bool) (gorgonia.Nodes, error) {
			x, u := in[0], in[1]
			grads := make(gorgonia.Nodes, len(in))
			var err error
			if want[0] {
				var w *gorgonia.Node
				if hasW {
					w = in[2]
				}
				if grads[0], err = batchNormGradXX(g, x, u, w, v); err != nil {
					return nil, err
				}
			}
			if want[1] {
				if grads[1], err = ad.Apply(batchNormGradXSpec(g, hasW), append(gorgonia.Nodes{x, v}, in[2:]...)...); err != nil {
					return nil, err
				}
			}
			if hasW && want[2] {
				b := ad.NewBuilder(x)
				grads[2] = b.Apply(channelDotSpec(s, g.chans()), v, b.Apply(batchNormGradXSpec(g, false), x, u))
				if err := b.Err(); err != nil {
					return nil, err
				}
			}
			return grads, nil
		},
	}
}

// batchNormGradXX is the gradient w.r.t. x of Σ V·BatchNormGradX(x, u, w)
// (w nil for none) with u and V held fixed: ad.VJP, for upstream V, of the
// composed graph's gradient w.r.t. x of Σ u·BatchNorm(x, w)
// (batchNormComposed, itself ad.VJP's), every order right by the composed
// ops' own derivatives. Both VJPs are taken w.r.t. x3, a fresh copy of x
// (batchNormFreshSpec): u and V may depend on x (a gradient of a loss of
// BatchNorm's output does), never on x3, so their paths are left out, as
// GradX's own gradient w.r.t. u accounts for them.
func batchNormGradXX(g bnGeom, x, u, w, v *gorgonia.Node) (*gorgonia.Node, error) {
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
	y3, err := batchNormComposed(x3, w, nil, g, nil)
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

// batchNormFreshSpec is x reshaped to [N, C, L], copied, as an op that no
// other node can be (its Params a new number each time: Gorgonia merges
// nodes of equal op and inputs); its gradient is the upstream's, reshaped.
func batchNormFreshSpec(g bnGeom) ad.OpSpec {
	s3 := tensor.Shape{g.n, g.c, g.l}
	return ad.OpSpec{
		Name: "BatchNormFresh", Params: fmt.Sprintf("%s copy %d", g.params(), freshCopies.Add(1)), InputDims: []int{g.s.Dims()}, OutputDims: 3,
		Shape:            ad.FixedShape("nn: BatchNormFresh", g.s, s3),
		Kernel:           ad.Floats(copyKernel[float32], copyKernel[float64]),
		KernelOverwrites: true,
		Backward: func(_ gorgonia.Nodes, _, u *gorgonia.Node) (gorgonia.Nodes, error) {
			dx, err := ad.Reshape(u, g.s...)
			return gorgonia.Nodes{dx}, err
		},
	}
}

// copyKernel copies its input.
func copyKernel[T ad.Float](out ad.Tensor[T], in []ad.Tensor[T]) error {
	copy(out.Data, in[0].Data)
	return nil
}

// batchNormGradXKernel is cpu.BatchNormGradX (inputs x, u and, with
// hasW, w).
func batchNormGradXKernel[T ad.Float](g bnGeom, hasW bool) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		var w []T
		if hasW {
			w = in[2].Data
		}
		cpu.BatchNormGradX(g.kern(), out.Data, in[0].Data, in[1].Data, w)
		return nil
	}
}

// batchNormGradWSpec is BatchNormGradW(u, x) on g.
func batchNormGradWSpec(g bnGeom) ad.OpSpec {
	s := g.s.Clone()
	return ad.OpSpec{
		Name: "BatchNormGradW", Params: g.params(), InputDims: []int{s.Dims(), s.Dims()}, OutputDims: 1,
		Shape: func(in []tensor.Shape) (tensor.Shape, error) {
			if !slices.Equal(in[0], s) || !slices.Equal(in[1], s) {
				return nil, fmt.Errorf("nn: BatchNormGradW: inputs %v and %v, want %v", in[0], in[1], s)
			}
			return tensor.Shape{g.c}, nil
		},
		Kernel:           ad.Floats(batchNormGradWKernel[float32](g), batchNormGradWKernel[float64](g)),
		KernelOverwrites: true,
		Backward: func(in gorgonia.Nodes, _, v *gorgonia.Node) (gorgonia.Nodes, error) {
			u, x := in[0], in[1]
			b := ad.NewBuilder(x)
			du := b.Apply(channelAffineSpec(s, g.chans(), true, false), b.Apply(batchNormTrainSpec(g, nil, false, false), x), v)
			dx := b.Apply(batchNormGradXSpec(g, true), x, u, v)
			return b.Nodes(du, dx)
		},
	}
}

// batchNormGradWKernel is cpu.BatchNormGradW (inputs u, x).
func batchNormGradWKernel[T ad.Float](g bnGeom) func(ad.Tensor[T], []ad.Tensor[T]) error {
	return func(out ad.Tensor[T], in []ad.Tensor[T]) error {
		cpu.BatchNormGradW(g.kern(), out.Data, in[0].Data, in[1].Data)
		return nil
	}
}
